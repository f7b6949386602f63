"""The rule-based metrics (contam.metrics.rules), each on a hand-written table of (answer, reference,
expected) rows: 1.0 right, 0.0 wrong, None not scorable."""

from __future__ import annotations

import re

import pytest

from contam.harness.errors import UserError
from contam.metrics.rules import (compile_answer_regex, contains, contains_scorer, exact, exact_scorer,
                           first_number, normalise, numeric, numeric_scorer, regex_match, regex_scorer)

N = None  # not scorable

# answer                                   reference                  exact
EXACT = [
    ("Paris",                                "Paris",                   1.0),
    ("paris",                                "Paris",                   1.0),
    ("PARIS",                                "paris",                   1.0),
    ("Paris.",                               "Paris",                   1.0),
    ("  Paris  ",                            "Paris",                   1.0),
    ("The Eiffel Tower",                     "Eiffel Tower",            1.0),
    ("the eiffel tower!",                    "The Eiffel Tower",        1.0),
    ("An apple",                             "apple",                   1.0),
    ("a apple",                              "an apple",                1.0),
    ("Theory",                               "ory",                     0.0),  # "the" only as a word
    ("Another",                              "other",                   0.0),
    ("Pikachu",                              "Raichu",                  0.0),
    ("Paris, France",                        "Paris",                   0.0),
    ("The answer is Paris",                  "Paris",                   0.0),
    ("Answer: Paris",                        "Paris",                   0.0),
    ("Paris",                                "Paris, France",           0.0),
    ("U.S.A.",                               "USA",                     1.0),
    ("don't",                                "dont",                    1.0),
    ("New-York",                             "NewYork",                 1.0),
    ("New York",                             "new   york",              1.0),
    ("New\tYork\n",                          "New York",                1.0),
    ("«Paris»",                              "Paris",                   1.0),  # Unicode punctuation
    ("“Paris”",                              "Paris",                   1.0),
    ("Paris…",                               "Paris",                   1.0),
    ("¿Qué?",                                "qué",                     1.0),
    ("Café",                                 "café",                    1.0),
    ("Cafe",                                 "Café",                    0.0),  # accents are kept
    ("STRASSE",                              "Straße",                  1.0),  # casefold: ß = ss
    ("Ｐａｒｉｓ",                           "Paris",                   1.0),  # NFKC: full width
    ("ポケモン",                             "ポケモン",                1.0),
    ("ポケモン。",                           "ポケモン",                1.0),
    ("ピカチュウ",                           "ポケモン",                0.0),
    ("Ünïcödé",                              "ünïcödé",                 1.0),
    ("42",                                   "42",                      1.0),
    ("42.",                                  "42",                      1.0),
    ("4.2",                                  "42",                      1.0),  # the point is punctuation
    ("1,000",                                "1000",                    1.0),
    ("-5",                                   "5",                       1.0),  # so is the sign
    ("five",                                 "5",                       0.0),
    ("$100",                                 "100",                     1.0),
    ("100%",                                 "100",                     1.0),
    ("a+b",                                  "ab",                      1.0),
    ("",                                     "Paris",                   N),
    ("   ",                                  "Paris",                   N),
    (None,                                   "Paris",                   N),
    ("Paris",                                "",                        N),
    ("Paris",                                None,                      N),
    ("Paris",                                "The",                     N),  # normalises to nothing
    ("The",                                  "Paris",                   0.0),  # answer normalises to ""
    ("...",                                  "Paris",                   0.0),
    ("The The",                              "a",                       N),
    ("Mew",                                  "Mew!",                    1.0),
    ("mew two",                              "Mewtwo",                  0.0),
]

