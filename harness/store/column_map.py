"""``contam import --map item_id=id,question=prompt``: the file's own column names onto contam's.

A map names contam's column first and the file's second. It is checked against the file's columns
before any record is read: a map naming a column the file lacks, or a file that also holds the
contam column a map fills (two columns for one name), is refused in one line naming the file.
A study config's ``[items] map = { item_id = "id" }`` is the same map, read by the same code (its
errors name ``[items] map``). See README.md, "Files you bring".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from contam.harness.declare import flag_of
from contam.harness.errors import InputError, UserError
from contam.harness.jobs.options.store_tools import ImportOptions

__all__ = ["ColumnMap", "parse_column_map", "MAP_FLAG"]

MAP_FLAG = flag_of(ImportOptions, "column_map")  # `contam import`'s flag, as its declaration spells it


@dataclass(frozen=True)
class ColumnMap:
    """contam column -> the file's column; empty: the file already uses contam's names."""

    to_file: dict[str, str] = field(default_factory=dict)
    label: str = MAP_FLAG  # what the errors call the map: the flag, or the config's [items] map

    def rename(self, path: str, line: int | None, names: Sequence[str]) -> list[str]:
        """The file's column names as contam's; refuses a mapped column the file lacks and a
        contam name the file holds beside the column mapped onto it."""
        missing = [source for source in self.to_file.values() if source not in names]
        if missing:
            raise InputError(path, line, f"{self.label} names column {missing[0]!r}, which the file "
                             f"lacks (its columns: {', '.join(names)})")
        return [self._renamed(path, line, name) for name in names]

    def rename_keys(self, values: dict) -> dict:
        """One record's values under contam's names (the columns were checked by :meth:`rename`)."""
        if not self.to_file:
            return values
        from_file = {source: target for target, source in self.to_file.items()}
        return {from_file.get(name, name): value for name, value in values.items()}

    def _renamed(self, path: str, line: int | None, name: str) -> str:
        for target, source in self.to_file.items():
            if name == source:
                return target
        if name in self.to_file:
            raise InputError(path, line, f"{self.label} fills {name!r} from {self.to_file[name]!r}, but "
                             f"the file has a column {name!r} too")
        return name


def parse_column_map(given: str | Mapping[str, str] | None, kind_columns: Sequence[str],
                     kind: str) -> ColumnMap:
    """``item_id=id,question=prompt`` (``--map``) or ``{"item_id": "id"}`` (a config's
    ``[items] map``) -> a :class:`ColumnMap`; a malformed pair, a contam column that ``kind``
    does not have, or one named twice is a one-line error."""
    if isinstance(given, Mapping):
        return _checked(dict(given), kind_columns, kind, "[items] map")
    pairs = [_pair(pair) for pair in (given or "").split(",") if pair.strip()]
    targets = [target for target, _ in pairs]
    twice = next((t for n, t in enumerate(targets) if t in targets[:n]), None)
    if twice:
        raise UserError(f"{MAP_FLAG}: {twice!r} is mapped twice")
    return _checked(dict(pairs), kind_columns, kind, MAP_FLAG)


def _pair(pair: str) -> tuple[str, str]:
    target, sep, source = (part.strip() for part in pair.partition("="))
    if not sep or not target or not source:
        raise UserError(f"{MAP_FLAG}: {pair.strip()!r} is not CONTAM_COLUMN=FILE_COLUMN "
                        f"(e.g. {MAP_FLAG} item_id=id,question=prompt)")
    return target, source


def _checked(to_file: dict[str, str], kind_columns: Sequence[str], kind: str,
             label: str) -> ColumnMap:
    unknown = next((target for target in to_file if target not in kind_columns), None)
    if unknown:
        raise UserError(f"{label}: {unknown!r} is not a column of {kind} "
                        f"({', '.join(kind_columns)})")
    return ColumnMap(to_file, label)
