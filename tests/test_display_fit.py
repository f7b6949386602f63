"""The live display fits the terminal: narrow widths keep every field, NO_COLOR keeps a readable
bar, slow models show answers per minute, finished rates freeze, the ETA moves smoothly, and a
run with nothing to do is one line."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from contam.harness.display import LaneStats, RateMeter, open_progress, plain_lines, rate_text, render_table

NOW = 1000.0


def four_lanes() -> list[LaneStats]:
    started = NOW - 95
    return [
        LaneStats(label="gpt-emu", total=400, cap=16, rpm_limit=600, done=312, failed=1,
                  in_flight=16, sent=330, retries=18, rate_limited=3, started=started,
                  cooling_for=lambda: 2.5),
        LaneStats(label="gemini-emu", total=400, cap=16, rpm_limit=1200, done=400, sent=401,
                  started=started, finished=NOW - 10),
        LaneStats(label="claude-emu", total=400, cap=8, done=40, sent=41, started=started,
                  stopped="quota", stop_message="the day's quota is used up"),
        LaneStats(label="gemma-emu", total=400, cap=4, done=3, sent=5, retries=7, started=started),
    ]


def shown(width: int | None, *, no_color: bool = False, lanes=None) -> str:
    console = Console(record=True, width=width or 300, file=io.StringIO(), no_color=no_color)
    console.print(render_table(lanes or four_lanes(), RateMeter(), NOW, width=width, ascii_bar=no_color))
    return console.export_text()


@pytest.mark.parametrize("width", [80, 100])
def test_every_field_is_visible_at_80_and_100_columns(width):
    text = shown(width)
    assert max(len(line) for line in text.splitlines()) <= width
    assert "elapsed 1m35s" in text.splitlines()[0]
    per_lane = {"gpt-emu": ["312/400", "16/16", "/600", "18", "3", "2.5s", "1", "cooling down"],
                "gemini-emu": ["400/400", "0/16", "/1200", "done"],
                "claude-emu": ["40/400", "0/8", "STOPPED: quota"],
                "gemma-emu": ["3/400", "0/4", "7", "running"]}
    for label, fields in per_lane.items():
        block = _lane_block(text, label)
        for field in fields:
            assert field in block, (label, field, block)
    assert "ETA" in text and "755/1600" in text


def _lane_block(text: str, label: str) -> str:
    """The lane's line and, when the layout wraps, its indented detail lines."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(label))
    block = [lines[start]]
    for line in lines[start + 1:]:
        if not line.startswith("    "):
            break
        block.append(line)
    return "\n".join(block)


def test_wide_terminals_keep_one_line_per_model_with_a_bar():
    text = shown(200)
    assert len(text.splitlines()) == 1 + 1 + 4 + 2  # title, header, lanes, rule, totals
    assert "━" in _lane_block(text, "gpt-emu")


def test_at_80_columns_each_model_takes_two_lines():
    text = shown(80)
    assert _lane_block(text, "gpt-emu").count("\n") >= 1
    assert "retry 18" in _lane_block(text, "gpt-emu")


def test_no_color_draws_the_bar_with_two_shapes():
    text = shown(120, no_color=True)
    bar = _lane_block(text, "gpt-emu").split()[1]
    assert set(bar) == {"#", "-"} and bar.count("#") == round(len(bar) * 312 / 400)


