"""The report's figures: the paper's, the study's and each probe's, in one style."""
