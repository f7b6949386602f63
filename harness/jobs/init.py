"""``contam init DIR``: start a study folder with a ``study.toml`` naming every study key (each
with a one-line comment, the paper's defaults shown; text from :mod:`contam.harness.jobs.init_toml`),
the JSON Schema editors check it against, an ``items.csv`` of the header and two example rows,
and a README with the next five commands. ``--items FILE`` writes the study of that file instead
(no items.csv; :mod:`contam.harness.jobs.init_plan`). It never overwrites: if any of the files is there
already, nothing is written (the keys: ARCHITECTURE.md, "A study's settings").
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from contam.harness.config_reference import SCHEMA_FILE, SCHEMA_NAME
from contam.harness.declare import flag_of
from contam.harness.errors import UserError
from contam.harness.jobs.init_plan import StudyPlan, parse_metrics, plan_study
from contam.harness.jobs.init_toml import study_toml
from contam.harness.jobs.options.store_tools import ImportOptions

__all__ = ["init_study", "StudyFolder", "ITEMS_CSV", "study_readme"]

ITEMS_CSV = '''\
item_id,title,subset,question,reference,log10_pages,released
red-01,Pokémon Red,official,Which Badge does Brock award after his defeat?,Boulder Badge,5.3,1996-02-27
prism-01,Pokémon Prism,fan,In which region is Pokémon Prism set?,Naljo,3.1,2016-12-25
'''

_EXAMPLE_ITEMS = '''`items.csv` holds two example items
(replace them with yours; extra columns are kept, and `log10_pages` and `released` are the ones
`[study] exposure` and `released` name)'''
_OWN_ITEMS = '''its `[items]` table reads your file through the column map
guessed from its names (check it), and offers its numeric and date columns, commented, as
`[study] exposure` and `released`'''
_STUDY_README = '''\
# A contam study

`study.toml` names every study key with its default (each is described in contam's
docs/reference/config.md); {its_items}. Then, in this folder, with your providers' keys set (or the local
model's table uncommented: it needs none):

```bash
{import_line}
contam run study.toml                                  # every model x every unanswered item
contam judge study.toml                                # the LLM judge labels every answer
contam score --store contam.duckdb                     # the metrics of [scoring]
contam report --store contam.duckdb --out report       # report.html/md/json, figures, tables
```

No keys yet? `contam emulator --items {items}{exposure}` serves all four provider APIs on loopback: point
`base_url` at it (see contam's docs/how-to/providers.md, its emulator walkthrough).
'''


def study_readme(plan: StudyPlan) -> str:
    """The folder's README: the next five commands, the import reading the plan's items."""
    mapped = ",".join(f"{k}={v}" for k, v in plan.column_map.items())
    line = f"contam import items {shlex.quote(plan.items)}" + (f" {flag_of(ImportOptions, 'column_map')} {mapped}" if mapped else "")
    line = f"{line} --store contam.duckdb"
    return _STUDY_README.format(
        its_items=_OWN_ITEMS if plan.own_file else _EXAMPLE_ITEMS, items=shlex.quote(plan.items),
        import_line=f"{line:<54} # checked line by line; nothing half-written",
        exposure=f" --exposure {plan.exposure[0]}" if plan.exposure else "")


def _files(plan: StudyPlan) -> dict[str, str]:
    files = {"study.toml": study_toml(plan), SCHEMA_NAME: SCHEMA_FILE.read_text(encoding="utf-8"),
             "items.csv": ITEMS_CSV, "README.md": study_readme(plan)}
    return {name: text for name, text in files.items() if name != "items.csv" or not plan.own_file}


@dataclass(frozen=True)
class StudyFolder:
    folder: Path
    written: tuple[Path, ...]

    def summary(self) -> str:
        names = ", ".join(path.name for path in self.written)
        return f"{self.folder}: wrote {names}; next: cd {self.folder} and see README.md"


def init_study(folder: str | Path, *, items: str | Path | None = None,
               metrics: str | None = None) -> StudyFolder:
    """Write the study files into ``folder`` (made if absent); refuse, writing nothing, if the
    folder is a file or already holds any of them. ``items``: the user's items file;
    ``metrics``: ``exact,contains`` (the paper's when None)."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise UserError(f"{folder} is a file, not a folder")
    files = _files(plan_study(folder, Path(items) if items else None, parse_metrics(metrics)))
    present = [name for name in files if (folder / name).exists() or (folder / name).is_symlink()]
    if present:
        raise UserError(f"{folder / present[0]} exists; init never overwrites "
                        "(choose a new folder)")
    made = not folder.exists()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        return StudyFolder(folder, tuple(_write_all(folder, files)))
    except OSError as exc:
        if made and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()  # the folder this call made, left empty by the failure
        raise UserError(f"cannot write in {folder}: {exc.strerror or exc}") from None


def _write_all(folder: Path, files: dict[str, str]) -> list[Path]:
    """Each file created exclusively (another process may race us); on any failure the files
    this call wrote are removed again, so nothing is half-written."""
    written: list[Path] = []
    try:
        for name, text in files.items():
            with (folder / name).open("x", encoding="utf-8", newline="\n") as handle:
                written.append(folder / name)
                handle.write(text)
    except OSError:
        for path in written:
            path.unlink(missing_ok=True)
        raise
    return written
