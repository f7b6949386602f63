"""The emulator's knowledge (harness/emulator/knowledge.py): which item a prompt is about, what a
contaminated and a clean emulated model answer, seeded; and the README's emulator walkthrough
(`contam emulator --items`) showing an accuracy gap through `contam run`, `judge` and `score`."""

from __future__ import annotations

from pathlib import Path

import duckdb
import httpx
import pytest

from contam.harness.cli import build_parser, emulator_settings_from_args
from contam.harness.config import DEFAULT_SYSTEM_PROMPT
from contam.harness.emulator.knowledge import Knowledge, KnownItem
from contam.harness.emulator.server import EmulatorSettings, default_answer, judge_label, run_emulator
from contam.harness.errors import InputError, UserError
from contam.harness.prompts import question_request
from contam.metrics.judge import JUDGE_RUBRIC, judge_request
from contam.metrics.probe_guided import GuidedProbe, split_question
from contam.metrics.probe_tsguess import TsGuessProbe, choose_slot
from contam.metrics.probes import ProbeItem
from tests.runkit import KEYS

DEMO = Path(__file__).resolve().parent.parent / "harness" / "data" / "demo_items.csv"


def demo(profile: str = "contaminated", seed: int = 0) -> Knowledge:
    return Knowledge.from_file(DEMO, profile=profile, seed=seed)


def many_items(n: int = 200) -> list[KnownItem]:
    """Items whose question names them twice (realm<k>, king<k>: a masked question and a first
    half still say which item they are); even ones documented, odd ones not."""
    words = ["lantern", "harbour", "quartz", "meadow", "falcon", "cobalt", "saddle", "ember"]
    return [KnownItem(f"i{k:03d}", f"Game {k % 7}", "official" if k % 2 == 0 else "fan",
                      f"In realm{k} which {words[k % 8]} guards the {words[(k // 8) % 8]} tower "
                      f"of king{k}?", f"Keeper {k}") for k in range(n)]


def question_user(item: KnownItem) -> str:
    return question_request(DEFAULT_SYSTEM_PROMPT, item.title, item.question).user


def probe_item(item: KnownItem) -> ProbeItem:
    return ProbeItem(item_id=item.item_id, title=item.title, subset=item.subset,
                     question=item.question, reference=item.reference)


# --------------------------------------------------------------------------------- matching

def test_item_for_finds_the_item_of_every_prompt_shape() -> None:
    """The run's question, the ts-guess masked question, both guided first pieces and the
    min-k text (title + question + reference) all lead to their item, for every demo item."""
    knowledge = demo()
    for item in knowledge.items:
        texts = [question_user(item), f"{item.title} {item.question} {item.reference}"]
        texts += [p.user for probe in (TsGuessProbe(), GuidedProbe())
                  for p in probe.prompts(probe_item(item))]
        assert len(texts) == 5
        for text in texts:
            assert knowledge.item_for(text) == item, text


def test_the_same_question_in_two_games_is_told_apart_by_the_title() -> None:
    knowledge = demo()
    red, crystal = (next(i for i in knowledge.items if i.item_id == name)
                    for name in ("red-04", "crystal-04"))
    assert red.question == crystal.question
    assert knowledge.item_for(question_user(red)) == red
    assert knowledge.item_for(question_user(crystal)) == crystal


def test_matching_does_not_need_the_exact_wording() -> None:
    """Case, punctuation, extra words and a different frame: still the item."""
    knowledge = demo()
    assert knowledge.item_for("so, WHICH badge does brock award after his defeat??").item_id == "red-01"
    assert knowledge.item_for("Tell me: whose child is the player character in Prism").item_id == "prism-03"


def test_unrelated_prompts_and_judge_requests_get_the_old_replies() -> None:
    knowledge = demo()
    for text in ("Say hello.", "What is the capital of France?", "Question 17?"):
        assert knowledge.item_for(text) is None
        assert knowledge.answer("", text) == default_answer(text)
        samples = {knowledge.answer("", text, temperature=0.8, sample=s) for s in range(3)}
        assert len(samples) == 3  # a model that knows nothing samples diverse answers
    user = judge_request("Boulder Badge", "Boulder Badge").user
    assert knowledge.answer(JUDGE_RUBRIC, user) == judge_label("Boulder Badge", "Boulder Badge") == "right"


