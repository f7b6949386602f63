"""One module per command: typed options in, a result object out."""
