"""The report: analysis (SQL + statistics), stats, render (md/html/tex/csv), figures."""