# answer                                   reference                  contains
CONTAINS = [
    ("Paris",                                "Paris",                   1.0),
    ("The answer is Paris",                  "Paris",                   1.0),
    ("The answer is Paris.",                 "paris",                   1.0),
    ("It is Paris, France",                  "Paris",                   1.0),
    ("Parisian food",                        "Paris",                   0.0),  # word boundary
    ("Paris-based",                          "Paris",                   0.0),  # "parisbased"
    ("In paris",                             "PARIS",                   1.0),
    ("Comparison",                           "Paris",                   0.0),
    ("I don't know",                         "Paris",                   0.0),
    ("The Eiffel Tower in Paris",            "Eiffel Tower",            1.0),
    ("Eiffel and its Tower",                 "Eiffel Tower",            0.0),
    ("eiffel   tower",                       "The Eiffel Tower",        1.0),
    ("Tower Eiffel",                         "Eiffel Tower",            0.0),  # order matters
    ("Pikachu evolves into Raichu",          "Raichu",                  1.0),
    ("Pikachu evolves into Raichu",          "Pichu",                   0.0),
    ("Raichus",                              "Raichu",                  0.0),
    ("It's a Pikachu!",                      "Pikachu",                 1.0),
    ("«Pikachu»",                            "Pikachu",                 1.0),
    ("Level 16",                             "16",                      1.0),
    ("Level 160",                            "16",                      0.0),
    ("Level 1,600",                          "1600",                    1.0),  # commas are punctuation
    ("Level 16.5",                           "16",                      0.0),  # "165"
    ("He gets it at level -16",              "16",                      1.0),
    ("Il s'appelle Lévi",                    "Lévi",                    1.0),
    ("Il s'appelle Levi",                    "Lévi",                    0.0),
    ("ポケモン センター",                    "ポケモン",                1.0),
    ("ポケモンセンター",                     "ポケモン",                0.0),  # no space, no word boundary
    ("GROẞE Stadt",                          "große",                   1.0),
    ("ｐｉｋａｃｈｕ is yellow",             "Pikachu",                 1.0),
    ("The answer is the Pokédex.",           "pokédex",                 1.0),
    ("An Oran Berry",                        "oran berry",              1.0),
    ("Oran Berries",                         "oran berry",              0.0),
    ("Professor Oak gives it",               "Prof. Oak",               0.0),  # "prof oak"
    ("Prof. Oak gives it",                   "Professor Oak",           0.0),
    ("prof oak",                             "Prof. Oak",               1.0),
    ("Answer: Surf",                         "Surf",                    1.0),
    ("surfing",                              "Surf",                    0.0),
    ("HM03 Surf",                            "surf",                    1.0),
    ("Surf (HM03)",                          "HM03",                    1.0),
    ("Both Surf and Fly",                    "Fly",                     1.0),
    ("Butterfly",                            "Fly",                     0.0),
    ("Fly",                                  "Surf and Fly",            0.0),  # longer reference
    ("a",                                    "Fly",                     0.0),
    ("The",                                  "Fly",                     0.0),
    ("",                                     "Fly",                     N),
    ("\n",                                   "Fly",                     N),
    (None,                                   "Fly",                     N),
    ("Fly",                                  "",                        N),
    ("Fly",                                  "  ",                      N),
    ("Fly",                                  "the a an",                N),
    ("Fly",                                  "!!!",                     N),
    ("it's an EGG",                          "egg",                     1.0),
]

# answer                                   reference                  numeric (tolerance 1e-6)
NUMERIC = [
    ("42",                                   "42",                      1.0),
    ("The answer is 42.",                    "42",                      1.0),
    ("42.0",                                 "42",                      1.0),
    ("42.000001",                            "42",                      1.0),  # within 1e-6 relative
    ("42.001",                               "42",                      0.0),
    ("43",                                   "42",                      0.0),
    ("1,234",                                "1234",                    1.0),
    ("1,234,567",                            "1234567",                 1.0),
    ("1,234.5",                              "1234.5",                  1.0),
    ("It costs $1,000,000.",                 "1000000",                 1.0),
    ("1,23",                                 "1",                       1.0),  # not a group of three
    ("3,5",                                  "3.5",                     0.0),  # no decimal comma: 3
    ("-5",                                   "-5",                      1.0),
    ("-5",                                   "5",                       0.0),
    ("+5",                                   "5",                       1.0),
    ("\u22125",                              "-5",                      1.0),  # Unicode minus
    ("minus 5",                              "-5",                      0.0),
    ("COVID-19",                             "19",                      1.0),  # a hyphen in a word
    ("pages 10-20",                          "10",                      1.0),
    ("Temperature: -40 degrees",             "-40",                     1.0),
    ("0.5",                                  ".5",                      1.0),
    (".5",                                   "0.5",                     1.0),
    ("50%",                                  "50",                      1.0),  # the % sign is ignored
    ("50%",                                  "0.5",                     0.0),
    ("1.5e3",                                "1500",                    1.0),
    ("1.5E+3",                               "1,500",                   1.0),
    ("10e-3",                                "0.01",                    1.0),
    ("2nd",                                  "2",                       1.0),
    ("5kg",                                  "5",                       1.0),
    ("mp3",                                  "3",                       0.0),  # glued to a letter
    ("H2O",                                  "2",                       0.0),
    ("v1.5 then 7",                          "7",                       1.0),
    ("five",                                 "5",                       0.0),
    ("I don't know",                         "5",                       0.0),
    ("Level 16 or 17",                       "17",                      0.0),  # the first number
    ("Level 16 or 17",                       "16",                      1.0),
    ("16",                                   "Level 16",                1.0),  # the reference's first
    ("0",                                    "0",                       1.0),
    ("0.0000001",                            "0",                       0.0),  # relative: 0 is only 0
    ("-0",                                   "0",                       1.0),
    ("١٢",                                   "12",                      0.0),  # ASCII digits only
    ("１２",                                 "12",                      0.0),
    ("Pokémon #25 is Pikachu",               "25",                      1.0),
    ("(42)",                                 "42",                      1.0),
    ("42",                                   "about 42 km",             1.0),
    ("1000000",                              "1e6",                     1.0),
    ("999999",                               "1e6",                     1.0),  # |d| = 1e-6 x 1e6
    ("999990",                               "1e6",                     0.0),
    ("3.14159",                              "3.14159",                 1.0),
    ("3.14",                                 "3.14159",                 0.0),
    ("",                                     "42",                      N),
    (None,                                   "42",                      N),
    ("42",                                   "",                        N),
    ("42",                                   "forty-two",               N),  # no number in the reference
    ("42",                                   "Pikachu",                 N),
    ("no number",                            "none either",             N),
]

