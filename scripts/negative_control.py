"""The negative control's false-alarm rate: how often a base model, which never saw any item,
makes the Probe validation section alarm, over many seeded re-splits of the same scores.

Each re-split draws a planted set with ``contam plant``'s own draw (half of each subset, seeded:
:func:`contam.harness.jobs.plant.choose_planted`) and asks whether the section would alarm on the
base model's scores:

- before (the report up to this change): any measure whose bootstrap AUC interval leaves out 0.5
  (``--intervals``, slow), or, as issue counts went, any measure at uncorrected Mann–Whitney p < 0.05;
- after: any measure whose permutation p, Holm-adjusted over the base model's measures, is below
  0.05 (:func:`contam.harness.report.statistics.permutation_null.alarms`).

The scores are a store's base-model scores (``--store``, the first base model of its Probe
validation section) or, by default, synthetic ones: one score per measure the section knows, for
48 items in two subsets, with no link to any draw (shares as 0/1, the others continuous with ties).

    PYTHONPATH=$PWD python scripts/negative_control.py [--splits 200] [--store S] [--intervals]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from contam.harness.jobs.plant import choose_planted
from contam.harness.report.parts.probe_mink import auc_interval
from contam.harness.report.statistics.named_tests import roc_auc_test
from contam.harness.report.parts.validation import READINGS
from contam.harness.report.statistics.permutation_null import (
    ALPHA, DRAWS, adjust_families, alarms, permutation_null,
)
from contam.metrics.probes import ProbeItem

Scores = dict[tuple[str, str], np.ndarray]


def synthetic_scores(items: int = 48, seed: int = 0) -> tuple[list[str], Scores]:
    """Per measure of the section, one score per item, independent of any planted set: 0/1 for
    a share, else a rounded (so tied) continuous score sharing a factor with its probe's others."""
    rng = np.random.default_rng(seed)
    subsets = ["official" if n % 2 else "fan" for n in range(items)]
    shared = {source: rng.normal(size=items) for source, _ in READINGS}
    scores: Scores = {}
    for (source, metric), measure in READINGS.items():
        if measure.reading == "share":
            scores[(source, metric)] = (rng.random(items) < rng.uniform(0.1, 0.6)).astype(float)
        else:
            scores[(source, metric)] = np.round(shared[source] + rng.normal(size=items), 1)
    return subsets, scores


def store_scores(path: Path) -> tuple[list[str], list[str], Scores]:
    """The first base model's scores in a store's Probe validation section, on the items every
    measure scored: (their ids, their subsets, the scores)."""
    from contam.harness.report.parts import validation
    from contam.harness.store import Store

    with Store(path, read_only=True) as store:
        part = validation.build(store)
        if not part or not any(r["role"] == "base" for r in part["rows"]):
            raise SystemExit(f"{path}: no base model in the Probe validation section")
        base = next(r["model"] for r in part["rows"] if r["role"] == "base")
        found = validation.model_scores(store, [base])[base]
        subsets = validation.item_subsets(store)
    items = sorted(set.intersection(*(set(values) for values in found.values())))
    return (items, [subsets.get(i, "") for i in items],
            {m: np.array([values[i] for i in items]) for m, values in found.items()})


def half_of_each_subset(subsets: Sequence[str], seed: int,
                        ids: Sequence[str] | None = None) -> np.ndarray:
    """A planted set as ``contam plant --share 0.5 --seed SEED`` draws it, by plant's own draw
    (:func:`contam.harness.jobs.plant.choose_planted`): half of each subset. ``ids``: the items'
    ids (plant's draw depends on them), else made up in order."""
    ids = ids or [f"i{n:05d}" for n in range(len(subsets))]
    items = [ProbeItem(item_id=item_id, title="", subset=subset, question="", reference="")
             for item_id, subset in zip(ids, subsets)]
    chosen = {item.item_id for item in choose_planted(items, 0.5, seed)}
    return np.array([item.item_id in chosen for item in items])


def alarms_on(subsets: Sequence[str], scores: Scores, planted: np.ndarray,
              intervals: bool = False, draws: int = DRAWS) -> dict[str, bool]:
    """Whether each rule alarms on the base model for this planted set."""
    rows, before_interval = [], False
    for measure, values in scores.items():
        sign = -1.0 if READINGS[measure].direction == "lower" else 1.0
        turned = sign * values
        auc, p = roc_auc_test(turned, planted)
        if intervals:
            low, high = auc_interval(list(turned[planted]), list(turned[~planted]))
            before_interval |= not low <= 0.5 <= high
        rows.append({"model": "base", "family": "one", "role": "base", "mannwhitney_p": p,
                     **permutation_null(turned, planted, subsets, draws=draws)})
    adjust_families(rows)
    result = {"before: uncorrected Mann–Whitney p < 0.05": any(r["mannwhitney_p"] < ALPHA for r in rows),
              "after: Holm-adjusted permutation p < 0.05": bool(alarms(rows))}
    if intervals:
        result["before: the report's rule, an AUC interval leaving out 0.5"] = before_interval
    return result


def false_alarm_rates(subsets: Sequence[str], scores: Scores, splits: int, *,
                      intervals: bool = False, draws: int = DRAWS,
                      ids: Sequence[str] | None = None) -> dict[str, float]:
    """The share of ``splits`` seeded re-splits (seeds 0..splits-1) on which each rule alarms."""
    counts: dict[str, int] = {}
    for seed in range(splits):
        planted = half_of_each_subset(subsets, seed, ids)
        for rule, alarmed in alarms_on(subsets, scores, planted, intervals, draws).items():
            counts[rule] = counts.get(rule, 0) + alarmed
    return {rule: count / splits for rule, count in counts.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=200)
    parser.add_argument("--store", type=Path)
    parser.add_argument("--intervals", action="store_true",
                        help="also the old rule (bootstrap intervals; slow)")
    args = parser.parse_args()
    ids, subsets, scores = store_scores(args.store) if args.store else (None, *synthetic_scores())
    rates = false_alarm_rates(subsets, scores, args.splits, intervals=args.intervals, ids=ids)
    print(f"{len(scores)} measures, {len(subsets)} items, {args.splits} seeded re-splits, "
          f"permutation null of {DRAWS} draws")
    for rule, rate in rates.items():
        print(f"{rate:6.1%}  {rule}")


if __name__ == "__main__":
    main()
