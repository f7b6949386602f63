"""`contam score` with the rule-based metrics: --metric names and comma lists, the study's
[scoring] metrics when no --metric is given (--config, else the store's recorded run), params,
resumption, and the bad regex refused before anything is written."""

from __future__ import annotations

import json

import orjson
import pytest

from contam.harness.config import load_config
from contam.harness.errors import UserError
from contam.harness.jobs.score import score_store
from contam.harness.store import Store, utc_now
from contam.harness.study import StudySettings
from tests.test_score import add_answers, add_items

ITEMS = [("n1", "1,234"), ("n2", "Pikachu"), ("n3", "-40"), ("n4", "")]
ANSWERS = [("n1", "a", "The answer is 1234."), ("n1", "b", "about 1,235"),
           ("n2", "a", "Pikachu!"), ("n2", "b", "The answer is Raichu, not Pikachu"),
           ("n3", "a", "-40"), ("n3", "b", "   "), ("n4", "a", "anything")]
# (item, model) -> exact, contains, numeric, regex ("answer is (\w+)")
EXPECTED = {
    ("n1", "a"): (0.0, 1.0, 1.0, 1.0), ("n1", "b"): (0.0, 0.0, 0.0, 0.0),
    ("n2", "a"): (1.0, 1.0, None, 0.0), ("n2", "b"): (0.0, 1.0, None, 0.0),
    ("n3", "a"): (1.0, 1.0, 1.0, 0.0), ("n3", "b"): (None, None, None, None),
    ("n4", "a"): (None, None, None, None),
}
RULES = ("exact", "contains", "numeric", "regex")
STUDY_TOML = '[scoring]\nmetrics = ["exact", "numeric", "regex"]\nregex = "answer is ([\\\\w,]+)"\n'


@pytest.fixture
def numbers(store_path):
    with Store(store_path, create=True) as store:
        add_items(store, ITEMS)
        add_answers(store, ANSWERS)
    return store_path


def rule_cells(store_path) -> dict[tuple[str, str], tuple]:
    with Store(store_path, read_only=True) as store:
        rows = store.query(f"SELECT item_id, model, {', '.join(RULES)} FROM cells")
    return {(r[0], r[1]): tuple(r[2:]) for r in rows}


def test_every_rule_metric_is_stored_in_cells(numbers, contam):
    status, out, err = contam("score", "--store", numbers, "--metric", "exact,contains",
                              "--metric", "numeric", "--metric", "regex", "--config",
                              _config(numbers.parent, STUDY_TOML), "--no-progress")
    assert status == 0, err
    assert out.splitlines()[0] == ("exact: 7 scored (2 NULL, 1 flagged (empty reference)), "
                                   "0 already scored with the same params")
    # regex group [\w,]+: n1/a's "1234" equals "1,234" once normalised
    assert rule_cells(numbers) == EXPECTED


def test_no_metric_scores_the_configs_scoring_metrics(numbers, contam):
    status, out, err = contam("score", "--store", numbers, "--config",
                              _config(numbers.parent, STUDY_TOML), "--no-progress")
    assert status == 0, err
    assert [line.split(":")[0] for line in out.splitlines()] == ["exact", "numeric", "regex"]
    with Store(numbers, read_only=True) as store:
        metrics = {m for (m,) in store.query("SELECT DISTINCT metric FROM scores")}
        params = dict(store.query("SELECT DISTINCT metric, params FROM scores"))
    assert metrics == {"exact", "numeric", "regex"}
    assert json.loads(params["numeric"])["tolerance"] == 1e-6
    assert json.loads(params["regex"])["regex"] == r"answer is ([\w,]+)"


def test_no_metric_and_no_config_uses_the_recorded_run(numbers, contam):
    study = StudySettings(metrics=("contains",), numeric_tolerance=0.01)
    with Store(numbers) as store:
        store.append("runs", [{"run_id": "r1", "kind": "run", "started_at": utc_now(),
                               "config": orjson.dumps({"study": study.to_record()}).decode()}])
    status, out, err = contam("score", "--store", numbers, "--no-progress")
    assert status == 0, err
    assert out.splitlines() == ["contains: 7 scored (2 NULL, 1 flagged (empty reference)), "
                                "0 already scored with the same params"]


def test_a_resumed_pass_scores_only_what_is_missing_or_outdated(numbers):
    tolerant = StudySettings(numeric_tolerance=0.01)
    with Store(numbers) as store:
        first = score_store(store, ["numeric"], study=StudySettings())
        again = score_store(store, ["numeric"], study=StudySettings())
        add_answers(store, [("n1", "b", "1,234 exactly")])
        newer = score_store(store, ["numeric"], study=StudySettings())
        looser = score_store(store, ["numeric"], study=tolerant)
    assert (first[0].scored, again[0].scored, newer[0].scored) == (7, 0, 1)
    assert looser[0].scored == 7  # a changed tolerance is a changed param: everything again
    assert rule_cells(numbers)["n1", "b"][2] == 1.0


@pytest.mark.parametrize("study, message", [
    (StudySettings(regex="(unclosed"), "does not compile"),
    (StudySettings(regex=r"answer is \w+"), "has no group"),
    (StudySettings(), "metric regex needs [scoring] regex"),
])
def test_a_bad_regex_writes_nothing(numbers, study, message):
    with Store(numbers) as store:
        with pytest.raises(UserError) as refused:
            score_store(store, ["exact", "regex"], study=study)
        assert store.count("scores") == 0
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_an_unknown_metric_is_one_line_exit_2(numbers, contam):
    status, _, err = contam("score", "--store", numbers, "--metric", "exact,exakt")
    assert status == 2 and "unknown metric 'exakt'" in err


@pytest.mark.parametrize("text, message", [
    ('[scoring]\nregex = "(unclosed"\n', "[scoring] regex: '(unclosed' does not compile"),
    ('[scoring]\nregex = "answer"\n', "[scoring] regex: 'answer' has no group"),
    ('[scoring]\nmetrics = ["regex"]\n', "names 'regex' but [scoring] regex is not set"),
])
def test_a_bad_regex_is_refused_at_config_load(tmp_path, text, message):
    with pytest.raises(UserError) as refused:
        load_config(_config(tmp_path, text))
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_a_bad_regex_in_config_exits_2_before_scoring(numbers, contam):
    status, _, err = contam("score", "--store", numbers, "--config",
                            _config(numbers.parent, '[scoring]\nregex = "x"\n'))
    assert status == 2 and "has no group" in err
    with Store(numbers, read_only=True) as store:
        assert store.count("scores") == 0


def _config(folder, text):
    path = folder / "study.toml"
    path.write_text(text, encoding="utf-8")
    return path