ANSWER_IS = compile_answer_regex(r"(?i)answer is:?\s*([^.,;]+)")
# answer                                   reference                  regex "answer is (...)"
REGEX = [
    ("The answer is Paris.",                 "Paris",                   1.0),
    ("The answer is paris",                  "Paris",                   1.0),
    ("the ANSWER IS the Eiffel Tower.",      "Eiffel Tower",            1.0),
    ("Answer is: Paris",                     "Paris",                   1.0),
    ("I think the answer is Paris, France",  "Paris",                   1.0),
    ("The answer is Paris France",           "Paris",                   0.0),
    ("Paris",                                "Paris",                   0.0),  # no match: wrong
    ("It is Paris",                          "Paris",                   0.0),
    ("The answer is Lyon. Not Paris.",       "Paris",                   0.0),
    ("The answer is Lyon. The answer is Paris.", "Paris",               0.0),  # the first match
    ("The answer is «Paris».",               "Paris",                   1.0),
    ("The answer is Café",                   "café",                    1.0),
    ("The answer is Cafe",                   "café",                    0.0),
    ("The answer is ポケモン",                "ポケモン",                1.0),
    ("The answer is 1,000",                  "1000",                    0.0),  # the comma ends group 1
    ("The answer is 42",                     "42",                      1.0),
    ("The answer is -42",                    "42",                      1.0),  # exact drops the sign
    ("The answer is",                        "Paris",                   0.0),
    ("answer is Surf; Fly is wrong",         "Surf",                    1.0),
    ("My answer is Raichu",                  "raichu",                  1.0),
    ("My answer is: Raichu; or Pikachu",     "Raichu",                  1.0),
    ("ANSWER IS RAICHU",                     "raichu",                  1.0),
    ("answer isRaichu",                      "Raichu",                  1.0),  # \s* allows none
    ("answers is Raichu",                    "Raichu",                  0.0),
    ("The answer is Mr. Mime",               "Mr Mime",                 0.0),  # "." ends group 1
    ("The answer is Mr Mime",                "Mr. Mime",                1.0),
    ("The answer is an Oran Berry.",         "Oran Berry",              1.0),
    ("The answer is Oran Berry!",            "Oran Berry",              1.0),
    ("The answer is\nSurf",                  "Surf",                    1.0),
    ("The answer is  \t Surf",               "surf",                    1.0),
    ("The answer is Ｓｕｒｆ",                "Surf",                    1.0),
    ("The answer is the",                    "Surf",                    0.0),
    ("",                                     "Paris",                   N),
    (None,                                   "Paris",                   N),
    ("The answer is Paris",                  "",                        N),
    ("The answer is Paris",                  "the",                     N),
]

BOXED = compile_answer_regex(r"\\boxed\{([^}]*)\}")
# answer                                   reference                  regex "\boxed{(...)}"
BOXED_TABLE = [
    (r"So \boxed{42}",                       "42",                      1.0),
    (r"\boxed{ 42 }",                        "42",                      1.0),
    (r"\boxed{41} then \boxed{42}",          "42",                      0.0),
    (r"\boxed{}",                            "42",                      0.0),
    (r"boxed 42",                            "42",                      0.0),
    (r"\boxed{The Pokédex}",                 "pokedex",                 0.0),
    (r"\boxed{The Pokédex}",                 "pokédex",                 1.0),
    (r"\boxed{Mr. Mime}",                    "Mr Mime",                 1.0),
    (r"\boxed{Mr. Mime}",                    "Mime",                    0.0),
    (r"\boxed{a} \boxed{b}",                 "a b",                     0.0),
]