def test_the_live_display_obeys_no_color(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    out = io.StringIO()
    terminal = Console(file=out, force_terminal=True, width=120)
    with open_progress(four_lanes(), console=terminal):
        pass  # closing the display draws it once, whether or not a refresh came first
    assert "#####" in out.getvalue() and "\x1b[3" not in out.getvalue()  # no colour codes


@pytest.mark.parametrize("per_second, text", [(12.34, "12.3/s"), (1.0, "1.0/s"), (0.5, "30/m"),
                                              (0.05, "3.0/m"), (0.0, "0.0/m")])
def test_slow_rates_are_per_minute(per_second, text):
    assert rate_text(per_second) == text


def test_a_finished_lane_keeps_its_rates():
    stats = LaneStats(label="m", total=100, cap=4, started=0.0)
    meter = RateMeter()
    stats.done = stats.sent = 50
    meter.sample(stats, 5.0)
    stats.done = stats.sent = 100
    stats.finished = 10.0
    at_finish = meter.sample(stats, 10.5)
    assert at_finish[0] == pytest.approx(10.0)  # 50 answers in the last 5 s
    assert meter.sample(stats, 60.0) == meter.sample(stats, 600.0) == at_finish
    assert "done" in plain_lines([stats], meter, 600.0)[0]


def test_the_eta_moves_smoothly_through_a_burst_and_a_pause():
    stats = LaneStats(label="m", total=10_000, cap=8, started=0.0)
    meter = RateMeter()
    etas = []
    for second in range(1, 301):  # 2 answers/s, then a burst of 200, then 20 s of nothing
        stats.done += 200 if second == 200 else (0 if 250 <= second < 270 else 2)
        stats.sent = stats.done
        meter.sample(stats, float(second))
        etas.append((stats.total - stats.done) / meter.eta_rate(stats, float(second)))
    steady = etas[150:]
    for before, after in zip(steady, steady[1:]):
        assert abs(after - before) / before < 0.1  # never a jump of a tenth in one second


def test_nothing_to_do_is_one_line():
    idle = [LaneStats(label="a", total=0, cap=4, started=NOW), LaneStats(label="b", total=0, cap=4)]
    text = shown(80, lanes=idle).strip()
    assert text == "contam: nothing to do (every item already answered by a, b)"
    assert plain_lines(idle, RateMeter()) == ["nothing to do (every item already answered by a, b)"]


def test_very_narrow_terminals_wrap_details_instead_of_cutting_them():
    text = shown(50)
    assert max(len(line) for line in text.splitlines()) <= 50
    assert "fail 1" in _lane_block(text, "gpt-emu") and "cool 2.5s" in _lane_block(text, "gpt-emu")


def test_the_eta_settles_within_seconds_of_the_start():
    """The first refresh sees no answer yet: the ETA must not stay inflated by that start."""
    stats = LaneStats(label="m", total=300, cap=4, started=0.0)
    meter = RateMeter()
    for tick in range(1, 81):  # four refreshes a second for 20 s, half an answer a second
        now = tick / 4
        stats.done = stats.sent = int(now / 2)
        meter.sample(stats, now)
    assert meter.eta_rate(stats, 20.0) == pytest.approx(0.5, rel=0.15)


@pytest.mark.parametrize("width", [80, 100])
def test_after_ctrl_c_the_totals_say_what_is_waited_for_and_still_fit(width):
    lanes = four_lanes()
    for lane in lanes:
        lane.interrupted = lane.finished is None and not lane.stopped
    text = shown(width, lanes=lanes)
    assert max(len(line) for line in text.splitlines()) <= width
    total = next(line for line in text.splitlines() if line.startswith("total"))
    assert "stopping: 16 in flight" in total and "ETA" not in text


class _Terminal(io.StringIO):
    """What print_result sees of a terminal: a tty (its size comes from os.get_terminal_size)."""

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        return 1


SUMMARY = ("claude-refused: 0/200 answered; STOPPED (auth): anthropic model 'claude-refused': "
           "HTTP 401: invalid x-api-key, see https://docs.example.com/errors/authentication-failed")


@pytest.mark.parametrize("width", [80, 100])
def test_summary_lines_wrap_at_words_on_a_terminal(monkeypatch, width):
    """The terminal broke summary lines mid-word at 80 columns."""
    import os

    from contam.harness.cli import print_result
    from contam.harness.jobs.lane_job import JobResult

    monkeypatch.setattr(os, "get_terminal_size", lambda fd: os.terminal_size((width, 24)))
    out, err = _Terminal(), _Terminal()
    result = JobResult(command="run", run_id="r", summary=[SUMMARY], problems=[SUMMARY])
    print_result(result, out, err)
    for text in (out.getvalue(), err.getvalue()):
        lines = text.splitlines()
        assert len(lines) >= 2 and all(len(line) <= width for line in lines)
        assert all(line.startswith("  ") for line in lines[1:])
        assert text.split() == SUMMARY.split()  # no word cut in two


def test_summary_lines_into_a_pipe_stay_whole():
    from contam.harness.cli import print_result
    from contam.harness.jobs.lane_job import JobResult

    out = io.StringIO()
    print_result(JobResult(command="run", run_id="r", summary=[SUMMARY]), out, io.StringIO())
    assert out.getvalue() == SUMMARY + "\n"
