"""The report: analysis (SQL + statistics), stats, render (md/html/tex/csv), figures.

The raters it reads are named in harness/store/raters.py; see ARCHITECTURE.md, The report.
"""
