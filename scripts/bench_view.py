"""`contam view`'s speed, against the targets of issue 29 item 5, printed as one table.

    .venv/bin/python scripts/bench_view.py [--requests 40] [--big 50000] [--agree 25000]

It builds three stores (4 models each: 100 cells, ``--agree`` x 4 = 100,000 cells and ``--big`` x
4 = 200,000 cells; every cell scored and judged, two human raters on a fifth of them), starts
`contam view` as a child process on each and measures, one request at a time over loopback:

- label: a key press to the next cell, in headless chromium (the page's own clock, from the
  keydown to the next cell in the page), on the 100,000-cell store; over HTTP (the POST a key
  press sends, to its answer) where chromium is missing;
- browse: ``/`` as it opens, and a filtered, sorted page
  (``/?subset=fan&label=none&rater=human:ann&sort=bleu2&desc=1&page=N``), at 100 and 200,000 cells;
- agreement: ``/agree`` after a new label (so the page is computed again), at 100,000 cells.

Each row shows the median and the 95th percentile of the round trip, the server's own median
(its ``Server-Timing`` header) and the target. Timing belongs here, never in the tests.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from contam.harness.store import Store  # noqa: E402
from viewserver import CHROMEDRIVER, CHROMIUM, ViewServer, chromium  # noqa: E402

FILTERED = "/?subset=fan&label=none&rater=human:ann&sort=bleu2&desc=1&page={page}"
TARGETS = {"label": "<= 150 ms median, <= 300 ms p95", "browse": "<= 100 ms",
           "agree": "(measure; was ~1 s)"}
# The page's own clock: a keydown, then the next cell's id on #desk.
KEY_TO_CELL_JS = """
const done = arguments[arguments.length - 1];
const desk = document.getElementById("desk");
const before = desk.dataset.cell;
const started = performance.now();
new MutationObserver((changes, observer) => {
  if (desk.dataset.cell !== before) { observer.disconnect(); done(performance.now() - started); }
}).observe(desk, {attributes: true, attributeFilter: ["data-cell"]});
document.body.dispatchEvent(new KeyboardEvent("keydown", {key: arguments[0], bubbles: true}));
"""


def build_store(path: Path, items: int, models: int = 4) -> int:
    """Items x models answered cells, scored and judged; two raters on a fifth. Returns cells."""
    item = "'q' || lpad(i::VARCHAR, 6, '0')"
    with Store(path, create=True) as store, store.transaction():
        store.con.execute(f"""INSERT INTO items BY NAME SELECT {item} AS item_id,
            'Title ' || (i % 40) AS title, CASE WHEN i % 2 = 0 THEN 'official' ELSE 'fan' END AS subset,
            'Which move does the gym leader of town ' || i || ' teach?' AS question,
            'The reference answer for item ' || i || ' is a short sentence.' AS reference,
            now()::TIMESTAMP AS added_at FROM range({items}) t(i)""")
        store.con.execute(f"""INSERT INTO answers BY NAME SELECT 'bench' AS run_id, {item} AS item_id,
            'model-' || m AS model, 'openai' AS provider, 'The answer of model ' || m || ' to item '
            || i || ' is a sentence of about this length.' AS answer_raw, answer_raw AS answer,
            0.8 AS latency_s, now()::TIMESTAMP AS created_at
            FROM range({items}) t(i), range({models}) u(m)""")
        store.con.execute(f"""INSERT INTO scores BY NAME SELECT {item} AS item_id, 'model-' || m AS model,
            metric, random() AS value, '{{}}' AS params, now()::TIMESTAMP AS created_at
            FROM range({items}) t(i), range({models}) u(m),
                 (VALUES ('bleu2'), ('bertscore_f1')) v(metric)""")
        store.con.execute(f"""INSERT INTO labels BY NAME SELECT {item} AS item_id, 'model-' || m AS model,
            rater, ['right', 'partial', 'wrong'][1 + (hash(i, m, rater) % 3)::INT] AS label,
            now()::TIMESTAMP AS created_at FROM range({items}) t(i), range({models}) u(m),
            (VALUES ('judge:bench')) v(rater)""")
        store.con.execute(f"""INSERT INTO labels BY NAME SELECT {item} AS item_id, 'model-' || m AS model,
            rater, ['right', 'partial', 'wrong'][1 + (hash(i, m, rater) % 3)::INT] AS label,
            now()::TIMESTAMP AS created_at FROM range({items // 5}) t(i), range({models}) u(m),
            (VALUES ('human:ann'), ('human:bo')) v(rater)""")
    return items * models


class Table:
    """The rows measured so far, printed as one table at the end."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str, str, str]] = []

    def add(self, what: str, wall: list[float], server: list[float], target: str) -> None:
        server_text = f"{statistics.median(server):.1f}" if server else "–"
        self.rows.append((what, f"{statistics.median(wall):.1f}", f"{quantile(wall, 0.95):.1f}",
                          server_text, target))
        print(f"  {what}: median {self.rows[-1][1]} ms, p95 {self.rows[-1][2]} ms", flush=True)

    def print(self) -> None:
        head = ("what", "median ms", "p95 ms", "server ms", "target")
        widths = [max(len(row[n]) for row in (head, *self.rows)) for n in range(5)]
        for row in (head, tuple("-" * w for w in widths), *self.rows):
            print("  ".join(cell.ljust(w) if n in (0, 4) else cell.rjust(w)
                            for n, (cell, w) in enumerate(zip(row, widths))))


def quantile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1]


def server_ms(response: httpx.Response) -> float:
    assert response.status_code == 200, response.text[:300]
    return float(re.search(r"dur=([\d.]+)", response.headers["server-timing"]).group(1))


def timed(send: Callable[[int], httpx.Response], requests: int) -> tuple[list[float], list[float]]:
    """Round trips and server times (ms) of ``requests`` requests, after one untimed warm-up."""
    send(0)
    wall, server = [], []
    for n in range(1, requests + 1):
        started = time.perf_counter()
        response = send(n)
        wall.append((time.perf_counter() - started) * 1000)
        server.append(server_ms(response))
    return wall, server


def client_of(view: ViewServer) -> tuple[httpx.Client, str]:
    client = httpx.Client(base_url=view.base, timeout=120)
    client.get(view.url)  # the token becomes the cookie
    return client, view.url.split("token=", 1)[1]


def bench_browse(table: Table, view: ViewServer, cells: int, requests: int) -> None:
    client, _token = client_of(view)
    for what, url in (("default", "/?page={page}"), ("filtered+sorted", FILTERED)):
        wall, server = timed(lambda n: client.get(url.format(page=1 + n % 20)), requests)
        table.add(f"browse {cells:,} cells, {what}", wall, server, TARGETS["browse"])


def bench_agreement(table: Table, view: ViewServer, cells: int, requests: int) -> None:
    client, token = client_of(view)
    wall, server = [], []
    for n in range(requests + 1):
        labelled = client.post("/api/cell-label", headers={"X-Contam-Token": token},
                               json={"rater": "ann", "item": f"q{n:06d}", "model": "model-0",
                                     "label": ("right", "wrong")[n % 2]})
        assert labelled.status_code == 200, labelled.text
        started = time.perf_counter()
        response = client.get("/agree")
        if n:  # the first builds what never changes (imports); timed apart from the rest
            wall.append((time.perf_counter() - started) * 1000)
            server.append(server_ms(response))
    table.add(f"agreement {cells:,} cells, after a new label", wall, server, TARGETS["agree"])


def bench_label(table: Table, view: ViewServer, cells: int, requests: int) -> None:
    if CHROMIUM.exists() and CHROMEDRIVER.exists():
        with chromium() as driver:
            driver.set_script_timeout(30)
            driver.get(view.url)
            driver.get(view.base + "/label?rater=bench")
            driver.execute_async_script(KEY_TO_CELL_JS, "1")  # warm-up
            wall = [driver.execute_async_script(KEY_TO_CELL_JS, "123"[n % 3])
                    for n in range(requests)]
        table.add(f"label {cells:,} cells: key press to next cell (chromium)", wall, [],
                  TARGETS["label"])
        return
    client, token = client_of(view)
    cell = {"id": re.search(r'data-cell="([0-9a-f]+)"', client.get("/label?rater=bench").text)[1]}

    def label(_n: int) -> httpx.Response:
        response = client.post("/api/label/label", headers={"X-Contam-Token": token},
                               json={"rater": "bench", "cell": cell["id"], "label": "right"})
        cell["id"] = response.json()["cell"]["id"]
        return response

    wall, server = timed(label, requests)
    table.add(f"label {cells:,} cells: POST to next cell (HTTP)", wall, server, TARGETS["label"])


BENCHES = {"browse": bench_browse, "label": bench_label, "agree": bench_agreement}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--agree", type=int, default=25_000, help="items of the 100,000-cell store")
    parser.add_argument("--big", type=int, default=50_000, help="items of the 200,000-cell store")
    parser.add_argument("--parts", default="browse,label,agree", help="which rows to measure")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    table = Table()
    plan = [(25, ["browse"]), (args.big, ["browse"]), (args.agree, ["label", "agree"])]
    with tempfile.TemporaryDirectory() as folder:
        for items, names in plan:
            benches = [BENCHES[name] for name in names if name in parts]
            if not benches:
                continue
            path = Path(folder) / f"view{items}.duckdb"
            started = time.perf_counter()
            cells = build_store(path, items)
            print(f"{cells:,} cells built in {time.perf_counter() - started:.1f} s", flush=True)
            with ViewServer(path, "--seed", "1") as view:
                for bench in benches:
                    bench(table, view, cells, args.requests)
    print()
    table.print()


if __name__ == "__main__":
    main()
