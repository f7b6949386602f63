"""`contam init DIR --items FILE`: a study.toml read from the file's columns (the `[items] map`
guessed from the names, a template over its columns, numeric and date columns offered commented
as `exposure` and `released`) that loads, passes its schema and imports the file; `--metrics`
with `exact` gets a system prompt asking for the answer alone; the `#:schema` line and the local
model's table, commented, in every study.toml init writes."""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from pathlib import Path

import duckdb
import jsonschema
import pytest

from contam.harness.cli import build_parser
from contam.harness.config import DEFAULT_SYSTEM_PROMPT, load_config
from contam.harness.config_reference import SCHEMA_FILE
from contam.harness.jobs.init_plan import ANSWER_ALONE_PROMPT, guess_map

OWN = Path(__file__).resolve().parents[1] / "examples" / "own-items"
CSV = """\
id,continent,country,prompt,answer,tier,population_log10,un_member_since
c1,Europe,France,What is the capital of France?,Paris,popular,7.8,1945-10-24
c2,Africa,Eswatini,What is the capital of Eswatini?,Mbabane,obscure,6.1,1968-09-24
"""


def init_with(contam, tmp_path: Path, items: Path, *more: str) -> tuple[Path, str]:
    folder = tmp_path / "study"
    status, out, err = contam("init", folder, "--items", items, *more)
    assert status == 0, err
    return folder / "study.toml", (folder / "study.toml").read_text(encoding="utf-8")


@pytest.fixture
def countries(tmp_path: Path) -> Path:
    path = tmp_path / "countries.csv"
    path.write_text(CSV, encoding="utf-8")
    return path


def test_the_map_is_guessed_from_the_files_names(countries, tmp_path, contam) -> None:
    path, text = init_with(contam, tmp_path, countries)
    config = load_config(path)
    assert config.items == countries
    assert config.items_map == {"item_id": "id", "subset": "tier", "question": "prompt",
                                "reference": "answer"}
    assert "items.csv" not in {p.name for p in path.parent.iterdir()}


def test_the_template_names_the_files_own_columns(countries, tmp_path, contam) -> None:
    path, _ = init_with(contam, tmp_path, countries)
    assert load_config(path).study.user_template == (
        "Continent: {continent}\nCountry: {country}\nQuestion: {question}")


def test_numeric_and_date_columns_are_offered_commented(countries, tmp_path, contam) -> None:
    path, text = init_with(contam, tmp_path, countries)
    assert re.search(r'^# exposure = "population_log10" +# ', text, re.MULTILINE)
    assert re.search(r'^# released = "un_member_since" +# ', text, re.MULTILINE)
    assert re.search(r'^# subsets = \["obscure", "popular"\] +# .*order them', text, re.MULTILINE)
    study = load_config(path).study
    assert (study.exposure, study.released, study.subsets) == (None, None, ())


def test_the_study_imports_the_file_as_its_readme_says(countries, tmp_path, contam) -> None:
    path, _ = init_with(contam, tmp_path, countries)
    readme = (path.parent / "README.md").read_text(encoding="utf-8")
    line = re.search(r"```bash\n(contam import items .*)", readme).group(1).split("#")[0]
    args = build_parser().parse_args(shlex.split(line)[1:])
    status, out, err = contam("import", "items", path.parent / args.file, "--map", args.column_map,
                              "--store", tmp_path / "s.duckdb")
    assert status == 0 and "2 items read, 2 added" in out, err
    with duckdb.connect(str(tmp_path / "s.duckdb"), read_only=True) as con:
        assert con.execute("SELECT item_id, subset, reference FROM items ORDER BY 1").fetchall() \
            == [("c1", "popular", "Paris"), ("c2", "obscure", "Mbabane")]


@pytest.mark.parametrize("name", ["items.jsonl", "items.parquet"])
def test_jsonl_and_parquet_files_are_read_the_same_way(name, tmp_path, contam) -> None:
    path, text = init_with(contam, tmp_path, OWN / name)
    config = load_config(path)
    assert config.items_map == {"item_id": "id", "subset": "tier", "question": "prompt",
                                "reference": "answer"}
    assert config.study.user_template == "Library: {library}\nQuestion: {question}"
    assert re.search(r'^# exposure = "pages" ', text, re.MULTILINE)


