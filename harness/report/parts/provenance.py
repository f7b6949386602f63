"""Which numbers these are: the report's provenance section, read from the store's own tables.

Runs (id, kind, start and finish, the sha256 of the stored config, the prompt's or the rubric's
sha256), every imported file (kind, name as given, sha256, size, records; the ``imports`` table),
per answering model the provider, the requested and every served model id with counts, its
sampling parameters and how its attempts went, per rater where its labels came from, per metric
the scoring parameters with the number of scores and of non-NULL ones, and contam's version and
the store's path. Everything comes from ``runs``, ``imports``, ``attempts``, ``answers``,
``labels`` and ``scores``. A run's config is summarised by its hash and the models' sampling
parameters; it never holds a key's value. Beside the store's record: the versions of Python and of
the libraries that computed the report (read from the installed distributions, so torch is never
imported for its version) and the bootstrap's resamples and seed.
"""

from __future__ import annotations

import hashlib
import platform
from importlib import metadata
from typing import Any

import orjson

from contam.harness import __version__
from contam.harness.report.statistics.named_tests import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED
from contam.harness.store import Store

__all__ = ["provenance"]


def provenance(store: Store) -> dict[str, Any]:
    runs = _runs(store)
    models, imports = _models(store, runs), _imports(store)
    return {"store": str(store.path), "contam_version": __version__,
            "runs": [{k: v for k, v in r.items() if k != "config"} for r in runs], "imports": imports,
            "unhashed_sources": _unhashed_sources(store, imports), "models": models, "raters": _raters(store),
            "scoring": _scoring(store), "software": software_versions(),
            "bootstrap": {"method": "BCa", "resamples": BOOTSTRAP_RESAMPLES, "seed": BOOTSTRAP_SEED}}


# Distributions whose versions decide the numbers: the statistics, the store, the scorers.
SOFTWARE = ("numpy", "scipy", "statsmodels", "pandas", "duckdb", "mpmath", "matplotlib", "torch",
            "bert-score", "transformers")


def software_versions() -> dict[str, str | None]:
    """Python's and each distribution's installed version (None where it is not installed)."""
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in SOFTWARE:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


# -- imported files -----------------------------------------------------------------------------

def _imports(store: Store) -> list[dict[str, Any]]:
    """Every import, oldest first (none in a store made before migration 7)."""
    rows = store.query_dicts("SELECT kind, file, sha256, bytes, rows, added, created_at FROM imports "
                             "ORDER BY seq")
    return [{**r, "created_at": _time(r["created_at"])} for r in rows]


def _unhashed_sources(store: Store, imports: list[dict[str, Any]]) -> list[str]:
    """Files the items and labels name as their source that no import row (``imports``, from
    :func:`_imports`) hashed (imported before contam recorded hashes): named, so that the gap is
    visible."""
    sources = {r[0] for r in store.query("SELECT source_file FROM items UNION SELECT source_file FROM labels")}
    hashed = {r["file"] for r in imports}
    return sorted(s for s in sources - hashed if s is not None)


def _runs(store: Store) -> list[dict[str, Any]]:
    """One row per run id: a run writes a start row and, when it finishes, the row again."""
    rows = store.query_dicts(
        "SELECT run_id, any_value(kind) AS kind, min(started_at) AS started_at, "
        "max(finished_at) AS finished_at, arg_max(config, seq) AS config, "
        "any_value(prompt_sha256) AS sha256, any_value(harness_version) AS contam_version "
        "FROM runs GROUP BY run_id ORDER BY min(started_at), run_id")
    return [{**r, "started_at": _time(r["started_at"]), "finished_at": _time(r["finished_at"]),
             "config_sha256": hashlib.sha256((r["config"] or "").encode("utf-8")).hexdigest(),
             "config": orjson.loads(r["config"]) if r["config"] else {}} for r in rows]


def _time(value: Any) -> str | None:
    return None if value is None else value.isoformat(timespec="seconds") + "Z"


# -- per answering model ------------------------------------------------------------------------

