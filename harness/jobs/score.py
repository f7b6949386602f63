"""`contam score`: every metric of :mod:`contam.metrics.metric_registry` (BLEU-2, BERTScore-F1, the
rule-based metrics) for every answer not yet scored with the same params. Without ``--metric`` it scores the study's
``[scoring] metrics`` (``--config FILE``'s, else the newest run's record, else BLEU-2 and BERTScore).

A cell (item, model) counts as scored for a metric when its latest ``scores`` row for that metric
has exactly the params this pass would write *and* is newer than both the cell's latest answer and
its item's latest reference (rows of every table draw ``seq`` from one sequence). So re-running is
free, changing the model, layer or baseline re-scores, and a corrected answer or reference is
scored again. Rows are appended, never updated; ``latest_scores`` and ``cells`` show the newest.

Blank answers get a NULL row without reaching any metric. An empty reference with a non-empty
answer also gets a NULL row and is counted as flagged (flagged, never guessed).

BERTScore scores the pairs still due in shards (:mod:`contam.metrics.bertscore_shards`), one after
another in this process or, with ``--ray``, on the actors of a Ray cluster
(:mod:`contam.harness.jobs.score_ray`); either way this process is the store's single writer and
appends each shard as it is scored, so an interrupted pass resumes like any other.

Python callers (the demo): :func:`score_store` does the whole pass and returns the summaries.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from contam.harness.display import BatchProgress
from contam.harness.declare import flag_of, options_from
from contam.harness.errors import UserError
from contam.harness.jobs.live import serving_reads
from contam.harness.jobs.options.score import ScoreOptions
from contam.harness.jobs.score_ray import RayShards
from contam.harness.store import DEFAULT_STORE, Store, utc_now
from contam.harness.store.cells import DUE_MEMORY, DueCells, answered_cells, any_answered, unscored
from contam.harness.store.settings import study_settings
from contam.harness.study import StudySettings
from contam.harness.text import is_blank
from contam.metrics.bertscore_shards import DEFAULT_SHARD_PAIRS, LocalShards, make_scorer, reference_shards
from contam.metrics.metric_registry import DEFAULT_METRICS, METRICS, MODEL, MetricSpec, find_metric, resolve

__all__ = ["score", "ScoreOptions", "score_store", "MetricSummary"]

_WRITE_BATCH = 5000
# DuckDB's memory limit while a surface pass writes a batch and while it checkpoints. A commit past
# DuckDB's WAL threshold checkpoints the scores table, and the checkpoint fills the buffer pool up
# to the limit it finds, spilling the rest: under the reads' DUE_MEMORY that made the pass's peak
# grow with the table (by ~30 MB from 200,000 to 1,000,000 cells). Lowering the limit also lets go
# of what the range read left in the pool.
_WRITE_MEMORY = "16MB"
# A surface pass runs DuckDB on one thread (Store.one_thread): its queries are one range's, too
# small to gain from more, and each thread DuckDB works on keeps memory of its own (with 16
# threads the pass's peak grew by ~10% from 200,000 to 1,000,000 cells, with one by ~4%).


@dataclass
class MetricSummary:
    """What one metric's pass did."""

    metric: str
    scored: int = 0
    skipped: int = 0  # already scored with the same params
    null: int = 0  # of the scored: NULL (blank answer or flagged)
    flagged: int = 0  # empty reference with a non-empty answer
    params: dict = field(default_factory=dict)
    error: str | None = None  # why this metric could not run at all (nothing of it was written)

    def line(self) -> str:
        flagged = f", {self.flagged} flagged (empty reference)" if self.flagged else ""
        return (f"{self.metric}: {self.scored} scored ({self.null} NULL{flagged}), "
                f"{self.skipped} already scored with the same params")


@dataclass(frozen=True, slots=True)  # a million of them in a big pass
class _Cell:
    item_id: str
    model: str
    answer: str | None
    reference: str | None
    source_seq: int  # newest of the answer row and the item row

    @property
    def blank(self) -> bool:
        return is_blank(self.answer)

    @property
    def flagged(self) -> bool:
        return not self.blank and is_blank(self.reference)


