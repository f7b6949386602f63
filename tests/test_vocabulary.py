"""The shared vocabulary is written once: the labels (harness/labels.py), the raters
(harness/store/raters.py) and the provider names (harness/provider_names.py). The source checks
below fail when a copy creeps back in, in the Python sources and in the view's and the report's
templates and JavaScript; the others check that what is derived from each list holds."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from contam.harness.labels import JUDGE_REPLIES, LABEL_NAMES, LABEL_SPELLINGS, LABELS
from contam.harness.provider_names import BATCH_PROVIDERS, PROVIDERS
from contam.harness.store.raters import ADJUDICATOR, HUMAN_RATER_SQL, JUDGE_RATER_SQL, judge_rater

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [p for d in ("harness", "providers", "metrics", "scripts") for p in (ROOT / d).rglob("*.py")]
# The pages: their templates and scripts get the vocabulary from Python (the view's globals).
PAGES = [p for suffix in ("*.html", "*.js") for p in sorted((ROOT / "harness").rglob(suffix))]
FROZEN = {ROOT / "harness/store/schema.py"}  # shipped migrations stay as they were written

# (what a copy looks like, the one module allowed to hold it)
COPIES = [
    (r"""\(\s*["']right["'],\s*["']partial["'],\s*["']wrong["']""", "harness/labels.py"),
    (r"""["']Partially right["']""", "harness/labels.py"),
    (r"""["']partially right["']\s*:\s*["']partial["']""", "harness/labels.py"),
    (r"""judge:%""", "harness/store/raters.py"),
    (r"""human:adjudicated["']""", "harness/store/raters.py"),
    (r"""rater = 'human' OR""", "harness/store/raters.py"),
    (r"""["']openai["'],\s*["']gemini["'],\s*["']anthropic["'],\s*["']ollama["'],\s*["']local""",
     "harness/provider_names.py"),
    (r"""["']openai["']:\s*\(""", "harness/provider_names.py"),
    (r"""\(\s*["']openai["'],\s*["']anthropic["'],\s*["']gemini["']\s*\)""", "harness/provider_names.py"),
]


@pytest.mark.parametrize(("pattern", "home"), COPIES, ids=[home + ":" + p[:20] for p, home in COPIES])
def test_each_piece_of_vocabulary_is_defined_in_one_module(pattern: str, home: str) -> None:
    holders = sorted(str(p.relative_to(ROOT)) for p in SOURCES
                     if p not in FROZEN and re.search(pattern, p.read_text(encoding="utf-8")))
    assert set(holders) <= {home}  # no copy anywhere else (the home may derive it instead)


# What a copy looks like in a page: a label's value in quotes (an attribute, a JS string), its
# display name, the adjudicator's or a judge's rater name. A page has no home: it is given them.
PAGE_COPIES = [r"""["'](?:right|partial|wrong)["']""", r"""Partially right""", r"""human:adjudicated""",
               r"""judge:%"""]


@pytest.mark.parametrize("pattern", PAGE_COPIES)
def test_no_template_or_script_spells_the_vocabulary(pattern: str) -> None:
    holders = sorted(str(p.relative_to(ROOT)) for p in PAGES
                     if re.search(pattern, p.read_text(encoding="utf-8")))
    assert PAGES and holders == []


def test_the_page_scan_sees_templates_and_scripts() -> None:
    names = {p.name for p in PAGES}
    assert {"label.html", "cell.html", "view.js", "sections.html"} <= names


def test_the_two_type_names_that_meant_two_things_now_mean_one() -> None:
    """``Progress`` is the view's rater progress only, and ``Key`` is defined once."""
    progress = [p for p in SOURCES
                if re.search(r"^Progress\b|^class Progress\b", p.read_text(encoding="utf-8"), re.M)]
    keys = [p for p in SOURCES if re.search(r"^Key = ", p.read_text(encoding="utf-8"), re.M)]
    assert [str(p.relative_to(ROOT)) for p in progress] == ["harness/view/queue.py"]
    assert [str(p.relative_to(ROOT)) for p in keys] == ["harness/view/queue.py"]


def test_the_judge_replies_are_the_display_names_and_every_spelling_lands_on_a_label() -> None:
    assert JUDGE_REPLIES == {"right": "right", "partially right": "partial", "wrong": "wrong"}
    assert set(LABEL_NAMES) == set(LABELS) == set(LABEL_SPELLINGS.values())
    assert {"correct", "incorrect", "partially correct", "partial"} <= set(LABEL_SPELLINGS)


def test_the_judge_parses_and_the_importer_folds_with_the_shared_vocabulary() -> None:
    from contam.harness.store.records import normalise_label
    from contam.metrics.judge import MalformedLabel, _LABEL_PATTERNS, parse_label

    assert [parse_label(name) for name in LABEL_NAMES.values()] == list(LABELS)
    assert set(_LABEL_PATTERNS) == set(JUDGE_REPLIES)
    assert [normalise_label(s) for s in ("Partially_Correct", " INCORRECT ", "right")] == \
        ["partial", "wrong", "right"]
    with pytest.raises(MalformedLabel):
        parse_label("partial")  # the judge is asked for the display names, not the stored ones


def test_the_raters_sql_picks_humans_and_judges(tmp_path: Path) -> None:
    import duckdb

    con = duckdb.connect()
    con.execute("CREATE TABLE labels (rater TEXT)")
    raters = ["human", "human:ann", ADJUDICATOR, judge_rater("sonnet"), "humane", "judge"]
    con.executemany("INSERT INTO labels VALUES (?)", [[r] for r in raters])
    humans = {r for (r,) in con.execute(f"SELECT rater FROM labels WHERE {HUMAN_RATER_SQL}").fetchall()}
    judges = {r for (r,) in con.execute(f"SELECT rater FROM labels WHERE {JUDGE_RATER_SQL}").fetchall()}
    assert humans == {"human", "human:ann", ADJUDICATOR}
    assert judges == {"judge:sonnet"}


def test_the_provider_tables_are_built_from_the_one_list_and_name_real_classes() -> None:
    from contam.harness.config import BATCH_PROVIDERS as config_batch
    from contam.harness.config_schema import PROVIDERS as schema_providers
    from contam.harness.engine.batch_lane import BATCH_PROVIDERS as lane_batch
    from contam.providers.batch import BATCH_PROTOCOLS
    from contam.providers.registry import PROVIDER_CLASSES

    assert tuple(PROVIDER_CLASSES) == PROVIDERS == schema_providers
    assert tuple(BATCH_PROTOCOLS) == BATCH_PROVIDERS == config_batch and lane_batch == set(BATCH_PROVIDERS)
    assert set(BATCH_PROVIDERS) <= set(PROVIDERS)
    for module_name, class_name in BATCH_PROTOCOLS.values():  # the provider classes: test_providers_ollama
        assert isinstance(getattr(importlib.import_module(module_name), class_name), type)
