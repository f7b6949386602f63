"""What `contam view` is started with, checked once: the store, where to listen, blind or not,
and how the cells are shared among raters."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from harness.errors import UserError
from harness.store.raters import ADJUDICATOR, human_rater

__all__ = ["ViewOptions", "view_options", "rater_name", "DEFAULT_PORT"]

DEFAULT_PORT = 8780
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


@dataclass(frozen=True, kw_only=True)
class ViewOptions:
    """``raters`` empty: every rater labels every cell. Otherwise the cells are split among the
    named raters and ``overlap`` of each rater's share also goes to the next one in the list."""

    store: Path
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    blind: bool = True
    overlap: float = 0.0
    raters: tuple[str, ...] = ()
    seed: int | None = None


def view_options(*, store: str | Path, host: str = "127.0.0.1", port: int = DEFAULT_PORT,
                 unblind: bool = False, overlap: float | None = None, raters: str | None = None,
                 seed: int | None = None) -> ViewOptions:
    """The command line's values as checked options; a bad value is one UserError line."""
    names = tuple(rater_name(n) for n in (raters or "").split(",") if n.strip())
    if len(set(names)) != len(names):
        raise UserError(f"--raters {raters!r}: a rater is named twice")
    if overlap is not None and not 0 <= overlap <= 1:
        raise UserError(f"--overlap {overlap}: a fraction between 0 and 1")
    if overlap and len(names) < 2:
        raise UserError("--overlap needs --raters with two or more names (without --raters "
                        "every rater labels every cell already)")
    if not 0 <= port <= 65535:
        raise UserError(f"--port {port}: not a TCP port")
    return ViewOptions(store=Path(store), host=host, port=port, blind=not unblind,
                       overlap=overlap or 0.0, raters=names, seed=seed)


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