def _models(store: Store, runs: list[dict]) -> list[dict[str, Any]]:
    answers = store.query_dicts(
        "SELECT model, any_value(provider) AS provider, list(DISTINCT provider_model) AS requested, "
        "count(*) AS answers, list(DISTINCT run_id) AS run_ids FROM latest_answers GROUP BY model ORDER BY model")
    served = _served(store)
    attempts = _attempts(store)
    return [{**a, "requested": sorted(x for x in a["requested"] if x is not None),
             "run_ids": sorted(x for x in a["run_ids"] if x is not None),
             "served": served.get(a["model"], []), "sampling": _sampling(runs, a["model"], a["run_ids"]),
             "attempts": attempts.get(a["model"], _no_attempts())} for a in answers]


def _served(store: Store) -> dict[str, list[dict[str, Any]]]:
    """Every model id the provider said it served, over all stored answers, with counts."""
    result: dict[str, list[dict[str, Any]]] = {}
    for r in store.query_dicts("SELECT model, coalesce(served_model, '(not reported)') AS served, "
                               "count(*) AS n FROM answers GROUP BY ALL ORDER BY model, n DESC, served"):
        result.setdefault(r["model"], []).append({"id": r["served"], "answers": r["n"]})
    return result


def _sampling(runs: list[dict], model: str, run_ids: list[str]) -> list[dict[str, Any]]:
    """The model's ``params`` (temperature, max tokens, ...) in each run that gave its answers."""
    seen: list[dict[str, Any]] = []
    for run in runs:
        if run["run_id"] not in run_ids:
            continue
        for spec in run["config"].get("models") or []:
            if isinstance(spec, dict) and spec.get("name") == model and spec.get("params", {}) not in seen:
                seen.append(spec.get("params") or {})
    return seen


def _attempts(store: Store) -> dict[str, dict[str, Any]]:
    """Answering attempts (judge runs excluded: their rows name the answering model too)."""
    rows = store.query_dicts(
        "SELECT a.model, count(*) AS attempts, count(*) FILTER (WHERE outcome = 'ok') AS ok, "
        "count(*) FILTER (WHERE attempt > 1) AS retries, count(*) FILTER (WHERE outcome <> 'ok') AS failed, "
        "count(DISTINCT item_id) FILTER (WHERE outcome <> 'ok') AS items_with_failures "
        "FROM attempts a WHERE run_id NOT IN (SELECT run_id FROM runs WHERE kind = 'judge') GROUP BY a.model")
    outcomes = store.query_dicts(
        "SELECT model, outcome, count(*) AS n FROM attempts WHERE outcome <> 'ok' AND run_id NOT IN "
        "(SELECT run_id FROM runs WHERE kind = 'judge') GROUP BY ALL ORDER BY model, n DESC, outcome")
    by_model = {r["model"]: {**r, "failures": {}} for r in rows}
    for r in outcomes:
        by_model[r["model"]]["failures"][r["outcome"]] = r["n"]
    return {m: {k: v for k, v in r.items() if k != "model"} for m, r in by_model.items()}


def _no_attempts() -> dict[str, Any]:
    """Answers imported from a file have no attempts."""
    return {"attempts": 0, "ok": 0, "retries": 0, "failed": 0, "items_with_failures": 0, "failures": {}}


# -- raters and metrics -------------------------------------------------------------------------

def _raters(store: Store) -> list[dict[str, Any]]:
    rows = store.query_dicts(
        "SELECT rater, count(*) AS labels, list(DISTINCT rubric_sha256) AS rubric_sha256, "
        "list(DISTINCT source_file) AS sources, list(DISTINCT run_id) AS run_ids "
        "FROM latest_labels GROUP BY rater ORDER BY rater")
    return [{k: sorted(x for x in v if x is not None) if isinstance(v, list) else v for k, v in r.items()}
            for r in rows]


def _scoring(store: Store) -> list[dict[str, Any]]:
    """Each metric's parameters (model, layer, baseline, library versions) with how many scores
    there are and how many of them are not NULL (a blank answer, or a pass that scored nothing)."""
    rows = store.query_dicts("SELECT metric, params, count(*) AS scores, count(value) AS non_null "
                             "FROM latest_scores GROUP BY ALL ORDER BY metric, scores DESC")
    return [{"metric": r["metric"], "scores": r["scores"], "non_null": r["non_null"],
             "params": orjson.loads(r["params"]) if r["params"] else {}} for r in rows]
