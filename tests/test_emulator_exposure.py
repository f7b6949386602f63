"""`contam emulator --items FILE --documented SUBSET[,SUBSET]` and `--exposure COLUMN`: which
subsets the emulated models know well, or a chance of knowing an item that rises with a numeric item
column (harness/emulator/skill.py); bad input is one line, exit 2."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from contam.harness.cli import build_parser, emulator_settings_from_args
from contam.harness.emulator.knowledge import Knowledge
from contam.harness.emulator.skill import EXPOSURE_SLOPE, exposure_weights, skill_for
from tests.test_knowledge import question_user

WORDS = ["lantern", "harbour", "quartz", "meadow", "falcon", "cobalt", "saddle", "ember"]
MODEL = "claude-opus-5"


def write_items(path: Path, n: int = 300, *, tiers=("popular", "niche", "obscure")) -> Path:
    """Items with extra columns: `pages` (log10 of web pages, rising with k) and `released`;
    the tier follows the pages (the top third popular)."""
    lines = ["item_id,title,subset,question,reference,pages,released"]
    for k in range(n):
        tier = tiers[min(2, 3 * (n - 1 - k) // n)]
        question = (f"In realm{k} which {WORDS[k % 8]} guards the {WORDS[(k // 8) % 8]} tower "
                    f"of king{k}?")
        lines.append(f"i{k:03d},Book {k % 7},{tier},{question},Keeper {k},{k / n * 6:.3f},"
                     f"2020-01-{1 + k % 28:02d}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def knowledge_of(*flags: str) -> Knowledge:
    return emulator_settings_from_args(build_parser().parse_args(["emulator", *flags])).knowledge


def right_by(knowledge: Knowledge, key) -> dict[str, float]:
    """The share of reference answers by ``key(item)``, asked by one named model."""
    right: dict[str, list[bool]] = {}
    for item in knowledge.items:
        reply = knowledge.answer("", question_user(item), model=MODEL)
        right.setdefault(key(item), []).append(reply == f"{item.reference}.")
    return {group: sum(hits) / len(hits) for group, hits in right.items()}


# ------------------------------------------------------------------------------ --documented

def test_documented_names_the_subsets_the_models_know_well(tmp_path) -> None:
    items = write_items(tmp_path / "items.csv")
    knowledge = knowledge_of("--items", str(items), "--documented", "popular,niche")
    assert knowledge.documented_subsets == {"popular", "niche"}
    assert "documented=niche,popular" in repr(knowledge)
    accuracy = right_by(knowledge, lambda item: item.subset)
    skill = skill_for(MODEL)
    assert abs(accuracy["popular"] - skill.documented) < 0.15
    assert abs(accuracy["niche"] - skill.documented) < 0.15
    assert accuracy["obscure"] < skill.undocumented + 0.1
    default = knowledge_of("--items", str(items))  # official only: no item of this file is
    assert max(right_by(default, lambda item: item.subset).values()) < skill.undocumented + 0.1


def test_documented_items_are_the_memorised_ones(tmp_path) -> None:
    knowledge = knowledge_of("--items", str(write_items(tmp_path / "items.csv")),
                             "--documented", "obscure")
    memorised = {item.subset for item in knowledge.items if knowledge.memorised(item)}
    assert memorised == {"obscure"}


# ------------------------------------------------------------------------------- --exposure

def test_exposure_weight_is_a_logistic_in_the_z_score() -> None:
    assert exposure_weights([3.0, 3.0]) == [0.5, 0.5]  # no spread: every z is 0
    low, mid, high = exposure_weights([0.0, 1.0, 2.0])  # z = -1.2247, 0, +1.2247
    z = math.sqrt(1.5)
    assert mid == 0.5
    assert high == pytest.approx(1 / (1 + math.exp(-EXPOSURE_SLOPE * z)))
    assert low == pytest.approx(1 - high)


def test_exposure_makes_known_items_rise_with_the_column(tmp_path) -> None:
    knowledge = knowledge_of("--items", str(write_items(tmp_path / "items.csv", 400)),
                             "--exposure", "pages")
    assert knowledge.exposure == "pages" and "exposure='pages'" in repr(knowledge)
    quintile = {item: min(4, int(item.exposure / 6 * 5)) for item in knowledge.items}
    accuracy = right_by(knowledge, quintile.__getitem__)
    assert accuracy[4] > accuracy[2] > accuracy[0] + 0.3, accuracy
    weights = [knowledge.weight(item) for item in knowledge.items]
    assert weights == sorted(weights)  # the column rises with k, and so does the weight
    high = [i for i in knowledge.items if quintile[i] == 4]
    low = [i for i in knowledge.items if quintile[i] == 0]
    assert sum(map(knowledge.memorised, high)) > 3 * max(1, sum(map(knowledge.memorised, low)))


def test_exposure_reads_a_jsonl_number(tmp_path) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text('{"item_id": "a", "title": "T", "subset": "x", "question": "Q one?", '
                    '"reference": "R", "pages": 2.5}\n{"item_id": "b", "title": "T", "subset": "x", '
                    '"question": "Q two?", "reference": "S", "pages": 0}\n', encoding="utf-8")
    knowledge = knowledge_of("--items", str(path), "--exposure", "pages")
    assert [item.exposure for item in knowledge.items] == [2.5, 0.0]


def test_emulator_help_states_the_exposure_curve() -> None:
    parser = build_parser()._subparsers._group_actions[0].choices["emulator"]
    help_text = " ".join(parser.format_help().split())
    assert f"w = 1/(1+exp(-{EXPOSURE_SLOPE:g}z))" in help_text
    assert "--documented SUBSET[,SUBSET]" in help_text


# ---------------------------------------------------------------------------------- refusals

def _refusal(contam, *args: str) -> str:
    status, out, err = contam("emulator", *args)
    assert status == 2 and out == "", (status, out, err)
    assert len(err.strip().splitlines()) == 1, err
    return err


def test_a_missing_exposure_column_is_one_line(tmp_path, contam) -> None:
    items = write_items(tmp_path / "items.csv", 20)
    err = _refusal(contam, "--items", items, "--exposure", "views")
    assert "items.csv" in err and "'views'" in err and "pages" in err


def test_a_non_numeric_exposure_value_names_its_line(tmp_path, contam) -> None:
    items = write_items(tmp_path / "items.csv", 20)
    lines = items.read_text(encoding="utf-8").splitlines()
    for value in ("lots", "", "inf"):
        fields = lines[5].split(",")  # line 6 of the file (no field holds a comma)
        fields[5] = value  # the pages column
        items.write_text("\n".join(lines[:5] + [",".join(fields)] + lines[6:]) + "\n",
                         encoding="utf-8")
        err = _refusal(contam, "--items", items, "--exposure", "pages")
        assert "items.csv:6:" in err and "'pages'" in err and "not a number" in err, value


def test_documented_must_name_a_subset_of_the_file(tmp_path, contam) -> None:
    items = write_items(tmp_path / "items.csv", 20)
    err = _refusal(contam, "--items", items, "--documented", "popular,famous")
    assert "'famous'" in err and "niche, obscure, popular" in err


def test_documented_and_exposure_need_items_and_exclude_each_other(tmp_path, contam,
                                                                   capsys) -> None:
    assert "--items" in _refusal(contam, "--documented", "official")
    assert "--items" in _refusal(contam, "--exposure", "pages")
    items = write_items(tmp_path / "items.csv", 20)
    with pytest.raises(SystemExit) as exited:  # the parser's own refusal
        contam("emulator", "--items", items, "--documented", "popular", "--exposure", "pages")
    err = capsys.readouterr().err
    assert exited.value.code == 2 and len(err.strip().splitlines()) == 1
    assert "not allowed with" in err
