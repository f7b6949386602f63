"""The progress display: the rich table's columns, the plain log lines, rates from snapshots."""

from __future__ import annotations

import io
import re
import threading
import time

import pytest
from rich.console import Console

from contam.harness.display import (
    LiveProgress, PlainProgress, RateMeter, open_progress, plain_lines, render_table,
)
from contam.harness.engine.counters import LaneStats


def lanes() -> list[LaneStats]:
    started = time.monotonic() - 10
    running = LaneStats(label="gpt-test", total=400, cap=16, rpm_limit=500, done=120, failed=2,
                        in_flight=16, sent=140, retries=18, rate_limited=3, started=started,
                        cooling_for=lambda: 2.5)
    stopped = LaneStats(label="gemini-test", total=400, cap=8, done=40, sent=41, started=started,
                        stopped="quota", stop_message="the day's quota is used up")
    return [running, stopped]


def rendered(table) -> str:
    console = Console(record=True, width=240, file=io.StringIO())
    console.print(table)
    return console.export_text()


def test_the_table_has_every_column_and_a_totals_row():
    text = rendered(render_table(lanes(), RateMeter()))
    for header in ("model", "progress", "done", "now", "avg", "flight", "rpm", "retry", "429", "cool",
                   "fail", "status"):
        assert header in text
    gpt = next(line for line in text.splitlines() if "gpt-test" in line)
    for cell in ("120/400", "16/16", "/500", "18", "3", "2.5s", "cooling down"):
        assert cell in gpt
    assert "STOPPED: quota" in next(line for line in text.splitlines() if "gemini-test" in line)
    total = next(line for line in text.splitlines() if "total" in line)
    assert "160/800" in total and "16/24" in total
    assert "ETA 23s" in total  # 278 left in the one running lane, at 12 answers/s


def test_plain_lines_give_one_line_per_model_and_a_total():
    lines = plain_lines(lanes(), RateMeter())
    assert len(lines) == 3
    assert lines[0].startswith("gpt-test: 120/400 answered") and "cooling down 2.5s" in lines[0]
    assert lines[0].endswith("cooling down")
    assert "in flight 16/16" in lines[0] and "rpm" in lines[0] and "429s 3" in lines[0]
    assert lines[1].startswith("gemini-test: 40/400") and lines[1].endswith("STOPPED: quota")
    assert lines[2].startswith("total: 160/800 answered") and "ETA" in lines[2]


def test_rates_come_from_snapshots_over_sliding_windows():
    stats = LaneStats(label="m", total=1000, cap=4, started=100.0)
    meter = RateMeter()
    stats.done, stats.sent = 10, 10
    assert meter.sample(stats, 101.0) == (10.0, None)  # no rpm after one second (see below)
    stats.done, stats.sent = 20, 20
    rate_now, rpm_now = meter.sample(stats, 111.0)
    assert rate_now == 1.0  # the last ten seconds only
    assert rpm_now == 60 * 20 / 11  # since the start: less than a minute of history
    assert stats.average_rate(111.0) == 20 / 11


class _Totals(io.StringIO):
    """Output that says when the progress thread has printed its ``total:`` line twice."""

    def __init__(self) -> None:
        super().__init__()
        self.twice = threading.Event()

    def write(self, text: str) -> int:
        written = super().write(text)
        if self.getvalue().count("total:") >= 2:
            self.twice.set()
        return written


def test_plain_progress_prints_periodic_lines_and_a_final_one():
    out = _Totals()
    with PlainProgress(lanes(), out, interval_s=0.02) as progress:
        assert out.twice.wait(timeout=60)  # two periodic rounds, however loaded the machine
        progress.note("gpt-test: STOPPED (auth): HTTP 401")
    text = out.getvalue()
    assert text.count("gpt-test: 120/400") >= 3 and text.count("total:") >= 3  # and the final one
    assert "gpt-test: STOPPED (auth): HTTP 401" in text


def test_open_progress_picks_live_only_on_a_terminal():
    terminal = Console(file=io.StringIO(), force_terminal=True, width=200)
    piped = Console(file=io.StringIO(), force_terminal=False)
    assert isinstance(open_progress(lanes(), console=terminal), LiveProgress)
    assert isinstance(open_progress(lanes(), console=terminal, no_progress=True), PlainProgress)
    assert isinstance(open_progress(lanes(), console=piped), PlainProgress)


def test_the_live_display_renders_to_the_terminal():
    out = io.StringIO()
    terminal = Console(file=out, force_terminal=True, width=240)
    with open_progress(lanes(), console=terminal) as progress:
        progress.note("ollama: Ollama 0.13.0 at http://localhost:11434")
    text = out.getvalue()  # what closing the display draws, whether or not a refresh came first
    assert "gpt-test" in text and "STOPPED: quota" in text and "Ollama 0.13.0" in text


