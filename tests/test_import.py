"""Importers: round trips, strict refusals with line numbers, idempotence, newer rows win."""

from __future__ import annotations

import csv
import json

import pytest

from contam.harness.errors import InputError
from contam.harness.jobs.importing import import_file
from contam.harness.store.records import MAX_LINE_BYTES, file_sha256
from contam.harness.store import Store

ITEMS = [
    {"item_id": "red-01", "title": "Pokémon Red", "subset": "official",
     "question": "Which badge does Brock award?", "reference": "Boulder Badge", "source": "guide"},
    {"item_id": "brown-01", "title": "Pokémon Brown", "subset": "fan",
     "question": "Which named tunnel, from eastern Mt. Boulder?", "reference": "Rijon Tunnel",
     "source": "playthrough, notes"},
]
ANSWERS = [
    {"item_id": "red-01", "model": "m1", "answer": "Answer: the Boulder Badge"},
    {"item_id": "brown-01", "model": "m1", "answer": ""},
]
LABELS = [
    {"item_id": "red-01", "model": "m1", "rater": "human", "label": "Right"},
    {"item_id": "brown-01", "model": "m1", "rater": "human", "label": "Partially right"},
    {"item_id": "brown-01", "model": "m1", "rater": "judge:sonnet", "label": "WRONG"},
]
TABLES = ("items", "answers", "labels", "scores", "runs", "attempts")


