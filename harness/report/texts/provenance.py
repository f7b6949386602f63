"""The report's provenance section: what a reader needs to reproduce the numbers — the runs and
their hashes, every imported file with its sha256, the models as served, the raters, the scoring
parameters with how many scores are not NULL, the software versions and the bootstrap's seed —
read from ``report.provenance`` (:mod:`contam.harness.report.parts.provenance`)."""

from __future__ import annotations

from contam.harness.report.model import Report
from contam.harness.report.texts.format import DASH, Section, Table, fmt_params, plural, user

__all__ = ["provenance_section"]


def provenance_section(report: Report) -> Section | None:
    prov = report.provenance
    if not prov:
        return None
    paragraphs = [f"contam {user(prov['contam_version'] or 'version unknown')}; store "
                  f"{user(prov['store'])}. Hashes are sha256 of the stored run config, and of the "
                  "system prompt and question template (answering runs) or of the judge rubric (judge runs), "
                  "and of every imported file's bytes.", *_software(prov, report), *_unhashed(prov)]
    tables = [t for t in (_runs_table(prov), _imports_table(prov), _models_table(prov), _raters_table(prov),
                          _scoring_table(prov)) if t]
    return Section("Provenance", paragraphs, tables)


def _software(prov: dict, report: Report) -> list[str]:
    """The versions that computed this report, and the bootstrap's resamples and seed (the
    min-k probe's interval has its own, :mod:`contam.harness.report.parts.probe_mink`)."""
    software, boot = prov.get("software") or {}, prov.get("bootstrap") or {}
    if not software:
        return []
    versions = ", ".join(f"{'Python' if name == 'python' else name} {version or 'not installed'}"
                         for name, version in software.items())
    min_k = (report.probes or {}).get("min-k")
    own = (f" (the min-k probe's ROC-AUC: percentile, {min_k['resamples']} resamples of each "
           f"subset, seed {min_k['seed']})" if min_k else "")
    return [f"Computed with {user(versions)}. Bootstrap intervals: {boot.get('method', 'BCa')}, "
            f"{boot.get('resamples', '?')} resamples, seed {boot.get('seed', '?')}{own}. The versions "
            "that scored (BERTScore's model, torch, bert-score) are in each metric's parameters below."]


def _unhashed(prov: dict) -> list[str]:
    files = prov.get("unhashed_sources") or []
    if not files:
        return []
    return [f"Imported before contam recorded file hashes, so without a sha256: {user(', '.join(files))}."]


def _imports_table(prov: dict) -> Table | None:
    if not prov.get("imports"):
        return None
    rows = [[r["kind"], r["file"], r["sha256"], str(r["bytes"]), str(r["rows"]), str(r["added"]),
             r["created_at"] or DASH] for r in prov["imports"]]
    return Table(["Kind", "File", "sha256", "Bytes", "Records", "Added", "Imported (UTC)"], rows,
                 f"Every import ({plural(len(rows), 'file')} read); a file imported again adds a row.",
                 "provenance_imports")


def _runs_table(prov: dict) -> Table | None:
    if not prov["runs"]:
        return None
    rows = [[r["run_id"], r["kind"] or DASH, r["started_at"] or DASH, r["finished_at"] or "unfinished",
             r["config_sha256"], r["sha256"] or DASH] for r in prov["runs"]]
    return Table(["Run", "Kind", "Started (UTC)", "Finished (UTC)", "Config sha256", "Prompt / rubric sha256"],
                 rows, "Every run recorded in the store.", "provenance_runs")


def _models_table(prov: dict) -> Table | None:
    if not prov["models"]:
        return None
    rows = [[m["model"], m["provider"] or DASH, ", ".join(m["requested"]) or DASH, _served(m["served"]),
             "; ".join(fmt_params(p) or "provider defaults" for p in m["sampling"]) or DASH,
             str(m["answers"]), *_attempt_cells(m["attempts"])] for m in prov["models"]]
    return Table(["Model", "Provider", "Requested id", "Served ids (answers)", "Sampling", "Answers",
                  "Attempts", "Retries", "Failed attempts"], rows,
                 "Per answering model; attempts of judge runs are not counted here.", "provenance_models")


def _served(served: list[dict]) -> str:
    return "; ".join(f"{s['id']} ({s['answers']})" for s in served) or DASH


def _attempt_cells(attempts: dict) -> list[str]:
    failures = ", ".join(f"{outcome} {n}" for outcome, n in attempts["failures"].items())
    return [str(attempts["attempts"]), str(attempts["retries"]),
            f"{attempts['failed']} ({failures})" if failures else "0"]


def _raters_table(prov: dict) -> Table | None:
    if not prov["raters"]:
        return None
    rows = [[r["rater"], str(r["labels"]), ", ".join(r["rubric_sha256"]) or DASH,
             ", ".join(r["sources"]) or DASH, ", ".join(r["run_ids"]) or DASH] for r in prov["raters"]]
    return Table(["Rater", "Labels", "Rubric sha256", "Imported from", "Judge runs"], rows,
                 name="provenance_raters")


def _scoring_table(prov: dict) -> Table | None:
    if not prov["scoring"]:
        return None
    rows = [[s["metric"], str(s["scores"]), str(s.get("non_null", DASH)), fmt_params(s["params"]) or DASH]
            for s in prov["scoring"]]
    return Table(["Metric", "Scores", "Non-NULL", "Parameters"], rows,
                 "Scoring parameters as stored with each score; NULL is a score that could not be computed "
                 "(a blank answer), so only the non-NULL ones enter any mean.", "provenance_scoring")
