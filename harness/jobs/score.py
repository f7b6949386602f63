"""`contam score`: BLEU-2 and BERTScore-F1 for every answer not yet scored with the same params.

A cell (item, model) counts as scored for a metric when its latest ``scores`` row for that metric
has exactly the params this pass would write *and* is newer than both the cell's latest answer and
its item's latest reference (rows of every table draw ``seq`` from one sequence). So re-running is
free, changing the model, layer or baseline re-scores, and a corrected answer or reference is
scored again. Rows are appended, never updated; ``latest_scores`` and ``cells`` show the newest.

Blank answers get a NULL row without reaching any metric. An empty reference with a non-empty
answer also gets a NULL row and is counted as flagged (DESIGN: flagged, never guessed).

Python callers (the demo): :func:`score_store` does the whole pass and returns the summaries.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import orjson

from harness.errors import UserError
from harness.store import Store, utc_now
from harness.text import is_blank

__all__ = ["score_command", "score_store", "MetricSummary", "METRICS", "DEFAULT_METRICS"]

# --metric choice -> the metric name stored in `scores.metric`
METRICS = {"bleu2": "bleu2", "bleu2_nltk": "bleu2_nltk", "bertscore": "bertscore_f1"}
DEFAULT_METRICS = ("bleu2", "bertscore")
_WRITE_BATCH = 5000
_PLAIN_EVERY_S = 2.0


@dataclass
class MetricSummary:
    """What one metric's pass did."""

    metric: str
    scored: int = 0
    skipped: int = 0  # already scored with the same params
    null: int = 0  # of the scored: NULL (blank answer or flagged)
    flagged: int = 0  # empty reference with a non-empty answer
    params: dict = field(default_factory=dict)

    def line(self) -> str:
        flagged = f", {self.flagged} flagged (empty reference)" if self.flagged else ""
        return (f"{self.metric}: {self.scored} scored ({self.null} NULL{flagged}), "
                f"{self.skipped} already scored with the same params")


@dataclass(frozen=True)
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

def score_command(args: argparse.Namespace) -> int:
    with Store(args.store) as store:
        summaries = score_store(
            store, args.metric or DEFAULT_METRICS, bertscore_model=args.bertscore_model,
            layer=args.bertscore_layers, rescale=not args.no_rescale, baseline=args.baseline,
            device=args.device, batch_size=args.batch_size,
            progress=not args.no_progress and sys.stderr.isatty())
    for summary in summaries:
        print(summary.line())
    return 0


# -- the pass ---------------------------------------------------------------------------------

def score_store(store: Store, metrics: Iterable[str] = DEFAULT_METRICS, *,
                bertscore_model: str | None = None, layer: int | None = None,
                rescale: bool = True, baseline: str | None = None, device: str | None = None,
                batch_size: int | None = None, progress: bool = False) -> list[MetricSummary]:
    """Score every cell of ``store`` not yet scored with the same params; return one summary per
    metric. ``metrics`` uses the --metric names (bleu2, bleu2_nltk, bertscore). ``baseline`` is a
    bert-score baseline file; without one, bert-score's shipped file is used, else one computed
    from shuffled pairs of the store. Everything that can be refused is refused before a row is
    written."""
    chosen = _check_metrics(metrics)
    options = _BertScoreOptions(bertscore_model, layer, rescale, baseline, device, batch_size)
    if baseline and not rescale:
        raise UserError("--baseline and --no-rescale contradict each other")
    cells = _read_cells(store)
    passes = [_BertScorePass(store, cells, options) if name == "bertscore" else
              _SurfacePass(name, store, cells) for name in chosen]  # every check happens here
    reporter = _Reporter(progress)
    return [run(store, reporter) for run in passes]


@dataclass(frozen=True)
class _BertScoreOptions:
    model: str | None
    layer: int | None
    rescale: bool
    baseline_file: str | None
    device: str | None
    batch_size: int | None


def _check_metrics(metrics: Iterable[str]) -> list[str]:
    chosen = list(dict.fromkeys(metrics))  # keep order, drop repeats
    unknown = [m for m in chosen if m not in METRICS]
    if unknown:
        raise UserError(f"unknown metric {unknown[0]!r} (choose from {', '.join(METRICS)})")
    if "bleu2_nltk" in chosen:
        try:
            import nltk  # noqa: F401
        except ImportError as exc:
            raise UserError("metric bleu2_nltk needs nltk (pip install nltk)") from exc
    return chosen


