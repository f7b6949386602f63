"""The jobs' options, one frozen dataclass per command, each field also its command-line flag
(:mod:`contam.harness.declare`). Light on purpose: `contam.harness.cli` builds its parser from them before any
job (and its DuckDB, torch ...) is imported."""