def test_batch_progress_plain_lines_give_the_rate_in_the_task_unit(capsys, monkeypatch):
    import contam.harness.display.batch as batch

    monkeypatch.setattr(batch, "_PLAIN_EVERY_S", 0)
    with batch.BatchProgress(live=False).task("bertscore_f1", 10, "pairs") as advance:
        advance(4)
        advance(3)
        advance(3)  # the last: the job prints its own summary line, not a progress line
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and lines[0] == "bertscore_f1: 4/10 (measuring pairs/s)"
    assert lines[1].startswith("bertscore_f1: 7/10 (")
    assert re.search(r"\([\d,]+ pairs/s, [\d,]+ s left\)$", lines[1]), lines[1]


def test_batch_progress_time_left_comes_from_the_steps_after_the_first(capsys, monkeypatch):
    """A fine-tune's set-up and first step take far longer than the others: the time left is
    what the measured steps say, not the elapsed time over the steps done."""
    import contam.harness.display.batch as batch

    clock = iter([0.0, 100.0, 102.0, 104.0])  # created; the first step ends at 100 s; 2 s a step
    monkeypatch.setattr(batch.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(batch, "_PLAIN_EVERY_S", 0)
    with batch.BatchProgress(live=False).task("plant p", 10, "steps") as advance:
        for _ in range(3):
            advance(1)
    lines = capsys.readouterr().err.splitlines()
    assert lines == ["plant p: 1/10 (measuring steps/s)", "plant p: 2/10 (0.5 steps/s, 16 s left)",
                     "plant p: 3/10 (0.5 steps/s, 14 s left)"]


def test_batch_progress_notes_show_control_characters_as_escapes(capsys):
    from contam.harness.display import BatchProgress

    BatchProgress.note("bertscore_f1: no shipped baseline for evil\x1b[2J\u202emodel")
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\u202e" not in err and err.count("\n") == 1
    assert err.startswith("bertscore_f1: no shipped baseline for evil")


def test_batch_progress_live_bar_shows_the_rate(capsys):
    from contam.harness.display import BatchProgress

    task = BatchProgress(live=True).task("bleu2", 5, "rows")
    with task as advance:
        advance(5)
    shown = task.progress.tasks[0]
    assert shown.completed == 5 and shown.fields["rate"] != "-"


# -- no rate over too short a window, an ETA after Ctrl-C, a replica left out ---------

def test_requests_per_minute_show_only_once_the_lane_has_run_long_enough():
    """`rpm 887/-` after 18 requests: a rate over a second's requests is no rate."""
    from contam.harness.display import RPM_MIN_SPAN_S

    stats = LaneStats(label="m", total=1000, cap=16, rpm_limit=500, started=100.0)
    meter = RateMeter()
    stats.done = stats.sent = 18
    assert meter.sample(stats, 101.2)[1] is None
    assert "rpm -/500," in plain_lines([stats], meter, 101.3)[0]
    row = next(line for line in rendered(render_table([stats], meter, 101.4)).splitlines()
               if line.startswith("m "))
    assert " -/500 " in row and "887" not in row
    stats.sent = 100
    assert meter.sample(stats, 100.0 + RPM_MIN_SPAN_S)[1] == pytest.approx(600.0)


def test_after_ctrl_c_the_eta_gives_way_to_the_requests_still_in_flight():
    """The ETA of items that will never be asked stayed frozen while in-flight requests ran out."""
    stats = lanes()
    meter = RateMeter()
    assert "ETA 23s" in plain_lines(stats, meter)[-1]
    stats[0].interrupted = True
    stats[0].in_flight = 5
    assert plain_lines(stats, meter)[-1].endswith("stopping: 5 in flight")
    stats[0].in_flight = 1
    total = next(line for line in rendered(render_table(stats, meter)).splitlines()
                 if line.startswith("total"))
    assert total.rstrip().endswith("stopping: 1 in flight") and "ETA" not in total


def test_a_replica_left_out_by_its_preflight_has_a_line_saying_so():
    from contam.harness.engine.counters import ReplicaStats

    lane = LaneStats(label="llama", total=10, cap=4, done=2, sent=2)
    lane.replicas = [ReplicaStats(url="http://node1:8000/v1", ok=2),
                     ReplicaStats(url="http://node2:8000/v1", left_out="unreachable")]
    lines = plain_lines([lane], RateMeter())
    assert lines[2] == "llama replica node2:8000/v1  left out (unreachable)"
    assert "node2:8000/v1  left out (unreachable)" in rendered(render_table([lane], RateMeter()))


def test_a_lane_with_no_answer_yet_has_an_unknown_eta():
    stats = [LaneStats(label="m", total=10, cap=4, started=time.monotonic() - 5)]
    assert plain_lines(stats, RateMeter())[-1].endswith("ETA ?")