# ------------------------------------------------------------------------------- behaviour

def test_both_profiles_answer_documented_questions_better_than_undocumented_ones() -> None:
    items = many_items()
    for profile in ("contaminated", "clean"):
        knowledge = Knowledge.from_items(items, profile=profile)
        right = {"official": 0, "fan": 0}
        for item in items:
            right[item.subset] += knowledge.answer("", question_user(item)) == f"{item.reference}."
        assert right["official"] >= 60 and right["fan"] <= 15, (profile, right)


def test_wrong_answers_are_other_items_references() -> None:
    """A wrong answer is plausible: another item's reference, never a canned string."""
    items = many_items()
    knowledge = Knowledge.from_items(items)
    references = {f"{item.reference}." for item in items}
    wrong = 0
    for item in items:
        reply = knowledge.answer("", question_user(item))
        assert reply in references | {"Keeper."}  # "Keeper." is half of a two-word reference
        wrong += reply in references - {f"{item.reference}."}
    assert wrong >= 80


def test_memorised_is_most_documented_items_when_contaminated_and_none_when_clean() -> None:
    items = many_items()
    contaminated, clean = Knowledge.from_items(items), Knowledge.from_items(items, profile="clean")
    official = [i for i in items if i.subset == "official"]
    share = sum(map(contaminated.memorised, official)) / len(official)
    assert 0.8 <= share < 1.0
    assert not any(contaminated.memorised(i) for i in items if i.subset == "fan")
    assert not any(map(clean.memorised, items))


def test_masked_word_is_guessed_on_memorised_items_only() -> None:
    items = many_items()
    probe = TsGuessProbe()
    for profile in ("contaminated", "clean"):
        knowledge = Knowledge.from_items(items, profile=profile)
        hits = {True: [], False: []}
        for item in items:
            (prompt,) = probe.prompts(probe_item(item))
            reply = knowledge.answer(prompt.system, prompt.user, temperature=0.0, sample=0)
            word = choose_slot(item.question, item.title).word
            hits[knowledge.memorised(item)].append(reply == word)
        assert all(hits[True])
        assert sum(hits[False]) <= 0.25 * len(hits[False]), profile


def test_the_rest_of_a_question_comes_back_under_the_guided_instruction_only() -> None:
    items = many_items(60)
    knowledge = Knowledge.from_items(items)
    for item in items:
        guided, general = GuidedProbe(dataset="Keepers QA").prompts(probe_item(item))
        rest = split_question(item.question)[1]
        completed = knowledge.answer("", guided.user, temperature=0.0, sample=0)
        assert (completed == rest) == knowledge.memorised(item), item
        assert knowledge.answer("", general.user, temperature=0.0, sample=0) != rest


def test_samples_are_peaked_on_memorised_items_and_diverse_elsewhere() -> None:
    """CDD's signal: at temperature > 0 a memorised item mostly repeats its greedy answer; any
    other item never does."""
    items = many_items(40)
    knowledge = Knowledge.from_items(items)
    for item in items:
        user = question_user(item)
        greedy = knowledge.answer("", user, temperature=0.0, sample=0)
        assert knowledge.answer("", user, temperature=None, sample=3) == greedy
        same = sum(knowledge.answer("", user, temperature=0.8, sample=s) == greedy for s in range(20))
        if knowledge.memorised(item):
            assert same >= 14, item
        else:
            assert same == 0, item


def test_answers_are_deterministic_in_the_seed() -> None:
    items = many_items(80)
    prompts = [(question_user(i), t, s) for i in items for t, s in ((None, 0), (0.8, 1), (0.8, 2))]

    def replies(seed: int) -> list[str]:
        knowledge = Knowledge.from_items(items, seed=seed)
        return [knowledge.answer("", u, temperature=t, sample=s) for u, t, s in prompts]

    assert replies(7) == replies(7)
    assert replies(7) != replies(8)
    assert Knowledge.from_items(items, seed=1).memorised(items[0]) in (True, False)


def test_profile_and_file_are_validated() -> None:
    with pytest.raises(ValueError, match="profile"):
        Knowledge.from_items([], profile="leaky")


