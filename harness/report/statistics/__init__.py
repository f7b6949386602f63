"""The report's statistics: the named tests, the sign-flip test, the logistic model, Holm's correction."""
