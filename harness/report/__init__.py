"""The report: analysis (SQL + statistics), stats, render (md/html/tex/csv), figures.

The rater conventions are defined here, light to import, for `contam view` (which writes the
adjudicator's labels) and the report (whose inter-annotator agreement leaves them out) alike.
"""

__all__ = ["ADJUDICATOR", "HUMAN_RATER_SQL"]

ADJUDICATOR = "human:adjudicated"  # the rater an adjudicator's decisions are stored as
HUMAN_RATER_SQL = "(rater = 'human' OR rater LIKE 'human:%')"  # a human rater's labels, in SQL
