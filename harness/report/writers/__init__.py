"""The report in its formats: report.html, the files of a report folder, LaTeX tables, tidy CSV."""
