"""The README's table of planted contamination (scripts/plant_experiment.py prints it): per
measure, what it shows on the base model and on each planted dose, from a store's probe
validation part (:mod:`contam.harness.report.parts.validation`). A separating measure reads as its ROC-AUC
with the interval; a share (a probe's flagged or exact-match rate, the density study's accuracy)
as planted vs not-planted; a difference as each side's mean and the AUC."""

from __future__ import annotations

from pathlib import Path

from contam.harness.report.parts.validation import MEASURES, READINGS, build
from contam.harness.store import Store

__all__ = ["markdown_table", "columns"]


def markdown_table(store_path: str | Path) -> str:
    """The table as Markdown, or a line saying the store has no plantings."""
    with Store(store_path, read_only=True) as store:
        part = build(store)
    if not part:
        return f"{store_path}: no plantings"
    heads = columns(part["rows"])
    lines = ["| measure | " + " | ".join(label for label, _ in heads) + " |",
             "|---" * (len(heads) + 1) + "|"]
    for measure, label in MEASURES.items():
        cells = [_cell(measure, _find(part["rows"], measure, key)) for _, key in heads]
        if any(cell != "—" for cell in cells):
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def columns(rows: list[dict]) -> list[tuple[str, tuple]]:
    """(heading, key): the base model (once per format), then each planted dose."""
    seen: dict[tuple, str] = {}
    for row in sorted(rows, key=lambda r: (r["format"], r["role"] != "base", r["epochs"])):
        if row["role"] == "base":
            key = ("base", row["format"], row["model"])
            seen.setdefault(key, f"base ({row['format']} items)")
        else:
            key = ("planted", row["format"], row["model"])
            seen.setdefault(key, f"{row['format']} e{row['epochs']}")
    return [(label, key) for key, label in seen.items()]


def _find(rows: list[dict], measure: tuple, key: tuple) -> dict | None:
    role, format, model = key
    for row in rows:
        if ((row["source"], row["metric"]) == measure and row["role"] == role
                and row["format"] == format and row["model"] == model):
            return row
    return None


def _cell(measure: tuple, row: dict | None) -> str:
    if row is None:
        return "—"
    if row.get("not_applicable"):
        return "not applicable"
    reading = READINGS[measure].reading
    if reading == "share":
        return f"{row['planted_mean']:.0%} vs {row['unplanted_mean']:.0%}"
    auc = f"AUC {row['auc']:.2f} [{row['auc_ci_low']:.2f}, {row['auc_ci_high']:.2f}]"
    if reading == "difference":
        return f"{row['planted_mean']:+.3f} vs {row['unplanted_mean']:+.3f} ({auc})"
    return auc