# -- command line -----------------------------------------------------------------------------

def score(*, store: str | Path = DEFAULT_STORE,
          options: ScoreOptions | None = None) -> list[MetricSummary]:
    """``contam score``: every metric over every cell not scored with the same params yet."""
    options = options or ScoreOptions()
    with Store(store) as opened, serving_reads(opened, "score"):
        study = study_settings(opened, options.config)
        return score_store(opened, options.metrics or study.metrics, study=study, options=options)


# -- the pass ---------------------------------------------------------------------------------

def score_store(store: Store, metrics: Iterable[str] | None = None, *,
                study: StudySettings | None = None, options: ScoreOptions | None = None,
                **keywords: Any) -> list[MetricSummary]:
    """Score every cell of ``store`` not yet scored with the same params; return one summary per
    metric. ``metrics``: the registry's names or their --metric spellings
    (:mod:`contam.metrics.metric_registry`; default ``options.metrics``, else its default metrics);
    ``study`` gives the settings a metric's scorer takes; ``options`` (or its fields as
    ``keywords``) the BERTScore settings: ``baseline`` a bert-score baseline file (without one,
    bert-score's shipped file is used, else one computed from shuffled pairs of the store), ``idf``
    BERTScore's tokens weighted by idf over the references of the answered items
    (:mod:`contam.metrics.bertscore_idf`), ``ray`` BERTScore's shards sent to a Ray cluster's actors.
    Everything that can be refused is refused before a row is written, except that a BERTScore
    model which cannot be had here (offline) does not stop the other metrics: its summary then
    carries the one-line ``error`` and nothing of it is written."""
    options = options_from(ScoreOptions, options, keywords)
    chosen = _check_metrics(metrics or options.metrics or DEFAULT_METRICS)
    study = study or StudySettings()
    scorers = {spec.name: _surface_scorer(spec, study) for spec in chosen if spec.kind != MODEL}
    _check_contradictions(options)
    if not any_answered(store):  # said before any metric's packages or model are loaded
        if any(spec.kind == MODEL for spec in chosen):
            _check_bertscore_options(options)
        return [MetricSummary(spec.name) for spec in chosen]
    # Only BERTScore reads every cell (its baseline, idf and model checks); the others stream.
    cells = _read_cells(store) if any(spec.kind == MODEL for spec in chosen) else []
    passes: list = []
    try:
        for spec in chosen:  # every check happens here, before anything is written
            passes.append(_BertScorePass(store, cells, options) if spec.kind == MODEL else
                          _SurfacePass(spec.name, scorers[spec.name], store))
        del cells  # each pass keeps only what it still needs: a million cells weigh
        reporter = BatchProgress(options.progress)
        return [run(store, reporter) for run in passes]
    finally:
        for run in passes:
            run.close()


def _check_contradictions(options: ScoreOptions) -> None:
    def flag(name: str) -> str:
        return flag_of(ScoreOptions, name)

    if options.baseline and not options.rescale:
        raise UserError(f"{flag('baseline')} and {flag('rescale')} contradict each other")
    if options.ray and options.device:
        raise UserError(f"{flag('device')} and {flag('ray')} contradict each other: each Ray "
                        "actor scores on a GPU of its own, or on its CPU where the cluster has none")


def _check_bertscore_options(options: ScoreOptions) -> None:
    """What the BERTScore pass would refuse (a layer; a device, precision or token budget, which
    need torch to check), refused even where there is nothing to score."""
    from contam.metrics.bertscore import resolve_encoder

    encoder = resolve_encoder(options.bertscore_model, options.layer)
    if options.ray is None and (options.device or options.precision or options.token_budget is not None):
        make_scorer(encoder, options.device, options.precision, options.token_budget)


def _check_metrics(metrics: Iterable[str]) -> list[MetricSpec]:
    named = [m.strip() for entry in metrics for m in entry.split(",") if m.strip()]
    unknown = [m for m in named if find_metric(m) is None]
    if unknown:
        choices = ", ".join(spec.choice for spec in METRICS.values())
        raise UserError(f"unknown metric {unknown[0]!r} (choose from {choices})")
    if not named:
        raise UserError(f"{flag_of(ScoreOptions, 'metrics')}: no metric named")
    chosen = list(dict.fromkeys(find_metric(m) for m in named))  # keep order, drop repeats
    for spec in chosen:
        _check_requirement(spec)
    return chosen


