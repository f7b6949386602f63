"""``contam cost``: what the answers in a store cost, synchronous vs batch, at prices you give.

Token counts come from ``latest_answers`` (the providers' own usage figures). Prices are inputs,
in currency units per million tokens, never built in: ``--price MODEL=INPUT,OUTPUT`` (repeatable;
``*`` for every model without its own). The batch price is ``--batch-discount`` (default 0.5, the
discount the three batch APIs advertise) times the synchronous one. ``--items N`` scales each
model's mean tokens per cell to N items (a study the size of the paper's: 400 items x 4 models,
1,600 cells). :func:`cost` returns a :class:`CostResult`; ``contam.harness.cli`` prints its lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from contam.harness.declare import flag_of
from contam.harness.errors import UserError
from contam.harness.jobs.options.cost import CostOptions, parse_price
from contam.harness.store import DEFAULT_STORE, Store

__all__ = ["cost", "CostOptions", "CostResult", "parse_price", "ModelCost", "model_costs"]

_TOKENS_SQL = """
SELECT model, count(*) AS cells, coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0)
FROM latest_answers GROUP BY model ORDER BY model
"""


@dataclass(frozen=True)
class ModelCost:
    model: str
    cells: int
    input_tokens: float
    output_tokens: float
    sync: float | None  # None: no price given for this model
    batch: float | None


def model_costs(store: Store, prices: dict[str, tuple[float, float]], *, discount: float,
                items: int | None) -> list[ModelCost]:
    costs = []
    for model, answered, tokens_in, tokens_out in store.query(_TOKENS_SQL):
        scale = items / answered if items else 1.0
        tokens_in, tokens_out = tokens_in * scale, tokens_out * scale
        price = prices.get(model, prices.get("*"))
        sync = None if price is None else (tokens_in * price[0] + tokens_out * price[1]) / 1e6
        costs.append(ModelCost(model, items or answered, tokens_in, tokens_out, sync,
                               None if sync is None else sync * discount))
    return costs


@dataclass(frozen=True)
class CostResult:
    costs: list[ModelCost]

    def lines(self) -> list[str]:
        """A table: a header, a line per model, and the total of the priced ones."""
        lines = [f"{'model':<24} {'cells':>7} {'input tok':>11} {'output tok':>11} "
                 f"{'synchronous':>12} {'batch':>10}"]
        for c in self.costs:
            money = (f"{c.sync:>12.4f} {c.batch:>10.4f}" if c.sync is not None and c.batch is not None
                     else f"{'no ' + flag_of(CostOptions, 'prices'):>12} {'-':>10}")
            lines.append(f"{c.model:<24} {c.cells:>7} {c.input_tokens:>11.0f} "
                         f"{c.output_tokens:>11.0f} {money}")
        priced = [c for c in self.costs if c.sync is not None and c.batch is not None]
        if priced:
            lines.append(f"{'total':<24} {'':>7} {'':>11} {'':>11} "
                         f"{sum(c.sync or 0 for c in priced):>12.4f} "
                         f"{sum(c.batch or 0 for c in priced):>10.4f}")
        return lines


def cost(*, store: str | Path = DEFAULT_STORE, options: CostOptions | None = None) -> CostResult:
    """``contam cost``: each model's answers in ``store`` priced synchronous and batch."""
    options = options or CostOptions()
    options.check()
    with Store(store, read_only=True) as opened:
        costs = model_costs(opened, dict(options.prices), discount=options.batch_discount,
                            items=options.items)
    if not costs:
        raise UserError(f"{store}: no answers to cost")
    return CostResult(costs)
