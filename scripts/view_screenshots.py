"""The README's screenshots of `contam view`: the blind label page and the browse page, at
1280x800 and at 390x844 (a phone), in headless chromium.

    .venv/bin/python scripts/view_screenshots.py [--out docs]

The store is built from the bundled demo items (harness/data/demo_items.csv) with three models'
answers written for the picture (one right, one partly right, one declining), scores and a judge,
and two raters' labels on some of them.
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness.store import Store, utc_now  # noqa: E402
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
            pages = {"label": "/label?rater=human:cy", "browse": "/?sort=judge"}
            for width, height in ((1280, 800), (390, 844)):
                # the viewport itself at that size (a window's frame would take some of it)
                driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
                    "width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 500})
                for name, path in pages.items():
                    driver.get(view.base + path)
                    target = out / f"view-{name}-{width}.png"
                    driver.save_screenshot(str(target))
                    print(f"wrote {target}")


if __name__ == "__main__":
    main()
