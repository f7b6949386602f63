"""Query results as pandas DataFrames whose repetitive string columns are categoricals.

A report's cells frame holds a million rows at a million cells; a plain string column holds one
Python string per row (~60 bytes each, even where every row says "official"), a categorical one
byte or two per row. The rows are converted a chunk at a time, so the whole result never exists
as Python strings at once. A frame read once can then be queried again with SQL
(:func:`query_frame`), without working the query that made it over again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["with_categories", "joined", "query_frame", "dict_rows"]


def with_categories(frame: "pd.DataFrame", columns: Sequence[str]) -> "pd.DataFrame":
    """``frame`` with each of ``columns`` as a categorical (categories sorted, as the strings
    sort, so that grouping and sorting order the rows as before)."""
    for column in columns:
        frame[column] = frame[column].astype("category")
    return frame


def joined(chunks: Iterable["pd.DataFrame"], columns: Sequence[str]) -> "pd.DataFrame":
    """The chunks (each already :func:`with_categories`) as one frame, each categorical column's
    categories the sorted union of the chunks' (a chunk where a column is all NULL has none).
    Joined a column at a time, each chunk letting go of its piece as it goes: the frame is held
    about once, not once in chunks and again whole."""
    import pandas as pd

    parts = [{name: chunk[name].copy() for name in chunk.columns} for chunk in chunks]
    dtypes = {column: pd.CategoricalDtype(sorted(set().union(*(part[column].cat.categories
                                                               for part in parts))))
              for column in columns}
    whole = {name: _joined_column([part.pop(name) for part in parts], dtypes.get(name))
             for name in list(parts[0])}
    return pd.DataFrame(whole, copy=False)


def _joined_column(pieces: list["pd.Series"], categories: "pd.CategoricalDtype | None") -> "pd.Series":
    """One column of its ``pieces``: a numeric one copied into one array a piece at a time, each
    piece let go of once copied (held about once, not in pieces and again whole); any other
    (categorical, text, or pieces of different types) by pandas' concat."""
    import numpy as np
    import pandas as pd

    kinds = {piece.dtype for piece in pieces}
    kind = kinds.pop() if len(kinds) == 1 else None
    if categories is not None or not isinstance(kind, np.dtype) or kind.kind not in "biuf":
        return pd.concat([piece.astype(categories) if categories is not None else piece
                          for piece in pieces], ignore_index=True)
    whole, at = np.empty(sum(len(piece) for piece in pieces), kind), 0
    pieces.reverse()  # popped from the end, in order
    while pieces:
        values = pieces.pop().to_numpy()
        whole[at:at + len(values)] = values
        at += len(values)
    return pd.Series(whole, copy=False)


def query_frame(frame: "pd.DataFrame", sql: str, params: Sequence[Any] = (), name: str = "c",
                ) -> list[dict[str, Any]]:
    """The rows of ``sql`` over ``frame`` (the table ``name`` in it), as dicts, on an in-memory
    DuckDB of its own: a GROUP BY over a million rows read once weighs a few MB there, where the
    joins that made them would take hundreds again in the store's."""
    import duckdb

    with duckdb.connect() as con:
        con.register(name, frame)
        return dict_rows(con.execute(sql, list(params)))


def dict_rows(cursor: Any) -> list[dict[str, Any]]:
    """An executed query's rows as dicts keyed by its column names."""
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]