def _check_requirement(spec: MetricSpec) -> None:
    if spec.requires:
        try:
            importlib.import_module(spec.requires)
        except ImportError as exc:
            raise UserError(f"metric {spec.name} needs {spec.requires} "
                            f"(pip install {spec.requires})") from exc


def _read_cells(store: Store) -> list[_Cell]:
    return [_Cell(*row) for row in answered_cells(store)]


def _params_json(params: dict) -> str:
    return orjson.dumps(params, option=orjson.OPT_SORT_KEYS).decode()


def _pending(store: Store, metric: str, params: dict) -> list[_Cell]:
    """Cells without an up-to-date ``metric`` score under ``params`` (see
    :func:`contam.harness.store.cells.unscored`)."""
    return [_Cell(*row) for row in unscored(store, metric, _params_json(params))]


def _rows(metric: str, params: dict, cells: Sequence[_Cell],
          values: Sequence[float | None]) -> list[dict]:
    params_json, now = _params_json(params), utc_now()
    return [{"item_id": c.item_id, "model": c.model, "metric": metric, "value": v,
             "params": params_json, "created_at": now} for c, v in zip(cells, values)]


def _append(store: Store, rows: list[dict]) -> None:
    with store.transaction():
        store.append("scores", rows)


class _SurfacePass:
    """BLEU-2 (ours or NLTK's) or a rule metric: cheap, so its due cells are read, scored and
    written a batch at a time, a range of item ids read at a time (memory stays flat however many
    cells are due)."""

    def __init__(self, metric: str, scorer: tuple, store: Store) -> None:
        self.metric = metric
        self.score_many, self.params = scorer
        with store.one_thread(), store.memory_limit(DUE_MEMORY):
            self.todo = DueCells(store, self.metric, _params_json(self.params))  # counted now
        self.summary = MetricSummary(self.metric, skipped=self.todo.answered - len(self.todo),
                                     params=self.params)

    def __call__(self, store: Store, reporter: BatchProgress) -> MetricSummary:
        with (store.one_thread(), store.memory_limit(DUE_MEMORY),
              reporter.task(self.metric, len(self.todo)) as advance):
            for rows in self.todo.chunks(_WRITE_BATCH):
                self._score_batch(store, [_Cell(*row) for row in rows])
                advance(len(rows))
            with store.memory_limit(_WRITE_MEMORY, if_possible=True):
                store.checkpoint()  # under the limit too: the store's close would do it without
        return self.summary

    def _score_batch(self, store: Store, cells: list[_Cell]) -> None:
        values = self.score_many([(c.answer, c.reference) for c in cells])
        with store.memory_limit(_WRITE_MEMORY, if_possible=True):
            _append(store, _rows(self.metric, self.params, cells, values))
        self.summary.scored += len(cells)
        self.summary.null += sum(v is None for v in values)
        self.summary.flagged += sum(c.flagged for c in cells)

    def close(self) -> None:
        pass


def _surface_scorer(spec: MetricSpec, study: StudySettings):
    """(score_many, params) of a metric scored in one call: its registered scorer, given the
    study settings the registry says it takes (a refused setting is refused here)."""
    settings = {name: getattr(study, name) for name in spec.settings}
    unset = [name for name, value in settings.items() if value is None]
    if unset:  # said here, where the flag that gives a config is known
        raise UserError(f"metric {spec.name} needs [scoring] {unset[0]} in the study's config "
                        f"(give it with {flag_of(ScoreOptions, 'config')} FILE, or record it with "
                        "contam run)")
    return resolve(spec.scorer)(**settings)


def _tally(summary: MetricSummary, cells: Sequence[_Cell], *, null: int) -> MetricSummary:
    summary.scored, summary.null = len(cells), null
    summary.flagged = sum(c.flagged for c in cells)
    return summary


