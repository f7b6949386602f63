"""The jobs as a Python API, with the CLI's options, for notebooks and scripts::

    from contam.harness import api
    api.import_path("items", "items.csv", store="runs/study.duckdb")
    api.run("study.toml", store="runs/study.duckdb", options=api.JobOptions(limit=10))
    api.run("study.toml", store="runs/study.duckdb", options=api.RunOptions(batch=True))
    api.probe("cdd", "study.toml", options=api.ProbeOptions(parameters={"samples": 20}))
    api.probe("min-k", "local.toml", options=api.ProbeOptions(parameters={"k": 0.2}))
    api.plant("local.toml", options=api.PlantOptions(model="base", name="p", epochs=(1, 3)))
    api.score(store="runs/study.duckdb", options=api.ScoreOptions(metrics=["bleu2"]))
    api.score(store="runs/study.duckdb",
              options=api.ScoreOptions(ray=api.RayOptions("auto")))  # on a Ray cluster
    api.sql("select model, count(*) from cells group by model", store="runs/study.duckdb")
    api.cells(store="runs/study.duckdb")  # a pandas DataFrame of the cells view

One convention, the command line's: what ``contam`` takes as arguments comes first, by position
(a config, a file, a query, a job id); the store is the keyword ``store=`` (``--store``), and the
options the command's dataclass (``options=``), its fields the flags (contam.harness.jobs.options);
report also takes them as keywords (``out=``, ``format=`` ...).
Each call returns the job's result object (what ``contam`` prints); nothing is printed but a lane
job's progress, and stamina's retry warnings are off while one runs (the store records each retry).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

import pandas as pd

from contam.harness.jobs.batches import BatchJobs, CancelledJob, cancel_batch, list_batches
from contam.harness.jobs.cost import CostOptions, CostResult, cost
from contam.harness.jobs.importing import ImportResult, import_path
from contam.harness.jobs.judge import JudgeResult, judge
from contam.harness.jobs.lane_job import JobOptions, JobResult
from contam.harness.jobs.options.lane import JudgeOptions
from contam.harness.jobs.plant import PlantOptions, PlantResult, plant
from contam.harness.jobs.probe import ProbeOptions, ProbeResult, probe
from contam.harness.jobs.report import ReportOptions, ReportResult, report
from contam.harness.jobs.run import RunOptions, run
from contam.harness.jobs.score import MetricSummary, ScoreOptions, score
from contam.harness.jobs.score_ray import RayOptions
from contam.harness.jobs.sql import QueryResult, sql
from contam.harness.store import DEFAULT_STORE
from contam.harness.store.access import reading

__all__ = ["import_path", "run", "probe", "probe_min_k", "MinKOptions", "judge", "score", "report", "sql", "cells", "list_batches",
           "cancel_batch", "cost", "JobOptions", "RunOptions", "ProbeOptions", "ScoreOptions",
           "CostOptions", "ProbeResult",
           "ImportResult", "JobResult", "JudgeResult", "MetricSummary", "ReportResult",
           "QueryResult", "BatchJobs", "CancelledJob", "CostResult", "RayOptions",
           "plant", "PlantOptions", "PlantResult", "ReportOptions", "JudgeOptions"]


def cells(*, store: str | Path = DEFAULT_STORE) -> pd.DataFrame:
    """The ``cells`` view (one row per item and model), read-only, as a DataFrame (through the
    job holding the store, if one does)."""
    with reading(store) as opened:
        return opened.query_df("SELECT * FROM cells ORDER BY item_id, model")


@dataclass(frozen=True, kw_only=True)
class MinKOptions(JobOptions):
    """The options of :func:`probe_min_k`: a lane job's, and k (``--k``)."""

    k: float = 0.2


def probe_min_k(config_path: str | Path, *, store: str | Path | None = None,
                options: MinKOptions | None = None) -> JobResult:
    """A shorthand kept for scripts that call it: ``probe("min-k", ...)`` with ``options.k``."""
    options = options or MinKOptions()
    shared = {f.name: getattr(options, f.name) for f in fields(JobOptions)}
    return probe("min-k", config_path, store=store,
                 options=ProbeOptions(**shared, parameters={"k": options.k}))
