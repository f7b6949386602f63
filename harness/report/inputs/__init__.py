"""What a report reads: the cells with their labels, which are correct, the contrast, the study's
settings, the items' study columns, a probe's rows."""
