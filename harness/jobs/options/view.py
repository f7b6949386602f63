"""The options of `contam view`, checked once: where to listen, blind or not, and how the cells
are shared among raters (the web app itself is contam.harness.view)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from contam.harness.declare import flag_of, option
from contam.harness.errors import UserError
from contam.harness.store.raters import ADJUDICATOR, human_rater

__all__ = ["ViewOptions", "rater_name", "rater_names", "DEFAULT_PORT"]

DEFAULT_PORT = 8780
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def rater_names(text: str | None) -> tuple[str, ...]:
    """``--raters alice,bob`` -> ("human:alice", "human:bob"); a name twice is refused."""
    names = tuple(rater_name(n) for n in (text or "").split(",") if n.strip())
    if len(set(names)) != len(names):
        raise UserError(f"{flag_of(ViewOptions, 'raters')} {text!r}: a rater is named twice")
    return names


def rater_name(text: str) -> str:
    """``alice`` or ``human:alice`` -> ``human:alice``; anything else is refused."""
    name = text.strip().removeprefix("human:")
    if not _NAME.fullmatch(name):
        raise UserError(f"rater {text.strip()!r}: a name of letters, digits, '.', '_' or '-' "
                        "(stored as human:NAME)")
    if human_rater(name) == ADJUDICATOR:
        raise UserError(f"rater {text.strip()!r}: {ADJUDICATOR} is the adjudicator's, "
                        "written from the agreement page")
    return human_rater(name)


@dataclass(frozen=True, kw_only=True)
class ViewOptions:
    """``raters`` empty: every rater labels every cell. Otherwise the cells are split among the
    named raters and ``overlap`` of each rater's share also goes to the next one in the list."""

    store: Path
    host: str = option("--host", default="127.0.0.1",
                       help="address to listen on (default 127.0.0.1; any other address still "
                            "needs the token)")
    port: int = option("--port", default=DEFAULT_PORT, type=int,
                       help="TCP port (default 8780; 0 = any free one)")
    blind: bool = option("--unblind", default=True, action="store_false",
                         help="show model, subset and scores while labelling (default: blind)")
    raters: tuple[str, ...] = option(
        "--raters", default=(), cli_default=None, convert=rater_names,
        help="split the cells among these raters, e.g. alice,bob (default: every rater labels "
             "every cell)")
    overlap: float = option(
        "--overlap", default=0.0, type=float, cli_default=None, convert=lambda v: v or 0.0,
        help="with --raters: this fraction of each rater's cells also goes to the next rater, "
             "for agreement (e.g. 0.2)")
    seed: int | None = option("--seed", type=int, help="seed of the cell order of raters who "
                                                       "have none yet (default: a random one, "
                                                       "recorded)")
    new_token: bool = option(
        "--new-token", default=False, action="store_true",
        help="replace the store's access token (kept in STORE.view-token, so that a restart "
             "keeps every link): every link printed before stops working")

    def __post_init__(self) -> None:
        if not 0 <= self.overlap <= 1:
            raise UserError(f"{self._flag('overlap')} {self.overlap}: a fraction between 0 and 1")
        if self.overlap and len(self.raters) < 2:
            raise UserError(f"{self._flag('overlap')} needs {self._flag('raters')} with two or "
                            f"more names (without {self._flag('raters')} every rater labels every "
                            "cell already)")
        if not 0 <= self.port <= 65535:
            raise UserError(f"{self._flag('port')} {self.port}: not a TCP port")

    @staticmethod
    def _flag(name: str) -> str:
        return flag_of(ViewOptions, name)
