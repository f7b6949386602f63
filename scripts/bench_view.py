"""`contam view` on a 100,000-cell store: the server's time to render a rater's next cell and a
filtered browse page, and its memory.

    .venv/bin/python scripts/bench_view.py [--items 25000] [--models 4] [--requests 200]

It builds the store (items x models answers, BLEU-2 and BERTScore-F1 for every cell, a judge
label for every cell, two human raters on a fifth of them), starts `contam view` as a child
process and sends, one at a time over loopback:

- GET /label?rater=human:bench: the label page with the rater's next cell;
- POST /api/label/label: a label written (committed) and the next cell returned, as a keystroke does;
- GET /: the browse page as it opens (the first 50 cells, no filter);
- GET /?subset=fan&label=none&rater=human:ann&sort=bleu2&desc=1&page=N: a filtered, sorted page.

Times are the server's own (its ``Server-Timing`` header: request in to response out), as the
median and the 99th percentile; the HTTP round trip is printed beside them. The server's peak
resident memory is its VmHWM. For comparison the script also times the one-query way: a page of
the ``cells`` view (``SELECT * FROM cells ORDER BY item_id, model LIMIT 50``), on the same store,
and the same browse page on a 100-cell store.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness.store import Store  # noqa: E402
from viewserver import ViewServer  # noqa: E402  (scripts/viewserver.py)

BROWSE = "/?subset=fan&label=none&rater=human:ann&sort=bleu2&desc=1&page={page}"


def build_store(path: Path, items: int, models: int) -> int:
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


def server_ms(response: httpx.Response) -> float:
    assert response.status_code == 200, response.text[:300]
    return float(re.search(r"dur=([\d.]+)", response.headers["server-timing"]).group(1))


def measure(label: str, send, requests: int) -> None:
    server, wall = [], []
    send(0)  # the first request of a kind builds what later ones reuse; timed apart
    for n in range(1, requests + 1):
        started = time.perf_counter()
        server.append(server_ms(send(n)))
        wall.append((time.perf_counter() - started) * 1000)
    print(f"  {label:<44} server median {statistics.median(server):7.1f} ms  "
          f"p99 {quantile(server, 0.99):7.1f} ms   (round trip median {statistics.median(wall):.1f} ms)")


def quantile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1]


def bench_server(path: Path, requests: int, cells: int) -> None:
    with ViewServer(path, "--seed", "1") as view:
        client = httpx.Client(base_url=view.base, timeout=60)
        client.get(view.url)  # the token becomes the cookie
        token = view.url.split("token=", 1)[1]
        started = time.perf_counter()
        first = client.get("/label?rater=human:bench")
        took = (time.perf_counter() - started) * 1000
        print(f"  first label page (builds the rater's queue): {took:.0f} ms")
        cell = {"id": re.search(r'data-cell="([0-9a-f]+)"', first.text).group(1)}

        def label(_n: int) -> httpx.Response:
            response = client.post("/api/label/label", headers={"X-Contam-Token": token},
                                   json={"rater": "human:bench", "cell": cell["id"], "label": "right"})
            cell["id"] = response.json()["cell"]["id"]
            return response

        measure("GET /label (the next cell's page)", lambda n: client.get("/label?rater=human:bench"),
                requests)
        measure("POST a label, get the next cell", label, min(requests, cells - 2))  # cells to spare
        measure("GET the browse page as it opens", lambda n: client.get("/"), requests)
        measure("GET a filtered, sorted browse page",
                lambda n: client.get(BROWSE.format(page=1 + n % 20)), requests)
        print(f"  server peak RSS (VmHWM): {peak_rss_mib(view.process.pid):.0f} MiB")


def peak_rss_mib(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+)", status).group(1)) / 1024


def bench_cells_view(path: Path) -> None:
    times = []
    with Store(path, read_only=True) as store:
        for _ in range(10):
            started = time.perf_counter()
            store.query("SELECT * FROM cells ORDER BY item_id, model LIMIT 50")
            times.append((time.perf_counter() - started) * 1000)
    print(f"  one page of the cells view, for comparison: median {statistics.median(times):.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=25_000)
    parser.add_argument("--models", type=int, default=4)
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for items in (args.items, 25):
            path = Path(folder) / f"view{items}.duckdb"
            started = time.perf_counter()
            cells = build_store(path, items, args.models)
            print(f"{cells:,} cells ({items:,} items x {args.models} models), "
                  f"built in {time.perf_counter() - started:.1f} s")
            bench_server(path, args.requests, cells)
            bench_cells_view(path)


if __name__ == "__main__":
    main()
