"""The report: ``analysis.build_report`` (the store -> a typed ``model.Report``), then by role
``inputs/`` (what it reads), ``statistics/``, ``parts/`` (each section's numbers), ``texts/``
(Markdown and tables), ``plots/`` (figures) and ``writers/`` (report.json, HTML, files, LaTeX, CSV).

The raters it reads are named in harness/store/raters.py; see ARCHITECTURE.md, The report.
"""
