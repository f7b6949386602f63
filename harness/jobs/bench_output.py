"""How `contam bench` shows its report: JSON on stdout, or a rich table and a few plain lines."""

from __future__ import annotations

from typing import Any

import orjson
from rich.console import Console
from rich.table import Table

__all__ = ["print_report", "models_table", "summary_lines"]

_COLUMNS = [("model", "model"), ("req", "requests"), ("ok", "ok"), ("429s", "rate_limited"),
            ("failed", "failed"), ("retries", "retries"), ("wall s", "wall_s"),
            ("req/s", "requests_per_s"), ("p50 s", "latency_p50_s"), ("p95 s", "latency_p95_s"),
            ("p99 s", "latency_p99_s"), ("RPM", "achieved_rpm"), ("limit", "rpm_limit")]


def print_report(report: dict[str, Any], fmt: str, console: Console | None = None) -> None:
    if fmt == "json":
        print(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode())
        return
    if console is None:
        console = Console()
        if not console.is_terminal:  # a pipe or a file: wide enough for every column
            console = Console(width=160)
    console.print(models_table(report))
    for line in summary_lines(report):
        console.print(line, markup=False, highlight=False)


def models_table(report: dict[str, Any]) -> Table:
    table = Table(title=f"contam bench ({report['mode']})", title_justify="left")
    columns = list(_COLUMNS)
    if any(row.get("stopped") for row in report["models"]):
        columns.append(("stopped", "stopped"))
    for title, key in columns:
        table.add_column(title, justify="left" if key in ("model", "stopped") else "right")
    for row in report["models"]:
        table.add_row(*(_cell(row[key]) for _, key in columns))
    return table


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.0f}" if abs(value) >= 100 else f"{value:.1f}" if abs(value) >= 10 else f"{value:.3f}"
    return str(value)


def summary_lines(report: dict[str, Any]) -> list[str]:
    harness, floor, machine = report["harness"], report["floor"], report["machine"]
    lines = [f"harness: {harness['ok']}/{harness['requests']} answered in {harness['wall_s']:g} s, "
             f"CPU {harness['cpu_s']:g} s = {harness['cpu_per_request_ms']:g} ms per request, "
             f"peak RSS {harness['peak_rss_mb']:g} MB"]
    if harness["latency_floor_s"]:
        lines.append(f"latency floor ceil(requests / concurrency) x latency = "
                     f"{harness['latency_floor_s']:g} s; harness wall / floor = "
                     f"{harness['wall_over_floor']:g}")
    if floor:
        lines.append(f"bare httpx loop: {floor['ok']}/{floor['requests']} in {floor['wall_s']:g} s "
                     f"(wall / floor {floor['wall_over_floor']:g}), CPU {floor['cpu_s']:g} s = "
                     f"{floor['cpu_per_request_ms']:g} ms per request")
        lines.append(f"harness / bare: CPU per request x{floor['cpu_ratio']:g}, "
                     f"wall x{floor['wall_ratio']:g}")
    server = report.get("emulator_cpu_s") or {}
    if server.get("harness_phase") is not None:
        lines.append(f"emulator process CPU: {server['harness_phase']:g} s serving the harness"
                     + (f", {server['bare_phase']:g} s serving the bare loop"
                        if server.get("bare_phase") is not None else ""))
    lines.append(f"machine: {machine['cpus']} CPUs ({machine['cpu_model']}), Python "
                 f"{machine['python']}, load average {machine['load_avg_before']} before, "
                 f"{machine['load_avg_after']} after")
    if report.get("store"):
        lines.append(f"bench store: {report['store']} (runs.kind = 'bench')")
    return lines
