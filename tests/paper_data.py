"""A 400-item × 4-model store whose label counts are the seed paper's (§4, Tables 2-6).

What is reproduced exactly, and from where:

- human labels: per-title right counts of Table 3, per-model partial counts of Table 2 (spread over
  titles so that Table 2's totals hold); Claude Opus 5 and Gemini 3.5 Flash-Lite carry identical
  labels on 332 of 400 items (§4.1);
- judge labels (rater ``judge:claude-sonnet-5``): the pooled human × judge confusion of Table 6,
  split per model (``CONFUSION``) so that every model's judge right and partial counts give Table 5's
  judge columns (53.2/49.2/37.0/25.5 % strict, 57.5/53.0/42.9/30.0 % partial credit) — judge right
  per model = 213/197/148/102, judge partial = 34/30/47/36, and the column sums 660/147/793 are
  exactly Table 6's. The split was solved once with ``scipy.optimize.milp`` (L1-closest to the
  pooled conditional rates), also pinning the per-model exact agreement the paper quotes for
  Claude Opus 5 (369/400 = 92.2 %, κ 0.857) and Gemini 3.5 Flash-Lite (325/400 = 81.2 %, κ 0.671);
  GPT-5.6-sol's judge reads 91/90/13/19 right per title (§4.3);
- Gemma 4 31B has 2 empty answers (398/400 answered, §3.2), one labelled wrong, one unlabelled;
- BLEU-2 / BERTScore-F1 / answer lengths are synthetic (seeded) but their per-model means are
  Table 5's (0.291/0.157/0.173/0.140; 0.557/0.330/0.455/0.440; 7.5/19.2/4.2/5.9 words), and the
  BLEU-zero share among right answers follows §4.3 (17/3/43/36 %).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from contam.harness.store import Store, utc_now

__all__ = ["MODELS", "TITLES", "JUDGE", "CONFUSION", "build_paper_rows", "build_paper_store"]

GPT, CLAUDE, GEMINI, GEMMA = MODELS = (
    "gpt-5.6-sol", "claude-opus-5", "gemini-3.5-flash-lite", "gemma-4-31b")
TITLES = (("Pokémon Red", "official"), ("Pokémon Crystal", "official"),
          ("Pokémon Brown", "fan"), ("Pokémon Prism", "fan"))
JUDGE = "judge:claude-sonnet-5"
LABELS = ("right", "partial", "wrong")

# (right, partial) per title, in TITLES order; right from Table 3, partials sum to Table 2.
HUMAN = {
    GPT: [(100, 0), (100, 0), (29, 4), (29, 5)],
    CLAUDE: [(97, 1), (93, 2), (8, 1), (16, 2)],
    GEMINI: [(92, 2), (94, 1), (13, 2), (15, 1)],
    GEMMA: [(60, 3), (61, 3), (8, 2), (16, 3)],
}
# Where each title's block of labels starts (a rotation); Gemini's offsets make it agree with
# Claude on exactly 332 items.
OFFSETS = {GPT: (0, 0, 0, 0), CLAUDE: (0, 0, 0, 0), GEMINI: (0, 99, 15, 16), GEMMA: (0, 0, 0, 0)}

# Rows human, columns judge, order right/partial/wrong; the four sum to Table 6.
CONFUSION = {
    GPT: [[213, 26, 19], [0, 3, 6], [0, 5, 128]],
    CLAUDE: [[193, 21, 0], [1, 4, 1], [3, 5, 172]],
    GEMINI: [[148, 40, 26], [0, 2, 4], [0, 5, 175]],
    GEMMA: [[101, 25, 19], [1, 3, 7], [0, 8, 236]],
}
GPT_JUDGE_RIGHT_PER_TITLE = (91, 90, 13, 19)

# mean BLEU-2, mean BERTScore-F1, mean words, share of right answers with BLEU-2 exactly 0
SURFACE = {
    GPT: (0.291, 0.557, 7.5, 0.17),
    CLAUDE: (0.157, 0.330, 19.2, 0.03),
    GEMINI: (0.173, 0.455, 4.2, 0.43),
    GEMMA: (0.140, 0.440, 5.9, 0.36),
}
EMPTY_ANSWERS = {GEMMA: 2}
ABSTENTIONS = {GPT: 0, CLAUDE: 4, GEMINI: 1, GEMMA: 3}
ABSTAIN_TEXT = "I'm not familiar with that part of the game."
WORDS = ("the", "player", "receives", "a", "badge", "from", "gym", "leader", "after", "battle",
         "in", "town", "route", "cave", "north", "of", "city")


def _items() -> list[dict]:
    rows = []
    for title, subset in TITLES:
        short = title.split()[-1].lower()
        for i in range(100):
            rows.append({"item_id": f"{short}-{i:03d}", "title": title, "subset": subset,
                         "question": f"Question {i} about {title}?",
                         "reference": " ".join(WORDS[(i + k) % len(WORDS)] for k in range(1 + i % 5)),
                         "source_file": "paper_data.py", "added_at": utc_now()})
    return rows


def _human_labels(model: str) -> list[str]:
    """One label per item, in item order (100 per title)."""
    labels = []
    for (right, partial), offset in zip(HUMAN[model], OFFSETS[model]):
        block = ["right"] * right + ["partial"] * partial + ["wrong"] * (100 - right - partial)
        labels += block[offset:] + block[:offset]
    return labels


def _judge_labels(model: str, human: list[str], rng: np.random.Generator) -> list[str]:
    """Distribute each human class's row of CONFUSION[model] over that class's items at random."""
    judge = [""] * len(human)
    for r, human_label in enumerate(LABELS):
        members = [i for i, h in enumerate(human) if h == human_label]
        counts = CONFUSION[model][r]
        if model == GPT and human_label == "right":
            members = _gpt_right_order(members, rng)
        else:
            members = list(rng.permutation(members))
        pool = ["right"] * counts[0] + ["partial"] * counts[1] + ["wrong"] * counts[2]
        for i, label in zip(members, pool, strict=True):
            judge[i] = label
    return judge


def _gpt_right_order(members: list[int], rng: np.random.Generator) -> list[int]:
    """GPT-5.6-sol's judge-right cells sit 91/90/13/19 per title: order those first."""
    first, rest = [], []
    for t, wanted in enumerate(GPT_JUDGE_RIGHT_PER_TITLE):
        in_title = list(rng.permutation([i for i in members if i // 100 == t]))
        first += in_title[:wanted]
        rest += in_title[wanted:]
    return first + list(rng.permutation(rest))


def _lengths(n: int, mean_words: float, fixed: dict[int, int], rng: np.random.Generator) -> list[int]:
    """Word counts ≥ 1 whose mean is exactly mean_words (to one decimal), keeping ``fixed``."""
    lengths = list(1 + rng.poisson(mean_words - 1, size=n))
    for i, k in fixed.items():
        lengths[i] = k
    target = round(mean_words * n)
    free = [i for i in range(n) if i not in fixed]
    while (diff := target - sum(lengths)) != 0:
        i = free[int(rng.integers(len(free)))]
        if diff > 0 or lengths[i] > 1:
            lengths[i] += 1 if diff > 0 else -1
    return lengths


def _text(k: int, seed: int) -> str:
    return " ".join(WORDS[(seed + j) % len(WORDS)] for j in range(k)).capitalize()


def _exact_mean(values: np.ndarray, target: float, scale: bool) -> np.ndarray:
    """Move values so their mean is target: multiplicatively (keeps zeros at 0) or additively."""
    values = values * (target / values.mean()) if scale else values + (target - values.mean())
    values[np.argmax(values)] += target * len(values) - values.sum()
    return values


def _bleu(right: np.ndarray, words: np.ndarray, zero_share: float, target: float,
          rng: np.random.Generator) -> np.ndarray:
    base = np.where(right, 0.6 * np.exp(-0.03 * (words - 1)), 0.08) * rng.uniform(0.5, 1.5, len(right))
    right_idx = np.flatnonzero(right)
    zeros = rng.choice(right_idx, size=round(zero_share * len(right_idx)), replace=False)
    base[zeros] = 0.0
    wrong_idx = np.flatnonzero(~right)
    base[rng.choice(wrong_idx, size=int(0.6 * len(wrong_idx)), replace=False)] = 0.0
    return np.clip(_exact_mean(base, target, scale=True), 0.0, 1.0)


def _bertscore(right: np.ndarray, words: np.ndarray, target: float,
               rng: np.random.Generator) -> np.ndarray:
    base = np.where(right, 0.85 - 0.03 * words, 0.30 - 0.005 * words) + rng.normal(0, 0.1, len(right))
    return _exact_mean(base, target, scale=False)


def _model_rows(model: str, items: list[dict], rng: np.random.Generator) -> dict[str, list[dict]]:
    human = _human_labels(model)
    judge = _judge_labels(model, human, rng)
    empty = _pick(human, judge, "fan", items, EMPTY_ANSWERS.get(model, 0), rng, avoid=set())
    abstain = _pick(human, judge, "fan", items, ABSTENTIONS[model], rng, avoid=set(empty))
    answered = [i for i in range(len(items)) if i not in empty]
    bleu_mean, bert_mean, mean_words, zero_share = SURFACE[model]
    fixed = {answered.index(i): len(ABSTAIN_TEXT.split()) for i in abstain}
    words = np.array(_lengths(len(answered), mean_words, fixed, rng))
    right = np.array([human[i] == "right" for i in answered])
    bleu = _bleu(right, words, zero_share, bleu_mean, rng)
    bert = _bertscore(right, words, bert_mean, rng)
    return _rows(model, items, human, judge, empty, abstain, answered, words, bleu, bert)


def _pick(human, judge, subset, items, count, rng, avoid) -> list[int]:
    """Cells wrong by both raters in the given subset (where empties and abstentions belong)."""
    pool = [i for i, it in enumerate(items)
            if it["subset"] == subset and human[i] == judge[i] == "wrong" and i not in avoid]
    return sorted(int(i) for i in rng.choice(pool, size=count, replace=False))


def _rows(model, items, human, judge, empty, abstain, answered, words, bleu, bert):
    now = utc_now()
    out: dict[str, list[dict]] = {"answers": [], "labels": [], "scores": []}
    for k, i in enumerate(answered):
        text = ABSTAIN_TEXT if i in abstain else _text(int(words[k]), i)
        out["answers"].append(_answer(items[i], model, text, now))
        out["scores"] += [_score(items[i], model, "bleu2", float(bleu[k]), now),
                          _score(items[i], model, "bertscore_f1", float(bert[k]), now)]
    for i in empty:
        out["answers"].append(_answer(items[i], model, "", now))
        out["scores"] += [_score(items[i], model, m, None, now) for m in ("bleu2", "bertscore_f1")]
    for i, item in enumerate(items):
        if not (i in empty and i == empty[-1]):  # the last empty answer stays unlabelled
            out["labels"].append(_label(item, model, "human", human[i], now))
        out["labels"].append(_label(item, model, JUDGE, judge[i], now))
    return out


def _answer(item, model, text, now):
    return {"run_id": "paper", "item_id": item["item_id"], "model": model, "provider": "paper",
            "provider_model": model, "served_model": model, "answer_raw": text, "answer": text,
            "finish_reason": "stop", "created_at": now}


def _score(item, model, metric, value, now):
    return {"item_id": item["item_id"], "model": model, "metric": metric, "value": value,
            "params": '{"source": "paper_data.py"}', "created_at": now}


def _label(item, model, rater, label, now):
    return {"item_id": item["item_id"], "model": model, "rater": rater, "label": label,
            "source_file": "paper_data.py", "created_at": now}


def build_paper_rows(seed: int = 2026) -> dict[str, list[dict]]:
    """Rows for the items, answers, labels and scores tables."""
    rng = np.random.default_rng(seed)
    items = _items()
    rows: dict[str, list[dict]] = {"items": items, "answers": [], "labels": [], "scores": []}
    for model in MODELS:
        for table, model_rows in _model_rows(model, items, rng).items():
            rows[table] += model_rows
    return rows


def build_paper_store(path: str | Path, seed: int = 2026) -> Path:
    with Store(path, create=True) as store:
        for table, rows in build_paper_rows(seed).items():
            store.append(table, rows)
    return Path(path)


if __name__ == "__main__":  # python -m tests.paper_data runs/paper.duckdb
    import sys

    print(build_paper_store(sys.argv[1] if len(sys.argv) > 1 else "runs/paper.duckdb"))
