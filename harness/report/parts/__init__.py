"""Each section's numbers, built from the inputs: labels, surface metrics, the study's sections, the probes, validation."""
