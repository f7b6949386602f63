"""The options of `contam cost`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from contam.harness.declare import option
from contam.harness.errors import UserError

__all__ = ["CostOptions", "parse_price", "parse_prices"]


@dataclass(frozen=True, kw_only=True)
class CostOptions:
    prices: Mapping[str, tuple[float, float]] = option(  # model or * -> input, output
        "--price", factory=dict, action="append", metavar="MODEL=IN,OUT", cli_default=None,
        convert=lambda texts: parse_prices(texts or []),
        help="price per million input and output tokens; repeatable; MODEL * for all")
    batch_discount: float = option(  # the batch price as a fraction of the synchronous one
        "--batch-discount", default=0.5, type=float,
        help="batch price as a fraction of the synchronous one (default 0.5)")
    items: int | None = option(  # scale each model to this many items
        "--items", type=int,
        help="scale each model to N items (the paper: 400 items x 4 models = 1,600 cells)")

    def check(self) -> None:
        """A discount that is a fraction and a positive number of items, or one line why not."""
        if not 0 < self.batch_discount <= 1:
            raise UserError(f"--batch-discount must be in (0, 1], not {self.batch_discount}")
        if self.items is not None and self.items <= 0:
            raise UserError(f"--items must be a positive number, not {self.items}")


def parse_prices(texts: list[str]) -> dict[str, tuple[float, float]]:
    """Each ``--price MODEL=IN,OUT`` into model -> (input, output) per million tokens."""
    return {model: (i, o) for model, i, o in map(parse_price, texts)}


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
