"""Each emulated model is its own model: its skill is drawn from its name
(harness/emulator/skill.py), the same in every process, and the emulator answers each model name
by its own skill over a real socket; `contam emulator --help` states the ranges."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from contam.harness.cli import build_parser, emulator_settings_from_args
from contam.harness.config import DEFAULT_SYSTEM_PROMPT
from contam.harness.emulator.command import banner
from contam.harness.emulator.knowledge import Knowledge
from contam.harness.emulator.server import EmulatorSettings, run_emulator
from contam.harness.emulator.skill import (BASE_SKILL, DOCUMENTED_RANGE, UNDOCUMENTED_RANGE, Skill,
                                    skill_for)
from tests.test_knowledge import many_items, question_user

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("gpt-5.6-sol", "gemini-3.5-flash-lite", "claude-opus-5", "gemma4:31b-cloud")


def test_the_same_name_has_the_same_skill_in_another_process() -> None:
    code = ("from contam.harness.emulator.skill import skill_for; "
            f"print(*[(s.documented, s.undocumented) for s in map(skill_for, {MODELS!r})])")
    env_seeds = ("0", "12345")  # str hashing differs per PYTHONHASHSEED; the skill must not
    printed = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=True, env={"PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)},
                              ).stdout.strip() for seed in env_seeds}
    here = " ".join(str((s.documented, s.undocumented)) for s in map(skill_for, MODELS))
    assert printed == {here}


def test_names_draw_different_skills_across_the_stated_ranges() -> None:
    skills = [skill_for(f"model-{k}") for k in range(300)]
    assert len({(s.documented, s.undocumented) for s in skills}) > 250
    documented = [s.documented for s in skills]
    undocumented = [s.undocumented for s in skills]
    assert DOCUMENTED_RANGE[0] <= min(documented) < DOCUMENTED_RANGE[0] + 0.03
    assert DOCUMENTED_RANGE[1] - 0.03 < max(documented) <= DOCUMENTED_RANGE[1]
    assert UNDOCUMENTED_RANGE[0] <= min(undocumented) < UNDOCUMENTED_RANGE[0] + 0.02
    assert UNDOCUMENTED_RANGE[1] - 0.02 < max(undocumented) <= UNDOCUMENTED_RANGE[1]
    assert len({skill_for(m) for m in MODELS}) == 4  # the walkthrough's four models differ
    assert skill_for(None) == BASE_SKILL


def test_full_and_half_follow_the_weight() -> None:
    """A documented item (w = 1) gets the documented skill, an undocumented one (w = 0) the
    undocumented skill, and the half answers 15 % and 10 % as before."""
    skill = Skill(0.8, 0.1)
    assert skill.full_and_half(1.0) == pytest.approx((0.8, 0.15))
    assert skill.full_and_half(0.0) == pytest.approx((0.1, 0.10))
    assert skill.full_and_half(0.5) == pytest.approx((0.45, 0.125))


def _accuracy(knowledge: Knowledge, items, model: str | None) -> dict[str, float]:
    right = {"official": 0, "fan": 0}
    for item in items:
        right[item.subset] += knowledge.answer("", question_user(item), model=model) == f"{item.reference}."
    return {subset: n / (len(items) / 2) for subset, n in right.items()}


def test_each_model_answers_near_its_own_skill_and_repeats_itself() -> None:
    items = many_items(400)
    knowledge = Knowledge.from_items(items)
    for model in MODELS:
        skill, accuracy = skill_for(model), _accuracy(knowledge, items, model)
        assert abs(accuracy["official"] - skill.documented) < 0.12, (model, accuracy, skill)
        assert abs(accuracy["fan"] - skill.undocumented) < 0.08, (model, accuracy, skill)
        assert accuracy == _accuracy(knowledge, items, model)  # the same name, the same answers
    answers = {m: [knowledge.answer("", question_user(i), model=m) for i in items] for m in MODELS}
    assert len({tuple(a) for a in answers.values()}) == 4


def _ask(client: httpx.Client, model: str, user: str) -> str:
    body = {"model": model, "messages": [{"role": "system", "content": DEFAULT_SYSTEM_PROMPT},
                                         {"role": "user", "content": user}]}
    return client.post("/v1/chat/completions", json=body).json()["choices"][0]["message"]["content"]


def test_the_emulator_answers_each_model_name_by_its_own_skill_over_a_socket() -> None:
    items = many_items(60)
    knowledge = Knowledge.from_items(items)
    with run_emulator(EmulatorSettings(knowledge=knowledge)) as emu, \
            httpx.Client(base_url=emu.url, timeout=5) as client:
        asked = {m: [_ask(client, m, question_user(i)) for i in items] for m in MODELS[:2]}
        again = [_ask(client, MODELS[0], question_user(i)) for i in items]
    assert asked[MODELS[0]] == again
    assert asked[MODELS[0]] != asked[MODELS[1]]
    for model, replies in asked.items():
        assert replies == [knowledge.answer("", question_user(i), model=model) for i in items]


def test_served_model_answers_as_the_served_name() -> None:
    items = many_items(40)
    knowledge = Knowledge.from_items(items)
    with run_emulator(EmulatorSettings(knowledge=knowledge, served_model="fixed")) as emu, \
            httpx.Client(base_url=emu.url, timeout=5) as client:
        replies = [_ask(client, MODELS[0], question_user(i)) for i in items]
    assert replies == [knowledge.answer("", question_user(i), model="fixed") for i in items]


def test_emulator_help_states_the_skill_ranges() -> None:
    help_text = " ".join(build_parser()._subparsers._group_actions[0].choices["emulator"]
                         .format_help().split())
    assert "SHA-256" in help_text
    assert f"{DOCUMENTED_RANGE[0]:g}-{DOCUMENTED_RANGE[1]:g}" in help_text
    assert f"{UNDOCUMENTED_RANGE[0]:g}-{UNDOCUMENTED_RANGE[1]:g}" in help_text


def test_the_docs_walkthrough_states_each_models_drawn_skill() -> None:
    readme = (ROOT / "docs" / "how-to" / "providers.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| \S+ \(`([^`]+)`\) \| ([0-9.]+), ([0-9.]+) \|", readme, re.MULTILINE)
    assert sorted(model for model, _, _ in rows) == sorted(MODELS)
    for model, documented, undocumented in rows:
        assert skill_for(model) == Skill(float(documented), float(undocumented)), model


def test_the_banner_says_each_model_name_is_its_own_model() -> None:
    settings = emulator_settings_from_args(build_parser().parse_args(
        ["emulator", "--items", str(ROOT / "harness" / "data" / "demo_items.csv")]))
    assert "each model name is its own model" in banner("http://127.0.0.1:8765", settings)