class _BertScorePass:
    """BERTScore-F1: one scorer (here, or one per Ray actor), the baseline chosen before anything
    is written, shards written as they are scored (an interrupted pass keeps every finished
    shard)."""

    metric = next(name for name, spec in METRICS.items() if spec.kind == MODEL)

    def __init__(self, store: Store, cells: Sequence[_Cell], options: ScoreOptions) -> None:
        from contam.metrics.bertscore import EncoderUnavailable, resolve_encoder

        self.total, self.shard_pairs, self.unavailable = len(cells), options.shard_pairs or DEFAULT_SHARD_PAIRS, None
        self.shards = None
        _check_bertscore_options(options)  # a refused option is said before a missing model
        encoder = resolve_encoder(options.bertscore_model, options.layer)
        try:
            if options.ray is None and _surely_due(store, cells, encoder):
                _locate(encoder)  # a model that cannot be had: one line now, before torch loads
        except EncoderUnavailable as exc:
            self.unavailable = str(exc)  # the other metrics still run
            return
        documents = _idf_documents(cells) if options.idf else None
        self.shards, self.scorer = _shards_and_scorer(encoder, documents, options)
        try:
            self.baseline = _choose_baseline(store, self.scorer, cells, options)
            self.cells = cells if self.baseline is _TO_COMPUTE else None  # for the baseline only
            self.todo = self._todo(store)
            if self.todo is None or any(not (c.blank or c.flagged) for c in self.todo):
                self.shards.start()  # now: a model that cannot load writes nothing at all
        except EncoderUnavailable as exc:
            self.unavailable = str(exc)  # the other metrics still run
        except BaseException:
            self.shards.close()  # a Ray this pass started goes with it
            raise

    def close(self) -> None:
        if self.shards is not None:
            self.shards.close()

    def _todo(self, store: Store) -> list[_Cell] | None:
        """None while the params are unknown (a baseline still to compute): then all is due."""
        if self.baseline is _TO_COMPUTE:
            return None
        return _pending(store, self.metric, self.scorer.params(self.baseline))

    def __call__(self, store: Store, reporter: BatchProgress) -> MetricSummary:
        if self.unavailable:
            return MetricSummary(self.metric, error=self.unavailable)
        if self.baseline is _TO_COMPUTE:
            reporter.note(f"{self.metric}: no shipped baseline for {self.scorer.choice.name} "
                          f"layer {self.scorer.choice.layer}; computing one from shuffled pairs")
            self.baseline = self.shards.baseline_from_pairs(_scorable_pairs(self.cells))
            self.cells = None
            self.todo = self._todo(store)
        params = self.scorer.params(self.baseline)
        summary = MetricSummary(self.metric, skipped=self.total - len(self.todo),
                                params=params)
        unscorable = [c for c in self.todo if c.blank or c.flagged]
        scorable = [c for c in self.todo if not (c.blank or c.flagged)]
        with reporter.task(self.metric, len(self.todo), "pairs") as advance:
            self._write_nulls(store, params, unscorable, advance)
            self._write_scores(store, params, scorable, advance)
        return _tally(summary, self.todo, null=len(unscorable))

    def _write_nulls(self, store, params, cells, advance) -> None:
        if cells:
            _append(store, _rows(self.metric, params, cells, [None] * len(cells)))
            advance(len(cells))

    def _write_scores(self, store, params, cells, advance) -> None:
        pairs = [(c.answer, c.reference) for c in cells]
        shards = reference_shards(pairs, self.shard_pairs)
        for indices, values in self.shards.scored(pairs, shards, self.baseline):
            _append(store, _rows(self.metric, params, [cells[i] for i in indices], values))
            advance(len(indices))


# Cells whose latest BERTScore row is missing, older than the answer or the reference, or made
# by another model: these need this model whatever the rest of the params turn out to be.
_STALE_SQL = """
SELECT a.item_id, a.model FROM latest_answers a LEFT JOIN latest_items i USING (item_id)
LEFT JOIN (SELECT item_id, model, max(seq) AS seq, arg_max(params->>'model', seq) AS encoder
           FROM scores WHERE metric = $metric GROUP BY ALL) s USING (item_id, model)
WHERE coalesce(s.seq <= greatest(a.seq, coalesce(i.seq, 0)) OR s.encoder IS DISTINCT FROM $encoder,
               true)
"""