def _read_cells(store: Store) -> list[_Cell]:
    rows = store.query(
        "SELECT a.item_id, a.model, a.answer, i.reference, greatest(a.seq, coalesce(i.seq, 0)) "
        "FROM latest_answers a LEFT JOIN latest_items i USING (item_id) "
        "ORDER BY a.item_id, a.model")
    return [_Cell(*row) for row in rows]


def _params_json(params: dict) -> str:
    return orjson.dumps(params, option=orjson.OPT_SORT_KEYS).decode()


def _pending(store: Store, cells: Sequence[_Cell], metric: str, params: dict) -> list[_Cell]:
    """Cells whose latest score for ``metric`` is missing, has other params, or predates the
    cell's answer or reference."""
    wanted = orjson.loads(_params_json(params))
    latest = {(item, model): (seq, stored) for item, model, seq, stored in store.query(
        "SELECT item_id, model, seq, params FROM latest_scores WHERE metric = ?", [metric])}
    return [cell for cell in cells if not _up_to_date(latest.get((cell.item_id, cell.model)),
                                                      cell, wanted)]


def _up_to_date(latest: tuple[int, str | None] | None, cell: _Cell, wanted: dict) -> bool:
    if latest is None:
        return False
    seq, stored = latest
    return seq > cell.source_seq and stored is not None and orjson.loads(stored) == wanted


def _rows(metric: str, params: dict, cells: Sequence[_Cell],
          values: Sequence[float | None]) -> list[dict]:
    params_json, now = _params_json(params), utc_now()
    return [{"item_id": c.item_id, "model": c.model, "metric": metric, "value": v,
             "params": params_json, "created_at": now} for c, v in zip(cells, values)]


def _append(store: Store, rows: list[dict]) -> None:
    with store.transaction():
        store.append("scores", rows)


class _SurfacePass:
    """BLEU-2 (ours or NLTK's): cheap, computed in one call, written in batches."""

    def __init__(self, name: str, store: Store, cells: Sequence[_Cell]) -> None:
        from metrics import bleu

        self.metric = METRICS[name]
        self.score_many = bleu.bleu2_nltk_many if name == "bleu2_nltk" else bleu.bleu2_many
        self.params = bleu.bleu2_nltk_params() if name == "bleu2_nltk" else bleu.BLEU2_PARAMS
        self.todo = _pending(store, cells, self.metric, self.params)
        self.summary = MetricSummary(self.metric, skipped=len(cells) - len(self.todo),
                                     params=self.params)

    def __call__(self, store: Store, reporter: "_Reporter") -> MetricSummary:
        values = self.score_many([(c.answer, c.reference) for c in self.todo])
        with reporter.task(self.metric, len(self.todo)) as advance:
            for start in range(0, len(self.todo), _WRITE_BATCH):
                batch = slice(start, start + _WRITE_BATCH)
                _append(store, _rows(self.metric, self.params, self.todo[batch], values[batch]))
                advance(len(self.todo[batch]))
        return _tally(self.summary, self.todo, null=sum(v is None for v in values))


def _tally(summary: MetricSummary, cells: Sequence[_Cell], *, null: int) -> MetricSummary:
    summary.scored, summary.null = len(cells), null
    summary.flagged = sum(c.flagged for c in cells)
    return summary


class _BertScorePass:
    """BERTScore-F1: one scorer, the baseline chosen before anything is written, chunks written
    as they are scored (an interrupted pass keeps every finished chunk)."""

    metric = METRICS["bertscore"]

    def __init__(self, store: Store, cells: Sequence[_Cell], options: _BertScoreOptions) -> None:
        from metrics.bertscore import BertScore, resolve_encoder

        self.cells = cells
        self.scorer = BertScore(resolve_encoder(options.model, options.layer),
                                device=options.device, batch_size=options.batch_size)
        self.baseline = _choose_baseline(store, self.scorer, cells, options)
        self.todo = self._todo(store)
        if self.todo is None or any(not (c.blank or c.flagged) for c in self.todo):
            self.scorer.load()  # now: a model that cannot load writes nothing at all

    def _todo(self, store: Store) -> list[_Cell] | None:
        """None while the params are unknown (a baseline still to compute): then all is due."""
        if self.baseline is _TO_COMPUTE:
            return None
        return _pending(store, self.cells, self.metric, self.scorer.params(self.baseline))

    def __call__(self, store: Store, reporter: "_Reporter") -> MetricSummary:
        if self.baseline is _TO_COMPUTE:
            reporter.note(f"{self.metric}: no shipped baseline for {self.scorer.encoder.name} "
                          f"layer {self.scorer.encoder.layer}; computing one from shuffled pairs")
            self.baseline = self.scorer.baseline_from_pairs(_scorable_pairs(self.cells))
            self.todo = self._todo(store)
        params = self.scorer.params(self.baseline)
        summary = MetricSummary(self.metric, skipped=len(self.cells) - len(self.todo),
                                params=params)
        unscorable = [c for c in self.todo if c.blank or c.flagged]
        scorable = [c for c in self.todo if not (c.blank or c.flagged)]
        with reporter.task(self.metric, len(self.todo)) as advance:
            self._write_nulls(store, params, unscorable, advance)
            self._write_scores(store, params, scorable, advance)
        return _tally(summary, self.todo, null=len(unscorable))

    def _write_nulls(self, store, params, cells, advance) -> None:
        if cells:
            _append(store, _rows(self.metric, params, cells, [None] * len(cells)))
            advance(len(cells))

    def _write_scores(self, store, params, cells, advance) -> None:
        pairs = [(c.answer, c.reference) for c in cells]
        for indices, values in self.scorer.f1_chunks(pairs, self.baseline):
            _append(store, _rows(self.metric, params, [cells[i] for i in indices], values))
            advance(len(indices))


