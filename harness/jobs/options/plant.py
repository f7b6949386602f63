"""The options of `contam plant`, and their checks."""

from __future__ import annotations

import re
from dataclasses import MISSING, dataclass

from contam.harness.declare import flag_of, option, progress_option
from contam.harness.errors import UserError

__all__ = ["PlantOptions", "FORMATS", "DEFAULT_LEARNING_RATE", "DEFAULT_BATCH_SIZE",
           "DEFAULT_MAX_LENGTH"]

DEFAULT_LEARNING_RATE = 1e-4
DEFAULT_BATCH_SIZE = 4
DEFAULT_MAX_LENGTH = 256
FORMATS = ("text", "qa")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")


def _epochs(text: str) -> tuple[int, ...]:
    """``--epochs 1,3,10`` -> (1, 3, 10)."""
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise UserError(f"{flag_of(PlantOptions, 'epochs')} must be whole numbers, "
                        f"not {text!r}") from None


@dataclass(frozen=True, kw_only=True)
class PlantOptions:
    """``contam plant``'s arguments (the config and the store aside)."""

    model: str = option("--model", default=MISSING, required=True,
                        help="the configured model to fine-tune (provider = \"local\")")
    name: str = option("--as", default=MISSING, required=True, metavar="NEW",
                       help="the planted model's name: use it as model = \"planted:NEW\" "
                            "(NEW-e1, NEW-e3, ... with several --epochs)")
    share: float = option("--share", default=0.5, type=float,
                          help="share of each subset's items planted (default 0.5)")
    epochs: tuple[int, ...] = option(
        "--epochs", default=(3,), cli_default="3", convert=_epochs,
        help="epochs, or a list (1,3,10) for one model per dose (default 3)")
    format: str = option("--format", default="text", choices=FORMATS,
                         help="text: the min-k text (pre-training style); qa: question and "
                              "reference in the chat template (default text)")
    seed: int = option("--seed", default=0, type=int,
                       help="draws the items and seeds training (default 0)")
    device: str = option("--device", default="cpu", help="cpu (fp32, default) or cuda (bf16)")
    learning_rate: float = option("--lr", default=DEFAULT_LEARNING_RATE, type=float,
                                  help="AdamW's constant learning rate (default 1e-4)")
    batch_size: int = option("--batch-size", default=DEFAULT_BATCH_SIZE, type=int,
                             help="sequences per step (default 4)")
    max_length: int = option("--max-length", default=DEFAULT_MAX_LENGTH, type=int,
                             help="tokens kept of each sequence (default 256)")
    progress: bool = progress_option()

    def check(self) -> None:
        """Every argument checked before anything is read or trained: one line each."""
        for name, wanted in _WANTED.items():
            if not _FITS[name](self):
                raise UserError(f"{flag_of(PlantOptions, name)} must be {wanted}")


_FITS = {
    "name": lambda o: _NAME.fullmatch(o.name), "share": lambda o: 0 < o.share < 1,
    "epochs": lambda o: o.epochs and all(e >= 1 for e in o.epochs),
    "format": lambda o: o.format in FORMATS, "learning_rate": lambda o: o.learning_rate > 0,
    "batch_size": lambda o: o.batch_size >= 1, "max_length": lambda o: o.max_length >= 8,
    "device": lambda o: o.device == "cpu" or o.device.startswith("cuda"),
}
_WANTED = {"name": "a name of letters, digits, '.', '_' or '-'",
           "share": "a fraction between 0 and 1", "epochs": "whole numbers >= 1",
           "format": "text or qa", "learning_rate": "a number > 0", "batch_size": "a number >= 1",
           "max_length": "a number >= 8", "device": "cpu or cuda"}