def _surely_due(store: Store, cells: Sequence[_Cell], encoder) -> bool:
    """Whether some scorable cell needs the model whatever the params (so the model's absence
    can be said before the seconds spent importing torch and reading the baseline)."""
    stale = set(store.query(_STALE_SQL, {"metric": _BertScorePass.metric, "encoder": encoder.name}))
    return any((c.item_id, c.model) in stale for c in cells if not (c.blank or c.flagged))


def _locate(encoder) -> None:
    """Raise EncoderUnavailable where the model is neither a directory, nor cached, nor on a hub
    that answers (contam.metrics.bertscore_hub); nothing is imported or loaded for it."""
    from contam.metrics.bertscore import offline_hint
    from contam.metrics.bertscore_hub import locate_model

    locate_model(encoder.model_type, offline_hint())


_TO_COMPUTE = object()  # marker: the baseline comes from shuffled pairs once the model is loaded


def _shards_and_scorer(encoder, documents, options: ScoreOptions):
    """Who scores the shards, and the scorer that names the params: with ``--ray`` its
    precision defaults by, and is checked against, the cluster's actors (GPU or CPU), not this
    machine (a CPU head node may drive GPU workers)."""
    if options.ray is None:
        scorer = make_scorer(encoder, options.device, options.precision, options.token_budget,
                             documents)
        return LocalShards(scorer), scorer
    shards = RayShards(options.ray, encoder, options.token_budget, documents)
    try:
        scorer = make_scorer(encoder, None, options.precision, options.token_budget, documents,
                             remote=shards.device_kind())
    except BaseException:
        shards.close()
        raise
    shards.precision = scorer.precision  # the actors score at the params' precision
    return shards, scorer


def _idf_documents(cells: Sequence[_Cell]) -> list[str]:
    """The idf corpus: one document per answered item, its non-blank reference, by item id."""
    references = {c.item_id: c.reference for c in cells if not is_blank(c.reference)}
    return [references[item] for item in sorted(references)]


def _scorable_pairs(cells: Sequence[_Cell]) -> list[tuple[str, str]]:
    return [(c.answer, c.reference) for c in cells if not (c.blank or c.flagged)]


def _choose_baseline(store: Store, scorer, cells: Sequence[_Cell], options: ScoreOptions):
    """The user's file, else bert-score's shipped file, else one computed earlier for this model
    and layer (reused so that every cell shares it), else one to compute from shuffled pairs."""
    from contam.metrics.bertscore import read_baseline, shipped_baseline, shuffled_pairs

    encoder = scorer.choice
    if not options.rescale:
        return None
    if options.baseline:
        return read_baseline(options.baseline, encoder.layer)
    shipped = shipped_baseline(encoder.model_type, encoder.layer)
    if shipped is not None:
        return shipped
    earlier = _earlier_computed_baseline(store, scorer)
    if earlier is not None:
        return earlier
    shuffled_pairs(_scorable_pairs(cells))  # refuses now, before anything is written
    return _TO_COMPUTE


def _earlier_computed_baseline(store: Store, scorer):
    """The newest baseline computed for the same model, layer and idf weights."""
    from contam.metrics.bertscore import Baseline

    encoder, idf = scorer.choice, scorer.params(None).get("idf_documents")
    rows = store.query(
        "SELECT params FROM scores WHERE metric = ? AND params->>'model' = ? "
        "AND CAST(params->>'layer' AS INTEGER) = ? AND params->>'baseline' LIKE 'computed:%' "
        "AND params->>'idf_documents' IS NOT DISTINCT FROM ? "
        "ORDER BY seq DESC LIMIT 1", [_BertScorePass.metric, encoder.name, encoder.layer, idf])
    if not rows:
        return None
    params = orjson.loads(rows[0][0])  # the exact floats, as they were written
    return Baseline(tuple(params["baseline_values"]), params["baseline"])
