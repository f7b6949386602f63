"""The README's screenshots of `contam view`: the blind label page and the browse page at
1280x800 and at 390x844 (a phone), and a cell's page and the agreement page at 390 px, whole,
in headless chromium.

    .venv/bin/python scripts/view_screenshots.py [--out docs]

The store is built from the bundled demo items (harness/data/demo_items.csv) with three models'
answers written for the picture (one right, one partly right, one declining), scores and a judge,
and two raters' labels on some of them; the first cell's attempts are a 429, its answer and the
judge's call.
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from contam.harness.store import Store, utc_now  # noqa: E402
from viewserver import ViewServer, chromium  # noqa: E402  (scripts/viewserver.py)

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("gpt-5.6-sol", "claude-opus-5", "gemma-4-31b")


def answers_for(item: dict[str, str]) -> list[tuple[str, str, str]]:
    """(model, answer, judge label) of the three models for one item."""
    reference = item["reference"]
    first = reference.split(",")[0].split(" or ")[0].strip().rstrip(".")
    if item["subset"] == "fan":
        return [(MODELS[0], f"I believe it is {first}.", "right"),
                (MODELS[1], "I'm not familiar with that ROM hack, so I can't say.", "wrong"),
                (MODELS[2], f"It is {first}, though I may be mixing it up with the original.", "partial")]
    return [(MODELS[0], f"{reference}.", "right"), (MODELS[1], f"It's {first}.", "partial"),
            (MODELS[2], "Professor Oak gives it to you in Viridian City.", "wrong")]


def build_store(path: Path) -> None:
    with open(ROOT / "harness" / "data" / "demo_items.csv", newline="", encoding="utf-8") as handle:
        items = list(csv.DictReader(handle))
    now = utc_now()
    rows = [(item, model, text, judge) for item in items for model, text, judge in answers_for(item)]
    with Store(path, create=True) as store, store.transaction():
        columns = ("item_id", "title", "subset", "question", "reference")
        store.append("items", [{k: item[k] for k in columns} | {"added_at": now} for item in items])
        store.append("answers", [{"run_id": "demo", "item_id": item["item_id"], "model": model,
                                  "provider": "openai", "answer_raw": text, "answer": text,
                                  "created_at": now} for item, model, text, _ in rows])
        store.append("scores", [{"item_id": item["item_id"], "model": model, "metric": metric,
                                 "value": value, "params": "{}"}
                                for n, (item, model, _, judge) in enumerate(rows)
                                for metric, value in (("bleu2", (0.62, 0.21, 0.04)[n % 3]),
                                                      ("bertscore_f1", (0.71, 0.44, 0.18)[n % 3]))])
        store.append("labels", [{"item_id": item["item_id"], "model": model, "label": judge,
                                 "rater": "judge:claude-sonnet-5", "created_at": now}
                                for item, model, _, judge in rows])
        store.append("labels", [{"item_id": item["item_id"], "model": model, "rater": rater,
                                 "label": label, "created_at": now}
                                for n, (item, model, _, judge) in enumerate(rows[:24])
                                for rater, label in (("human:ann", judge),
                                                     ("human:bo", judge if n % 5 else "partial"))])
        store.append("runs", [{"run_id": "demo", "kind": "run", "started_at": now, "config": "{}"},
                              {"run_id": "judging", "kind": "judge", "started_at": now,
                               "config": '{"judge": {"name": "claude-sonnet-5"}}'}])
        store.append("attempts", [
            {"run_id": run, "item_id": items[0]["item_id"], "model": MODELS[0], "attempt": attempt,
             "started_at": now, "latency_s": latency, "outcome": outcome, "http_status": status,
             "error": error}
            for run, attempt, latency, outcome, status, error in (
                ("demo", 1, 0.31, "rate_limited", 429, "429 Too Many Requests: rate limit of "
                 "500 requests per minute reached; retry after 2 s"),
                ("demo", 2, 1.84, "ok", 200, None), ("judging", 1, 0.52, "ok", 200, None))])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "docs"))
    out = Path(parser.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "demo.duckdb"
        build_store(store)
        with ViewServer(store, "--seed", "3") as view, chromium() as driver:
            driver.get(view.url)
            for width, height, names in ((1280, 800, ("label", "browse")),
                                         (390, 844, ("label", "browse", "cell", "agree"))):
                for name in names:
                    whole = name in WHOLE  # their numbers are below the first screen
                    shoot(driver, view.base + pages(store)[name], width, height, whole,
                          out / f"view-{name}-{width}.png")


def pages(store: Path) -> dict[str, str]:
    """name -> the path of each page shot."""
    with Store(store, read_only=True) as opened:
        (item,), = opened.query("SELECT DISTINCT item_id FROM attempts")
    return {"label": "/label?rater=human:cy", "browse": "/?sort=judge",
            "cell": f"/cell?item={item}&model={MODELS[0]}", "agree": "/agree"}


WHOLE = ("cell", "agree")  # shot as tall as the page is, up to 2,600 px


def shoot(driver, url: str, width: int, height: int, whole: bool, target: Path) -> None:
    """The page in a viewport of this size (a window's frame would take some of it); ``whole``:
    as tall as the page is, up to 2,600 px."""
    def size(tall: int) -> None:
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": width, "height": tall, "deviceScaleFactor": 1, "mobile": width < 500})

    size(height)
    driver.get(url)
    if whole:
        size(min(max(height, driver.execute_script("return document.documentElement.scrollHeight")),
                 2600))
    driver.save_screenshot(str(target))
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
