"""The sections as text and tables: report.md's order and building blocks, and each section's tables."""