def write_csv(path, rows, bom=False):
    with open(path, "w", newline="", encoding="utf-8-sig" if bom else "utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def counts(store):
    return {t: store.count(t) for t in TABLES}


@pytest.fixture
def loaded(store, tmp_path):
    import_file(store, "items", write_csv(tmp_path / "items.csv", ITEMS))
    return store


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_round_trip_of_every_kind(store, tmp_path, fmt):
    write = write_csv if fmt == "csv" else write_jsonl
    for kind, rows in (("items", ITEMS), ("answers", ANSWERS), ("labels", LABELS)):
        result = import_file(store, kind, write(tmp_path / f"{kind}.{fmt}", rows))
        assert (result.read, result.added) == (len(rows), len(rows))
    cells = store.query_dicts("SELECT * FROM cells ORDER BY item_id")
    assert [c["item_id"] for c in cells] == ["brown-01", "red-01"]
    red = cells[1]
    assert red["title"] == "Pokémon Red" and red["reference"] == "Boulder Badge"
    assert red["answer_raw"] == "Answer: the Boulder Badge" and red["answer"] == "the Boulder Badge"
    assert red["human_label"] == "right" and cells[0]["human_label"] == "partial"
    assert cells[0]["judge_label"] == "wrong"
    assert cells[0]["answer"] == "" and cells[0]["answer_words"] == 0  # blank is data, not error


def test_bom_is_accepted(store, tmp_path):
    import_file(store, "items", write_csv(tmp_path / "items.csv", ITEMS, bom=True))
    assert store.item_ids() == {"red-01", "brown-01"}


def test_extra_columns_are_kept_by_name_never_shifted(loaded):
    extra = loaded.query("SELECT extra FROM items WHERE item_id = 'brown-01'")[0][0]
    assert json.loads(extra) == {"source": "playthrough, notes"}
    row = loaded.query_dicts("SELECT * FROM latest_items WHERE item_id = 'brown-01'")[0]
    assert row["reference"] == "Rijon Tunnel" and row["subset"] == "fan"


def refused(store, kind, path):
    before = counts(store)
    with pytest.raises(InputError) as info:
        import_file(store, kind, path)
    assert counts(store) == before, "a refused file must write nothing"
    return info.value


def test_unquoted_comma_shifts_are_refused_with_the_line(loaded, tmp_path):
    # Line 2 is a valid multi-line quoted record (lines 2-3), so the bad record starts on line 4.
    path = tmp_path / "answers.csv"
    path.write_text('item_id,model,answer\nred-01,m1,"two\nlines"\nbrown-01,m1,Silk, Tunnel\n')
    error = refused(loaded, "answers", path)
    assert (error.line, str(error)) == (4, f"{path}:4: 4 fields but the header has 3 "
                                           "(an unquoted comma or quote?)")


def test_duplicate_key_is_refused(loaded, tmp_path):
    rows = [*LABELS, {"item_id": "red-01", "model": "m1", "rater": "human", "label": "Wrong"}]
    error = refused(loaded, "labels", write_csv(tmp_path / "labels.csv", rows))
    assert error.line == 5 and "duplicate" in str(error) and "first on line 2" in str(error)


def test_missing_required_column_is_refused(loaded, tmp_path):
    rows = [{"item_id": "red-01", "model": "m1"}]
    error = refused(loaded, "answers", write_csv(tmp_path / "answers.csv", rows))
    assert error.line == 1 and "'answer'" in str(error)


def test_missing_key_in_a_jsonl_line_is_refused(loaded, tmp_path):
    rows = [ANSWERS[0], {"item_id": "brown-01", "answer": "x"}]
    error = refused(loaded, "answers", write_jsonl(tmp_path / "answers.jsonl", rows))
    assert error.line == 2 and "'model'" in str(error)


def test_invalid_utf8_is_refused_with_its_line(loaded, tmp_path):
    path = tmp_path / "answers.csv"
    path.write_bytes(b"item_id,model,answer\nred-01,m1,ok\nbrown-01,m1,caf\xe9\n")
    error = refused(loaded, "answers", path)
    assert error.line == 3 and "UTF-8" in str(error)


def test_answer_for_unknown_item_is_refused(loaded, tmp_path):
    rows = [*ANSWERS, {"item_id": "prism-09", "model": "m1", "answer": "x"}]
    error = refused(loaded, "answers", write_csv(tmp_path / "answers.csv", rows))
    assert error.line == 4 and "prism-09" in str(error)


def test_unknown_label_is_refused(loaded, tmp_path):
    rows = [{"item_id": "red-01", "model": "m1", "rater": "human", "label": "maybe"}]
    error = refused(loaded, "labels", write_csv(tmp_path / "labels.csv", rows))
    assert error.line == 2 and "maybe" in str(error)


def test_invalid_json_line_is_refused(loaded, tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_text(json.dumps(LABELS[0]) + "\n{not json\n")
    assert refused(loaded, "labels", path).line == 2


@pytest.mark.parametrize("spelling,label", [("Right", "right"), ("Partially Right", "partial"),
                                            ("Partially right", "partial"), ("Wrong", "wrong"),
                                            (" wrong ", "wrong"), ("partially_right", "partial")])
def test_labels_are_case_normalised(loaded, tmp_path, spelling, label):
    rows = [{"item_id": "red-01", "model": "m1", "rater": "human", "label": spelling}]
    import_file(loaded, "labels", write_csv(tmp_path / "labels.csv", rows))
    assert loaded.query("SELECT label FROM labels")[0][0] == label


def test_reimport_adds_nothing(loaded, tmp_path):
    for kind, rows in (("items", ITEMS), ("answers", ANSWERS), ("labels", LABELS)):
        path = write_csv(tmp_path / f"{kind}.csv", rows)
        import_file(loaded, kind, path)
        before = counts(loaded)
        assert import_file(loaded, kind, path).added == 0
        assert counts(loaded) == before


def test_a_changed_label_is_a_newer_row_the_views_prefer(loaded, tmp_path):
    import_file(loaded, "answers", write_csv(tmp_path / "answers.csv", ANSWERS))
    import_file(loaded, "labels", write_csv(tmp_path / "labels.csv", LABELS))
    changed = [{**LABELS[0], "label": "Wrong"}]
    assert import_file(loaded, "labels", write_csv(tmp_path / "fix.csv", changed)).added == 1
    assert loaded.count("labels") == 4  # the old row stays: append-only
    latest = loaded.query("SELECT label FROM latest_labels WHERE item_id = 'red-01' "
                          "AND rater = 'human'")
    assert latest == [("wrong",)]
    cell = loaded.query("SELECT human_label FROM cells WHERE item_id = 'red-01'")
    assert cell == [("wrong",)]


def test_an_empty_reference_is_kept_and_flagged(store, tmp_path):
    rows = [{**ITEMS[0], "reference": ""}]
    import_file(store, "items", write_csv(tmp_path / "items.csv", rows))
    import_file(store, "answers", write_csv(tmp_path / "answers.csv", ANSWERS[:1]))
    assert store.query("SELECT reference_empty FROM cells") == [(True,)]


def test_cli_import_reports_and_refuses(contam, tmp_path, store_path):
    items = write_csv(tmp_path / "items.csv", ITEMS)
    status, out, _ = contam("import", "items", items, "--store", store_path)
    assert status == 0 and "2 items read, 2 added" in out
    bad = tmp_path / "bad.csv"
    bad.write_text("item_id,model,answer\nred-01,m1,a,b\n")
    status, out, err = contam("import", "answers", bad, "--store", store_path)
    assert status == 2 and err.strip() == f"contam import: {bad}:2: 4 fields but the header " \
                                           "has 3 (an unquoted comma or quote?)"
    assert "Traceback" not in err


def test_a_400_by_4_file_set_gives_1600_cells(contam, tmp_path, store_path):
    from scripts.filesets import write_fileset

    paths = write_fileset(tmp_path, 400, ["gpt", "claude", "gemini", "gemma"])
    for kind in ("items", "answers", "labels"):
        assert contam("import", kind, paths[kind], "--store", store_path)[0] == 0
    status, out, _ = contam("sql", "--store", store_path, "--format", "csv",
                            "select count(*) from cells")
    assert (status, out) == (0, "count_star()\n1600\n")


@pytest.mark.parametrize("raw,line", [(b"item_id,model,answer\nred-01,m1,ok\nbrown-01,m1,a\x00b\n", 3),
                                      (b"item_id,model,answer\nred-01,m1,a\x1b[31mb\n", 2),
                                      (b"item_id,model\x07,answer\nred-01,m1,a\n", 1)])
def test_nul_and_other_control_characters_are_refused_with_the_line(loaded, tmp_path, raw, line):
    path = tmp_path / "answers.csv"
    path.write_bytes(raw)
    error = refused(loaded, "answers", path)
    assert error.line == line and "control character U+00" in str(error)


def test_an_escaped_nul_in_jsonl_is_refused_too(loaded, tmp_path):
    rows = [ANSWERS[0], {"item_id": "brown-01", "model": "m1", "answer": "a\u0000b"}]
    error = refused(loaded, "answers", write_jsonl(tmp_path / "answers.jsonl", rows))
    assert error.line == 2 and "U+0000" in str(error) and "'answer'" in str(error)


def test_tab_cr_and_lf_inside_values_are_kept(loaded, tmp_path):
    rows = [{"item_id": "red-01", "model": "m1", "answer": "one\ttwo\r\nthree"}]
    import_file(loaded, "answers", write_jsonl(tmp_path / "answers.jsonl", rows))
    assert loaded.query("SELECT answer_raw FROM answers") == [("one\ttwo\r\nthree",)]


def test_jsonl_lines_end_at_newline_only(loaded, tmp_path):
    texts = ["a\u2028b", "c\u0085d", "e\u2029f"]
    rows = [{"item_id": "red-01", "model": f"m{n}", "answer": text} for n, text in enumerate(texts)]
    result = import_file(loaded, "answers", write_jsonl(tmp_path / "answers.jsonl", rows))
    assert result.read == 3
    assert loaded.query("SELECT answer_raw FROM answers ORDER BY model") == [(t,) for t in texts]


def test_a_duplicate_far_down_a_file_names_both_lines(loaded, tmp_path):
    rows = [{"item_id": "red-01", "model": f"m{n}", "answer": "x"} for n in range(30_000)]
    rows.append({"item_id": "red-01", "model": "m7", "answer": "y"})
    error = refused(loaded, "answers", write_csv(tmp_path / "answers.csv", rows))
    assert error.line == 30_002 and "first on line 9" in str(error)


# -- a line without end, a key given twice in one JSON object --------------------------

@pytest.mark.parametrize("kind", ["items", "answers", "labels"])
@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_an_endless_line_is_refused_at_its_line(loaded, tmp_path, kind, suffix):
    """/dev/zero behind a .jsonl name: without a bound on a line, the import never ended."""
    from contam.harness.store.records import MAX_LINE_BYTES

    zero = tmp_path / f"zero{suffix}"
    zero.symlink_to("/dev/zero")
    error = refused(loaded, kind, zero)
    assert str(error) == f"{zero}:1: line longer than {MAX_LINE_BYTES} bytes"


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_line_over_the_limit_is_refused_at_its_line(loaded, tmp_path, suffix):
    from contam.harness.store.records import MAX_LINE_BYTES

    rows = write_csv(tmp_path / "rows.csv", ANSWERS) if suffix == ".csv" else \
        write_jsonl(tmp_path / "rows.jsonl", ANSWERS)
    path = tmp_path / f"answers{suffix}"
    path.write_text(rows.read_text() + "x" * (MAX_LINE_BYTES + 1) + "\n", encoding="utf-8")
    error = refused(loaded, "answers", path)
    line = len(ANSWERS) + (2 if suffix == ".csv" else 1)
    assert (error.line, error.problem) == (line, f"line longer than {MAX_LINE_BYTES} bytes")


def test_a_jsonl_line_of_exactly_the_limit_is_read(loaded, tmp_path):
    from contam.harness.store.records import MAX_LINE_BYTES

    prefix, end = '{"item_id": "brown-01", "model": "m1", "answer": "', '"}'
    line = prefix + "x" * (MAX_LINE_BYTES - len(prefix) - len(end)) + end
    path = tmp_path / "answers.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    assert import_file(loaded, "answers", path).read == 1
    path.write_text(line.replace('"}', 'y"}') + "\n", encoding="utf-8")
    assert refused(loaded, "answers", path).line == 1


def test_an_endless_answers_file_is_refused_before_it_is_hashed(loaded, tmp_path, contam):
    """Answers are named after their file's digest, which read a file without a newline forever."""
    zero = tmp_path / "zero.csv"
    zero.symlink_to("/dev/zero")
    assert refused(loaded, "answers", zero).line == 1
    Store(tmp_path / "s.duckdb", create=True).close()  # `import answers` creates no store
    status, _, err = contam("import", "answers", "/dev/zero", "--store", tmp_path / "s.duckdb")
    assert status == 2 and err == "contam import: /dev/zero: unknown file type: use .csv, .jsonl or .parquet\n"


@pytest.mark.parametrize(("line", "key"), [
    ('{"item_id": "red-01", "model": "m1", "model": "m2", "answer": "x"}', "model"),
    ('{"item_id": "red-01", "model": "m1", "answer": "Answer: x", "answer": "y"}', "answer"),
    ('{"item_id": "red-01", "model": "m1", "answer": "x", "meta": {"k": 1, "k": 2}}', "k"),
    ('{"item_id": "red-01", "model": "m1", "answer": "x", "m\\u006fdel": "m2"}', "model"),
    # an escaped colon in the value kept makes up for the member dropped: the exact look sees it
    ('{"item_id": "red-01", "model": "m1", "answer": "x", "answer": "\\u003a"}', "answer"),
])
def test_a_key_twice_in_one_json_object_is_refused_naming_line_and_key(loaded, tmp_path, line, key):
    path = tmp_path / "answers.jsonl"
    path.write_text(json.dumps(ANSWERS[1]) + "\n" + line + "\n", encoding="utf-8")
    error = refused(loaded, "answers", path)
    assert (error.line, error.problem) == (2, f"key {key!r} appears twice in one object")


def test_colons_inside_strings_are_no_duplicate(loaded, tmp_path):
    rows = [{"item_id": "red-01", "model": "m:1", "answer": "Answer: 10:30, {\"a\": 1}",
             "meta": {"a:b": [{"c": ":"}]}}]
    result = import_file(loaded, "answers", write_jsonl(tmp_path / "answers.jsonl", rows))
    assert result.read == 1
    assert loaded.query("SELECT model, answer_raw FROM answers") == [("m:1", rows[0]["answer"])]


def test_hashing_refuses_a_long_line_that_straddles_two_chunks(tmp_path):
    """The digest is read in 1 MiB chunks: a long line that ends in the second chunk is refused
    there too, naming its line, not only a line that never ends."""
    path = tmp_path / "items.csv"
    path.write_bytes(b"x" * 10 + b"\n" + b"y" * (MAX_LINE_BYTES + 50) + b"\nz\n")
    with pytest.raises(InputError) as refused_line:
        file_sha256(path)
    assert refused_line.value.line == 2
    path.write_bytes(b"x" * 10 + b"\n" + b"y" * MAX_LINE_BYTES + b"\nz\n")
    assert len(file_sha256(path)) == 64
