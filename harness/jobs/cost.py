"""``contam cost``: what the answers in a store cost, synchronous vs batch, at prices you give.

Token counts come from ``latest_answers`` (the providers' own usage figures). Prices are inputs,
in currency units per million tokens, never built in: ``--price MODEL=INPUT,OUTPUT`` (repeatable;
``*`` for every model without its own). The batch price is ``--batch-discount`` (default 0.5, the
discount the three batch APIs advertise) times the synchronous one. ``--items N`` scales each
model's mean tokens per cell to N items (a study the size of the paper's: 400 items x 4 models,
1,600 cells). :func:`cost` returns a :class:`CostResult`; ``harness.cli`` prints its lines.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import UserError
from harness.store import DEFAULT_STORE, Store

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


def parse_price(text: str) -> tuple[str, float, float]:
    """``MODEL=INPUT,OUTPUT`` -> (model, input price, output price) per million tokens."""
    model, sep, prices = text.partition("=")
    parts = prices.split(",")
    try:
        if not sep or len(parts) != 2 or not model:
            raise ValueError
        input_price, output_price = float(parts[0]), float(parts[1])
    except ValueError:
        raise UserError(f"--price {text!r}: expected MODEL=INPUT,OUTPUT (per million tokens), "
                        "e.g. gpt-5=1.25,10") from None
    if input_price < 0 or output_price < 0:
        raise UserError(f"--price {text!r}: prices cannot be negative")
    return model, input_price, output_price


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


@dataclass(frozen=True, kw_only=True)
class CostOptions:
    prices: Mapping[str, tuple[float, float]] = field(default_factory=dict)  # model or * -> in, out
    batch_discount: float = 0.5  # the batch price as a fraction of the synchronous one
    items: int | None = None  # scale each model to this many items


@dataclass(frozen=True)
class CostResult:
    costs: list[ModelCost]

    def lines(self) -> list[str]:
        """A table: a header, a line per model, and the total of the priced ones."""
        lines = [f"{'model':<24} {'cells':>7} {'input tok':>11} {'output tok':>11} "
                 f"{'synchronous':>12} {'batch':>10}"]
        for c in self.costs:
            money = (f"{c.sync:>12.4f} {c.batch:>10.4f}" if c.sync is not None and c.batch is not None
                     else f"{'no --price':>12} {'-':>10}")
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
    if not 0 < options.batch_discount <= 1:
        raise UserError(f"--batch-discount must be in (0, 1], not {options.batch_discount}")
    if options.items is not None and options.items <= 0:
        raise UserError(f"--items must be a positive number, not {options.items}")
    with Store(store, read_only=True) as opened:
        costs = model_costs(opened, dict(options.prices), discount=options.batch_discount,
                            items=options.items)
    if not costs:
        raise UserError(f"{store}: no answers to cost")
    return CostResult(costs)