def test_a_column_no_name_gives_is_named_in_a_comment(tmp_path, contam) -> None:
    bare = tmp_path / "bare.csv"
    bare.write_text("id,country,capital\nc1,France,Paris\n", encoding="utf-8")
    _, text = init_with(contam, tmp_path, bare)
    assert "# no column of your file was taken for question, reference: add" in text
    assert "(your columns: id, country, capital)" in text


def test_an_unreadable_items_file_is_one_line_and_writes_nothing(tmp_path, contam) -> None:
    status, out, err = contam("init", tmp_path / "s", "--items", tmp_path / "items.xlsx")
    assert status == 2 and err.count("\n") == 1 and "no such file" in err
    (tmp_path / "items.xlsx").write_text("x", encoding="utf-8")
    status, out, err = contam("init", tmp_path / "s", "--items", tmp_path / "items.xlsx")
    assert status == 2 and err.count("\n") == 1 and "not a CSV, JSONL or Parquet file" in err
    assert not (tmp_path / "s").exists()


def test_exact_among_the_metrics_asks_for_the_answer_alone(countries, tmp_path, contam) -> None:
    path, text = init_with(contam, tmp_path, countries, "--metrics", "exact,contains")
    config = load_config(path)
    assert config.study.metrics == ("exact", "contains")
    assert config.system_prompt == ANSWER_ALONE_PROMPT
    assert "Reply with the answer alone: no sentence." in ANSWER_ALONE_PROMPT
    status, _, err = contam("init", tmp_path / "bleu", "--metrics", "contains,bleu2")
    assert load_config(tmp_path / "bleu" / "study.toml").system_prompt == DEFAULT_SYSTEM_PROMPT


def test_an_unknown_metric_is_one_line_with_a_suggestion(tmp_path, contam) -> None:
    status, out, err = contam("init", tmp_path / "s", "--metrics", "exact,contain")
    assert status == 2 and "'contain' is not one of" in err and "did you mean 'contains'" in err
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("items", [None, "countries"])
def test_the_schema_line_points_at_the_schema_written_beside_it(items, countries, tmp_path,
                                                                 contam) -> None:
    args = ("--items", countries) if items else ()
    status, _, err = contam("init", tmp_path / "s", *args)
    text = (tmp_path / "s" / "study.toml").read_text(encoding="utf-8")
    assert text.splitlines()[0] == "#:schema ./study.schema.json"
    schema = json.loads((tmp_path / "s" / "study.schema.json").read_text(encoding="utf-8"))
    assert schema == json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    jsonschema.validate(tomllib.loads(text), schema)


def test_the_local_model_table_is_there_commented_and_runs_uncommented(tmp_path, contam) -> None:
    contam("init", tmp_path / "s")
    path = tmp_path / "s" / "study.toml"
    text = path.read_text(encoding="utf-8")
    block = text[text.index("# [[models]]"):]
    path.write_text(text.replace(block, re.sub(r"^# ", "", block, flags=re.MULTILINE)),
                    encoding="utf-8")
    local = load_config(path).models[-1]
    assert (local.provider, local.api_key_env, local.concurrency) == ("local", None, 6)
    assert local.params == {"max_new_tokens": 48} and local.model.endswith(".gguf")


def test_the_map_guess_keeps_contams_own_names_and_takes_each_column_once() -> None:
    assert guess_map(["item_id", "question", "reference"]) == {}
    assert guess_map(["ID", "Query", "Gold", "Level"]) == {
        "item_id": "ID", "question": "Query", "reference": "Gold", "subset": "Level"}


def test_the_prompt_init_writes_for_exact_draws_no_mismatch_warning() -> None:
    from contam.metrics.outcome import parse_outcome, prompt_mismatch

    assert prompt_mismatch(parse_outcome("exact"), (ANSWER_ALONE_PROMPT, None)) is None
    assert prompt_mismatch(parse_outcome("exact"), (DEFAULT_SYSTEM_PROMPT, None))  # the paper's
