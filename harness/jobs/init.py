"""``contam init DIR``: start a study folder with a ``study.toml`` naming every study key (each
with a one-line comment, the paper's defaults shown), an ``items.csv`` of the header and two
example rows, and a README with the next five commands. It never overwrites: if any of the three
files is there already, nothing is written (the keys: ARCHITECTURE.md, "A study's settings").
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.errors import UserError

__all__ = ["init_study", "StudyFolder", "STUDY_TOML", "ITEMS_CSV", "STUDY_README"]

STUDY_TOML = '''\
# A contam study. Paths are relative to this file; every key below is optional but models.
store = "contam.duckdb"                 # the study's append-only DuckDB store (--store overrides)
items = "items.csv"                     # item_id,title,subset,question,reference + your own columns

[study]
name = "contam"                         # the benchmark's name in guided prompting's instruction
subsets = ["official", "fan"]           # tiers in order of expected exposure: accuracy and trend
exposure = "log10_pages"                # a numeric item column: the report's Exposure section
released = "released"                   # an ISO-date item column: before/after each model's cutoff

[prompt]
system = "Answer from memory only. Do not look anything up. Reply with a bare 1-2 sentence answer."  # the paper's
# user = "Game: {title}\\nQuestion: {question}" # {column}s of the item's own columns; unset: the paper's bytes

[probes]
# text = "{title}\\n{question}\\n{reference}"    # the text min-k scores; unset: this, each part stripped

[scoring]
metrics = ["bleu2", "bertscore_f1"]     # the paper's; also exact, contains, numeric and regex
numeric_tolerance = 1e-6                # relative tolerance of the numeric metric
# regex = "answer is (\\\\w+)"            # the regex metric: group 1 of the first match, then exact

[[models]]
name = "gpt-5.6-sol"                    # the label stored in `model`
provider = "openai"                     # openai | gemini | anthropic | ollama | local
model = "gpt-5.6-sol"                   # the provider's model id (key: OPENAI_API_KEY)
cutoff = "2024-06-30"                   # its training cut-off, for the released contrast
rpm = 500                               # request bucket
concurrency = 16                        # requests in flight

[judge]
provider = "anthropic"                  # the LLM judge of `contam judge` (key: ANTHROPIC_API_KEY)
model = "claude-sonnet-5"               # its model id
# rubric = "rubric.txt"                 # your rubric naming right/partially right/wrong; default the paper's
'''

ITEMS_CSV = '''\
item_id,title,subset,question,reference,log10_pages,released
red-01,Pokémon Red,official,Which Badge does Brock award after his defeat?,Boulder Badge,5.3,1996-02-27
prism-01,Pokémon Prism,fan,In which region is Pokémon Prism set?,Naljo,3.1,2016-12-25
'''

STUDY_README = '''\
# A contam study

`study.toml` names every study key with its default; `items.csv` holds two example items
(replace them with yours; extra columns are kept, and `log10_pages` and `released` are the ones
`[study] exposure` and `released` name). Then, in this folder, with your providers' keys set:

```bash
contam import items items.csv --store contam.duckdb   # checked line by line; nothing half-written
contam run study.toml                                  # every model x every unanswered item
contam judge study.toml                                # the LLM judge labels every answer
contam score --store contam.duckdb                     # the metrics of [scoring]
contam report --store contam.duckdb --out report       # report.html/md/json, figures, tables
```

No keys yet? `contam emulator --items items.csv --exposure log10_pages` serves all four provider
APIs on loopback: point `base_url` at it (see contam's docs/how-to/providers.md, its emulator walkthrough).
'''

_FILES = {"study.toml": STUDY_TOML, "items.csv": ITEMS_CSV, "README.md": STUDY_README}


@dataclass(frozen=True)
class StudyFolder:
    folder: Path
    written: tuple[Path, ...]

    def summary(self) -> str:
        names = ", ".join(path.name for path in self.written)
        return f"{self.folder}: wrote {names}; next: cd {self.folder} and see README.md"


def init_study(folder: str | Path) -> StudyFolder:
    """Write the study files into ``folder`` (made if absent); refuse, writing nothing, if the
    folder is a file or already holds any of them."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise UserError(f"{folder} is a file, not a folder")
    present = [name for name in _FILES if (folder / name).exists() or (folder / name).is_symlink()]
    if present:
        raise UserError(f"{folder / present[0]} exists; init never overwrites "
                        "(choose a new folder)")
    made = not folder.exists()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        return StudyFolder(folder, tuple(_write_all(folder)))
    except OSError as exc:
        if made and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()  # the folder this call made, left empty by the failure
        raise UserError(f"cannot write in {folder}: {exc.strerror or exc}") from None


def _write_all(folder: Path) -> list[Path]:
    """Each file created exclusively (another process may race us); on any failure the files
    this call wrote are removed again, so nothing is half-written."""
    written: list[Path] = []
    try:
        for name, text in _FILES.items():
            with (folder / name).open("x", encoding="utf-8", newline="\n") as handle:
                written.append(folder / name)
                handle.write(text)
    except OSError:
        for path in written:
            path.unlink(missing_ok=True)
        raise
    return written