def test_a_bad_items_file_is_refused_with_its_line(tmp_path) -> None:
    bad = tmp_path / "items.csv"
    bad.write_text("item_id,title,subset,question,reference\na,T,official,Q?,R\nb,T,official\n",
                   encoding="utf-8")
    with pytest.raises(InputError, match=r"items\.csv:3"):
        Knowledge.from_file(bad)


# ---------------------------------------------------------------------------- the emulator

def test_contam_emulator_items_and_profile_flags_set_the_knowledge(tmp_path) -> None:
    args = build_parser().parse_args(["emulator", "--items", str(DEMO), "--profile", "clean",
                                      "--seed", "5"])
    knowledge = emulator_settings_from_args(args).knowledge
    assert (len(knowledge.items), knowledge.profile, knowledge.seed) == (18, "clean", 5)
    assert emulator_settings_from_args(build_parser().parse_args(["emulator"])).knowledge is None
    with pytest.raises(UserError, match="nosuch.csv"):
        emulator_settings_from_args(build_parser().parse_args(
            ["emulator", "--items", str(tmp_path / "nosuch.csv")]))


def test_the_emulator_answers_from_its_knowledge_over_a_socket() -> None:
    knowledge = demo()
    red = knowledge.item_for("Which Badge does Brock award after his defeat?")
    body = {"model": "gpt-emu", "messages": [{"role": "system", "content": DEFAULT_SYSTEM_PROMPT},
                                             {"role": "user", "content": question_user(red)}]}
    with run_emulator(EmulatorSettings(knowledge=knowledge)) as emu:
        reply = httpx.post(f"{emu.url}/v1/chat/completions", json=body, timeout=5).json()
    assert reply["choices"][0]["message"]["content"] == "Boulder Badge."


# ---------------------------------------------------------------------------- walkthrough

def _walkthrough_config(folder: Path, emu) -> Path:
    models = [("gpt-emu", "openai", "OPENAI_API_KEY"), ("claude-emu", "anthropic",
                                                        "ANTHROPIC_API_KEY")]
    lines = [f'items = "{DEMO.as_posix()}"']
    for name, provider, key in models:
        lines += ["[[models]]", f'name = "{name}"', f'provider = "{provider}"',
                  f'model = "{name}-1"', f'base_url = "{emu.base_url(provider)}"',
                  f'api_key_env = "{key}"', "concurrency = 4"]
    lines += ["[judge]", 'name = "judge-emu"', 'provider = "anthropic"', 'model = "judge-1"',
              f'base_url = "{emu.base_url("anthropic")}"', 'api_key_env = "ANTHROPIC_API_KEY"']
    path = folder / "walk.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_walkthrough_against_a_knowing_emulator_shows_a_gap(tmp_path, contam, keys) -> None:
    """Run, judge and score against `contam emulator --items`: documented items
    get higher BLEU-2 and more judge `right` labels than undocumented ones, BLEU-2 is not all
    zero, and the two models (two names, two skills) answer differently."""
    store = tmp_path / "walk.duckdb"
    settings = emulator_settings_from_args(build_parser().parse_args(["emulator", "--items", str(DEMO)]))
    with run_emulator(settings) as emu:
        config = _walkthrough_config(tmp_path, emu)
        for command in (("run", config), ("judge", config), ("score", "--metric", "bleu2")):
            status, _, err = contam(*command, "--store", store, *(
                ("--no-progress",) if command[0] != "score" else ()))
            assert status == 0, (command, err)
    with duckdb.connect(str(store), read_only=True) as con:
        rows = con.execute("""SELECT subset, count(*), avg(bleu2), avg((judge_label = 'right')::INT)
                              FROM cells GROUP BY subset""").fetchall()
        answers = con.execute("""SELECT model, list(answer ORDER BY item_id) FROM cells
                                 GROUP BY model""").fetchall()
    by_subset = {subset: (n, bleu, right) for subset, n, bleu, right in rows}
    assert len(answers) == 2 and answers[0][1] != answers[1][1]  # each model its own skill
    assert by_subset["official"][0] == 20 and by_subset["fan"][0] == 16
    assert by_subset["official"][1] > by_subset["fan"][1] + 0.3
    assert by_subset["official"][2] > by_subset["fan"][2] + 0.3
    assert KEYS["ANTHROPIC_API_KEY"] not in store.read_bytes().decode("latin-1")
