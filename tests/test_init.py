"""`contam init DIR`: a study folder with a study.toml naming every study key
(each commented, the paper's defaults), an items.csv that imports cleanly, a README with the next
five commands; it refuses to overwrite anything, in one line, exit 2, writing nothing."""

from __future__ import annotations

import json
import re
import shlex
import tomllib

import duckdb

from contam.harness.cli import build_parser
from contam.harness.config import DEFAULT_SYSTEM_PROMPT, load_config
from contam.harness.prompts import USER_TEMPLATE
from contam.metrics.probes import DEFAULT_DATASET

FILES = ("study.toml", "study.schema.json", "items.csv", "README.md")
# the study's keys, by table ("" is the top level); regex and rubric are shown commented out (they
# have no default, and a rubric must be a file of your own), and so are the question template and
# min-k's text rule (left unset, the paper's prompt hash and min-k's parameters stay the paper's).
KEYS = {"": ("store", "items"), "study": ("name", "subsets", "exposure", "released"),
        "prompt": ("system",), "probes": (),
        "scoring": ("metrics", "numeric_tolerance"), "models": ("cutoff",), "judge": ()}
COMMENTED = ("regex", "rubric", "user", "text")  # unset, these two keep the paper's bytes and hash


def test_init_writes_the_four_files_with_every_key(tmp_path, contam) -> None:
    folder = tmp_path / "my-study"
    status, out, err = contam("init", folder)
    assert status == 0, err
    assert sorted(p.name for p in folder.iterdir()) == sorted(FILES)
    assert str(folder) in out and "README.md" in out
    text = (folder / "study.toml").read_text(encoding="utf-8")
    config = tomllib.loads(text)
    for table, keys in KEYS.items():
        section = config if not table else config[table]
        section = section[0] if isinstance(section, list) else section
        assert set(keys) <= set(section), (table, set(keys) - set(section))
    for key in COMMENTED:
        assert re.search(rf"^# {key} = ", text, re.MULTILINE), key
    for line in text.splitlines():  # every key, set or commented out, has its one-line comment
        if re.match(r"^#? ?\w+ = ", line):
            assert re.search(r"\s#\s\S", line.lstrip("# ")), line


def test_the_study_shows_the_papers_defaults(tmp_path, contam) -> None:
    contam("init", tmp_path / "s")
    config = tomllib.loads((tmp_path / "s" / "study.toml").read_text(encoding="utf-8"))
    assert config["prompt"] == {"system": DEFAULT_SYSTEM_PROMPT}
    text = (tmp_path / "s" / "study.toml").read_text(encoding="utf-8")
    assert "# user = " + json.dumps(USER_TEMPLATE) in text  # shown, not set
    study = load_config(tmp_path / "s" / "study.toml").study
    assert study.user_template is None and study.probe_text is None
    assert config["scoring"]["metrics"] == ["bleu2", "bertscore_f1"]
    assert config["scoring"]["numeric_tolerance"] == 1e-6
    assert config["study"]["name"] == DEFAULT_DATASET
    assert config["probes"] == {}
    assert '# text = "{title}\\n{question}\\n{reference}"' in text


def test_the_items_file_imports_cleanly_with_the_columns_the_study_names(tmp_path, contam) -> None:
    folder, store = tmp_path / "s", tmp_path / "s.duckdb"
    contam("init", folder)
    status, out, err = contam("import", "items", folder / "items.csv", "--store", store)
    assert status == 0 and "2 items read, 2 added" in out, (out, err)
    study = tomllib.loads((folder / "study.toml").read_text(encoding="utf-8"))["study"]
    with duckdb.connect(str(store), read_only=True) as con:
        rows = con.execute("SELECT subset, extra FROM items ORDER BY item_id").fetchall()
    assert [subset for subset, _ in rows] == list(reversed(study["subsets"]))  # prism-01, red-01
    for _, extra in rows:
        fields = json.loads(extra)
        float(fields[study["exposure"]])
        assert re.fullmatch(r"\d{4}-\d\d-\d\d", fields[study["released"]])


def test_the_readme_gives_five_commands_the_cli_takes(tmp_path, contam) -> None:
    contam("init", tmp_path / "s")
    readme = (tmp_path / "s" / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```bash\n(.*?)```", readme, re.DOTALL).group(1)
    commands = [shlex.split(line.split("#")[0]) for line in block.splitlines() if line.strip()]
    assert len(commands) == 5
    parsed = [build_parser().parse_args(command[1:]) for command in commands]
    assert [args.command for args in parsed] == ["import", "run", "judge", "score", "report"]


def _one_line_refusal(contam, *args) -> str:
    status, out, err = contam(*args)
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1, (status, out, err)
    return err


def test_init_refuses_to_overwrite_and_writes_nothing(tmp_path, contam) -> None:
    folder = tmp_path / "s"
    contam("init", folder)
    (folder / "study.toml").write_text("mine\n", encoding="utf-8")
    before = {name: (folder / name).read_bytes() for name in FILES}
    err = _one_line_refusal(contam, "init", folder)
    assert "study.toml exists" in err and "never overwrites" in err
    assert {name: (folder / name).read_bytes() for name in FILES} == before

    partly = tmp_path / "partly"  # one file of the four there: the other three are not written
    partly.mkdir()
    (partly / "items.csv").write_text("my own items\n", encoding="utf-8")
    assert "items.csv exists" in _one_line_refusal(contam, "init", partly)
    assert [p.name for p in partly.iterdir()] == ["items.csv"]
    assert (partly / "items.csv").read_text(encoding="utf-8") == "my own items\n"


def test_init_into_a_file_or_an_unwritable_place_is_refused(tmp_path, contam) -> None:
    a_file = tmp_path / "study"
    a_file.write_text("x", encoding="utf-8")
    assert "is a file" in _one_line_refusal(contam, "init", a_file)
    assert "cannot write" in _one_line_refusal(contam, "init", a_file / "below")
    assert a_file.read_text(encoding="utf-8") == "x"


def test_init_into_an_existing_empty_folder_works(tmp_path, contam) -> None:
    folder = tmp_path / "empty"
    folder.mkdir()
    assert contam("init", folder)[0] == 0
    assert sorted(p.name for p in folder.iterdir()) == sorted(FILES)