OPTIONAL = compile_answer_regex(r"final(?: answer (\w+))?")
# answer                                   reference                  regex with an optional group
OPTIONAL_TABLE = [
    ("final answer Surf",                    "Surf",                    1.0),
    ("final",                                "Surf",                    0.0),  # group 1 took no part
    ("final answer",                         "Surf",                    0.0),
    ("nothing",                              "Surf",                    0.0),
    ("final answer surf",                    "SURF",                    1.0),
]


def _ids(table):
    return [f"{n}:{a!r}-{r!r}"[:60] for n, (a, r, _) in enumerate(table)]


@pytest.mark.parametrize("answer, reference, expected", EXACT, ids=_ids(EXACT))
def test_exact(answer, reference, expected):
    assert exact(answer, reference) == expected


@pytest.mark.parametrize("answer, reference, expected", CONTAINS, ids=_ids(CONTAINS))
def test_contains(answer, reference, expected):
    assert contains(answer, reference) == expected


@pytest.mark.parametrize("answer, reference, expected", NUMERIC, ids=_ids(NUMERIC))
def test_numeric(answer, reference, expected):
    assert numeric(answer, reference, 1e-6) == expected


@pytest.mark.parametrize("answer, reference, expected", REGEX, ids=_ids(REGEX))
def test_regex_answer_is(answer, reference, expected):
    assert regex_match(answer, reference, ANSWER_IS) == expected


@pytest.mark.parametrize("answer, reference, expected", BOXED_TABLE + OPTIONAL_TABLE,
                         ids=_ids(BOXED_TABLE + OPTIONAL_TABLE))
def test_regex_other_patterns(answer, reference, expected):
    pattern = BOXED if answer is not None and "boxed" in answer else OPTIONAL
    assert regex_match(answer, reference, pattern) == expected


def test_every_table_has_at_least_fifty_pairs():
    sizes = [len(EXACT), len(CONTAINS), len(NUMERIC), len(REGEX + BOXED_TABLE + OPTIONAL_TABLE)]
    assert min(sizes) >= 50, sizes


# tolerance   answer       reference   numeric
TOLERANCES = [
    (1e-6,        "100.00001",  "100",      1.0),
    (1e-8,        "100.00001",  "100",      0.0),
    (0.05,        "104",        "100",      1.0),
    (0.05,        "106",        "100",      0.0),
    (0.0,         "100",        "100.0",    1.0),
    (0.0,         "100.0001",   "100",      0.0),
]


@pytest.mark.parametrize("tolerance, answer, reference, expected", TOLERANCES)
def test_numeric_tolerance_is_relative(tolerance, answer, reference, expected):
    assert numeric(answer, reference, tolerance) == expected


def test_first_number_reads_signs_commas_decimals_and_exponents():
    assert [first_number(t) for t in ("x -1,234.5e2 y", "+.25", "none", "mp3 and 4", "50%")] == \
        [-123450.0, 0.25, None, 4.0, 50.0]


def test_normalise_is_squad_style():
    assert normalise("  The  Quick, brown FOX! an a ") == "quick brown fox"


@pytest.mark.parametrize("pattern, why", [("(unclosed", "does not compile"), (r"answer is \w+", "has no group")])
def test_a_bad_regex_is_refused_in_one_line(pattern, why):
    with pytest.raises(UserError, match=re.escape(why)) as caught:
        compile_answer_regex(pattern)
    assert "\n" not in str(caught.value)


def test_params_carry_the_settings_that_change_a_value():
    assert numeric_scorer(0.01)[1]["tolerance"] == 0.01
    assert regex_scorer("a(b)")[1]["regex"] == "a(b)"
    assert exact_scorer()[1] == contains_scorer()[1]  # the same rule version
    assert exact_scorer()[1] != numeric_scorer(1e-6)[1]


def test_each_scorer_scores_pairs_with_its_rule():
    pairs = [("It is Paris.", "Paris"), ("the answer is 42", "42.0"), (None, "Paris")]
    assert exact_scorer()[0](pairs) == [0.0, 0.0, None]
    assert contains_scorer()[0](pairs) == [1.0, 0.0, None]
    assert numeric_scorer(1e-6)[0](pairs) == [None, 1.0, None]  # "Paris" holds no number
    assert regex_scorer(r"answer is (\w+)")[0](pairs) == [0.0, 0.0, None]


def test_the_regex_scorer_without_a_pattern_is_refused_in_one_line():
    with pytest.raises(UserError, match=r"metric regex needs \[scoring\] regex"):
        regex_scorer(None)