_TO_COMPUTE = object()  # marker: the baseline comes from shuffled pairs once the model is loaded


def _scorable_pairs(cells: Sequence[_Cell]) -> list[tuple[str, str]]:
    return [(c.answer, c.reference) for c in cells if not (c.blank or c.flagged)]


def _choose_baseline(store: Store, scorer, cells: Sequence[_Cell], options: _BertScoreOptions):
    """The user's file, else bert-score's shipped file, else one computed earlier for this model
    and layer (reused so that every cell shares it), else one to compute from shuffled pairs."""
    from metrics.bertscore import read_baseline, shipped_baseline, shuffled_pairs

    encoder = scorer.encoder
    if not options.rescale:
        return None
    if options.baseline_file:
        return read_baseline(options.baseline_file, encoder.layer)
    shipped = shipped_baseline(encoder.model_type, encoder.layer)
    if shipped is not None:
        return shipped
    earlier = _earlier_computed_baseline(store, encoder)
    if earlier is not None:
        return earlier
    shuffled_pairs(_scorable_pairs(cells))  # refuses now, before anything is written
    return _TO_COMPUTE


def _earlier_computed_baseline(store: Store, encoder):
    from metrics.bertscore import Baseline

    rows = store.query(
        "SELECT params FROM scores WHERE metric = ? AND params->>'model' = ? "
        "AND CAST(params->>'layer' AS INTEGER) = ? AND params->>'baseline' LIKE 'computed:%' "
        "ORDER BY seq DESC LIMIT 1", [METRICS["bertscore"], encoder.name, encoder.layer])
    if not rows:
        return None
    params = orjson.loads(rows[0][0])  # the exact floats, as they were written
    return Baseline(tuple(params["baseline_values"]), params["baseline"])


# -- progress ---------------------------------------------------------------------------------

class _Reporter:
    """A rich progress bar on a terminal; otherwise a plain line every few seconds."""

    def __init__(self, live: bool) -> None:
        self.live = live

    def task(self, metric: str, total: int) -> "_Task":
        return _RichTask(metric, total) if self.live and total else _PlainTask(metric, total)

    @staticmethod
    def note(message: str) -> None:
        print(message, file=sys.stderr, flush=True)


class _Task:
    def __enter__(self) -> Callable[[int], None]:
        return self.advance

    def __exit__(self, *exc: object) -> None:
        pass

    def advance(self, n: int) -> None:
        raise NotImplementedError


class _PlainTask(_Task):
    def __init__(self, metric: str, total: int) -> None:
        self.metric, self.total, self.done = metric, total, 0
        self.started = self.last = time.monotonic()

    def advance(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if now - self.last >= _PLAIN_EVERY_S and self.done < self.total:
            self.last = now
            rate = self.done / max(now - self.started, 1e-9)
            print(f"{self.metric}: {self.done}/{self.total} ({rate:.0f}/s)", file=sys.stderr,
                  flush=True)


class _RichTask(_Task):
    def __init__(self, metric: str, total: int) -> None:
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeElapsedColumn, TimeRemainingColumn)

        self.progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
                                 console=Console(stderr=True))
        self.task_id = self.progress.add_task(metric, total=total)

    def __enter__(self) -> Callable[[int], None]:
        self.progress.start()
        return self.advance

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def advance(self, n: int) -> None:
        self.progress.advance(self.task_id, n)
