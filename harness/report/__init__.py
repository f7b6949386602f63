"""The report: analysis (SQL + statistics), stats, render (md/html/tex/csv), figures.

``ADJUDICATOR`` is defined here, light to import, for `contam view` (which writes its labels) and
the report (whose inter-annotator agreement leaves it out) alike.
"""

__all__ = ["ADJUDICATOR"]

ADJUDICATOR = "human:adjudicated"  # the rater an adjudicator's decisions are stored as
