"""A result a running job's store host would refuse is refused while it is fetched, the bytes
counted chunk by chunk, with chunks sized by how large the rows turn out to be: a result of
large rows never arrives in Python ten thousand rows (gigabytes) at a time."""

from __future__ import annotations

import json
import tracemalloc

import duckdb
import pytest

from contam.harness.store.wire import ResultTooLarge, encode_result

ROW_BYTES = 100_000


def test_a_result_of_large_rows_is_refused_at_the_byte_cap_without_holding_it(capsys):
    cursor = duckdb.connect().execute(f"SELECT range, repeat('x', {ROW_BYTES}) FROM range(3000)")
    tracemalloc.start()
    with pytest.raises(ResultTooLarge, match="larger than a running job serves"):
        encode_result(cursor, max_rows=2_000_000, max_bytes=4 << 20)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    # 3,000 rows are 300 MB; held a fetch of 10,000 rows at a time they would all be in memory
    assert peak < 32 << 20, f"{peak >> 20} MiB"


def test_a_result_under_the_caps_comes_whole_whatever_its_row_sizes():
    query = ("SELECT range AS n, repeat('y', CASE WHEN range % 100 = 0 THEN 50000 ELSE 3 END) AS s "
             "FROM range(20000)")
    expected = duckdb.connect().execute(query).fetchall()
    encoded = json.loads(encode_result(duckdb.connect().execute(query), max_rows=20_000,
                                       max_bytes=64 << 20))
    assert encoded["columns"] == ["n", "s"]
    assert [tuple(row) for row in encoded["rows"]] == expected
    with pytest.raises(ResultTooLarge):
        encode_result(duckdb.connect().execute(query), max_rows=19_999)
