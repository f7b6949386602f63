"""A study's settings: parsed from the config's tables, recorded by `contam run`, read back."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from contam.harness.config import load_config
from contam.harness.errors import UserError
from contam.harness.store.settings import recorded_study, study_settings
from contam.harness.study import DEFAULT_METRICS, StudySettings, settings_from_record

STUDY = """
[study]
name = "NovelQA"
exposure = "log10_pages"
released = "published"
subsets = ["obscure", "niche", "popular"]

[prompt]
user = "Book: {title}\\nQuestion: {question}"

[probes]
text = "{question}\\n{reference}"

[scoring]
metrics = ["exact", "contains", "bleu2"]
numeric_tolerance = 0.01
regex = "answer: (\\\\w+)"

[[models]]
provider = "openai"
model = "m"
cutoff = "2024-06-30"

[judge]
provider = "openai"
model = "j"
rubric = "rubric.txt"
"""


def write(tmp_path, text):
    path = tmp_path / "study.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_every_study_key_is_parsed(tmp_path):
    config = load_config(write(tmp_path, STUDY))
    study = config.study
    assert (study.name, study.exposure, study.released) == ("NovelQA", "log10_pages", "published")
    assert study.subsets == ("obscure", "niche", "popular")
    assert study.user_template == "Book: {title}\nQuestion: {question}"
    assert study.probe_text == "{question}\n{reference}"
    assert study.metrics == ("exact", "contains", "bleu2")
    assert study.numeric_tolerance == 0.01 and study.regex == r"answer: (\w+)"
    assert study.rubric == tmp_path / "rubric.txt"
    assert config.models[0].cutoff == datetime.date(2024, 6, 30)
    assert config.judge is not None and config.judge.model == "j"


def test_a_config_without_study_tables_has_the_papers_defaults(tmp_path):
    config = load_config(write(tmp_path, '[[models]]\nprovider = "openai"\nmodel = "m"\n'))
    assert config.study == StudySettings()
    assert config.study.metrics == DEFAULT_METRICS and config.models[0].cutoff is None


@pytest.mark.parametrize("text, message", [
    ('[scoring]\nmetrics = ["exakt"]\n', "metrics: 'exakt' is not one of"),
    ('[scoring]\nmetrics = []\n', "metrics: must be a non-empty list"),
    ('[study]\nexposur = "x"\n', "unknown key 'exposur' (did you mean 'exposure'?)"),
    ('[[models]]\nprovider = "openai"\nmodel = "m"\ncutoff = "June 2024"\n',
     "cutoff: 'June 2024' is not an ISO date"),
])
def test_bad_study_keys_are_one_line(tmp_path, text, message):
    with pytest.raises(UserError) as refused:
        load_config(write(tmp_path, text))
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_the_record_round_trips(tmp_path):
    study = load_config(write(tmp_path, STUDY)).study
    assert settings_from_record(study.to_record()) == study
    assert settings_from_record(None) == StudySettings()


def test_run_records_the_settings_and_they_are_read_back(tmp_path, emulator, keys):
    from contam.harness.store import Store
    from tests.runkit import model_entry, run_inprocess, write_config

    config_path = write_config(tmp_path, [model_entry("openai", emulator())], items=3)
    config_path.write_text(config_path.read_text() + '[study]\nname = "Recorded"\n')
    assert run_inprocess(config_path, tmp_path / "s.duckdb").status == 0
    with Store(tmp_path / "s.duckdb") as store:
        assert recorded_study(store).name == "Recorded"


def test_the_newest_run_wins_and_config_overrides(tmp_path, store):
    import orjson

    for seq, name in enumerate(["first", "second"]):
        record = StudySettings(name=name).to_record()
        store.con.execute("INSERT INTO runs (run_id, kind, started_at, config) VALUES (?, 'run', ?, ?)",
                          [f"r{seq}", datetime.datetime(2026, 1, 1 + seq),
                           orjson.dumps({"study": record}).decode()])
    assert recorded_study(store).name == "second"
    assert study_settings(store, write(tmp_path, STUDY)).name == "NovelQA"


def test_a_store_without_runs_has_the_defaults(store):
    assert recorded_study(store) == StudySettings()


def test_the_reports_default_contrast_is_the_studys_first_and_last_subset():
    from contam.harness.study import PAPER_CONTRAST, StudySettings

    assert StudySettings().contrast() == PAPER_CONTRAST == ("official", "fan")
    assert StudySettings(subsets=("popular",)).contrast() == PAPER_CONTRAST  # one tier: no pair
    assert StudySettings(subsets=("popular", "niche", "obscure")).contrast() == ("popular", "obscure")


def test_an_older_record_reads_back_with_todays_defaults_for_what_it_lacks():
    older = {"name": "NovelQA", "subsets": ["a", "b"], "metrics": ["exact"], "extra": {},
             "rubric": "r.txt"}  # before `correct` was declared, and with the dead `extra`
    settings = settings_from_record(older)
    assert settings == StudySettings(name="NovelQA", subsets=("a", "b"), metrics=("exact",),
                                     rubric=Path("r.txt"))
    assert settings.correct is None and "extra" not in settings.to_record()


def test_the_record_holds_every_declared_key_and_nothing_else():
    from contam.harness.config_schema import fields_of

    assert list(StudySettings().to_record()) == list(fields_of(StudySettings))
