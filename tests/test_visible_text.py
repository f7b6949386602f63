"""Control and bidi characters in names (a model's, a file's, a replica's URL) reach the terminal as
escapes, never as the characters themselves: one helper, contam.harness.text.visible, the one `contam sql`
uses, behind the live display, the plain lines, the summary, the log and every refusal line."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from contam.harness.display import PlainProgress, RateMeter, plain_lines, render_table
from contam.harness.emulator.server import run_emulator
from contam.harness.engine.counters import LaneStats, ReplicaStats
from contam.harness.jobs import sql as sql_job
from contam.harness.logs import configure_logging
from contam.harness.text import visible
from tests.runkit import model_entry, run_inprocess, write_config
from tests.test_progress import rendered

HOSTILE = "evil\x1b[31m\u202eterces"  # ESC turns the terminal red; U+202E reverses what follows
RAW = ("\x1b", "\u202e")
SHOWN = r"evil\x1b[31m\u202eterces"


def assert_escaped(text: str) -> None:
    assert not any(char in text for char in RAW), repr(text)
    assert SHOWN in text


def test_visible_escapes_control_format_and_separator_characters():
    assert visible(HOSTILE) == SHOWN
    assert visible("a\u200bb\u2028c\x00d\te") == r"a\u200bb\u2028c\x00d\te"
    assert visible("line\nnext") == "line\nnext"
    assert visible("line\nnext", keep_newlines=False) == r"line\nnext"
    assert visible("Pokémon ━ “quoted”") == "Pokémon ━ “quoted”"
    assert sql_job.visible is visible  # the one helper `contam sql` uses


def hostile_lane() -> LaneStats:
    lane = LaneStats(label=HOSTILE, total=10, cap=2, done=3, sent=4, stopped="fatal",
                     stop_message=f"server said {HOSTILE}")
    lane.replicas = [ReplicaStats(url=f"http://{HOSTILE}:8000/v1", ok=3)]
    return lane


def test_the_live_table_and_plain_lines_show_a_hostile_name_escaped():
    table = rendered(render_table([hostile_lane()], RateMeter()))
    assert_escaped(table)
    assert f"{SHOWN}:8000/v1" in table  # the replica's line
    lines = "\n".join(plain_lines([hostile_lane()], RateMeter()))
    assert_escaped(lines)


def test_a_note_on_the_display_is_one_escaped_line():
    out = io.StringIO()
    PlainProgress([hostile_lane()], out).note(f"{HOSTILE}: STOPPED\nforged line")
    assert_escaped(out.getvalue())
    assert out.getvalue().count("\n") == 1


def test_contam_run_prints_a_hostile_model_name_escaped(tmp_path, keys):
    with run_emulator() as emu:
        config = write_config(tmp_path, [model_entry("openai", emu, name=HOSTILE)], items=2)
        toml_escaped = HOSTILE.replace("\x1b", "\\u001b").replace("\u202e", "\\u202E")
        config.write_text(config.read_text(encoding="utf-8").replace(HOSTILE, toml_escaped),
                          encoding="utf-8")
        configure_logging(1)  # -v: the log on stderr too
        try:
            result = run_inprocess(config, tmp_path / "s.duckdb")
        finally:
            configure_logging(0)
    assert result.status == 0, result.out + result.err
    assert_escaped(result.out)
    assert f"{SHOWN}: 2/2 answered" in result.out  # the summary
    assert_escaped(result.err)  # the -v log
    log = next(tmp_path.glob("s.*.log")).read_text(encoding="utf-8")
    assert_escaped(log)


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_an_import_refusal_names_a_hostile_file_escaped(tmp_path, contam, suffix):
    path = tmp_path / f"{HOSTILE}{suffix}"
    bad = "item_id,title\nq1,T\n" if suffix == ".csv" else '{"item_id": "q1"}\n'
    path.write_text(bad, encoding="utf-8")
    status, out, err = contam("import", "items", path, "--store", tmp_path / "s.duckdb")
    assert status == 2 and out == ""
    assert_escaped(err)
    assert err.startswith("contam import: ") and err.count("\n") == 1
    assert "missing required column" in err


def test_an_import_summary_names_a_hostile_file_escaped(tmp_path, contam):
    path = tmp_path / f"{HOSTILE}.csv"
    path.write_text("item_id,title,subset,question,reference\nq1,T,fan,Q?,R\n", encoding="utf-8")
    status, out, err = contam("import", "items", path, "--store", tmp_path / "s.duckdb")
    assert status == 0, err
    assert_escaped(out)


def test_a_live_note_is_escaped_too():
    console = Console(file=io.StringIO(), force_terminal=True, width=100, color_system=None)
    from contam.harness.display import LiveProgress

    live = LiveProgress([hostile_lane()], console)
    live.note(HOSTILE)
    assert_escaped(console.file.getvalue())
