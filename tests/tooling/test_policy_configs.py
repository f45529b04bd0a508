"""Policy configs as the policy form's fields see them (issue #28): each kind's
canonical config (the same JSON for the same meaning), what the fields cannot
show, and approval conditions written as lines ``argument = value``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from tooling.forms.policy_conditions import (
    condition_lines,
    parse_conditions,
    parse_value,
)
from tooling.forms.policy_configs import (
    canonical,
    config_from_fields,
    fields_initial,
    same,
    unexpressible,
)

# (kind, a config the runtime accepts, its canonical form)
CANONICAL = [
    (
        "sequential_dependency",
        {"dependencies": {"deploy": ["test", "build", "test"], "build": ["lint"]}},
        {"dependencies": {"build": ["lint"], "deploy": ["build", "test"]}},
    ),
    ("sequential_dependency", {}, {"dependencies": {}}),
    (
        "read_before_write",
        {"read_tools": [], "write_tools": ["write_file"], "mount_point": "/ws/"},
        {"write_tools": ["write_file"], "mount_point": "ws"},
    ),
    ("read_before_write", {"mount_point": "", "read_tools": None}, {}),
    (
        "call_limit",
        {"limits": {"deploy": 1, "build": 0}},
        {"limits": {"build": 0, "deploy": 1}},
    ),
    (
        "approval",
        {
            "four_eyes": False,
            "deadline_seconds": 60,
            "approvers": {"group": " Release ", "permission": ""},
            "rules": [
                {"when": {" environment ": ["production"], "n": [1, 2]}, "tool": "a"},
                {"tool": " b "},
            ],
        },
        {
            "rules": [
                {"tool": "a", "when": {"environment": "production", "n": [1, 2]}},
                {"tool": "b"},
            ],
            "approvers": {"group": "Release"},
            "deadline_seconds": 60,
            "four_eyes": False,
        },
    ),
    ("approval", {"rules": [], "approvers": {}}, {"rules": []}),
]


@pytest.mark.parametrize(("kind", "config", "expected"), CANONICAL)
def test_canonical_config_is_the_same_json_for_the_same_meaning(
    kind: str, config: Any, expected: Any
) -> None:
    shown = canonical(kind, config)
    assert json.dumps(shown) == json.dumps(expected)  # key order included
    assert canonical(kind, shown) == shown


@pytest.mark.parametrize(("kind", "config", "expected"), CANONICAL)
def test_the_fields_show_a_canonical_config_and_write_it_back(
    kind: str, config: Any, expected: Any
) -> None:
    assert json.dumps(config_from_fields(kind, fields_initial(kind, expected))) == (
        json.dumps(expected)
    )


@pytest.mark.parametrize(
    ("kind", "config", "reason"),
    [
        ("sequential_dependency", {"dependencies": {}, "note": "x"}, "'note'"),
        ("sequential_dependency", {"dependencies": {"deploy": []}}, "runs after no"),
        ("sequential_dependency", {"dependencies": {"deploy": "build"}}, "not a list"),
        ("read_before_write", {"read_tools": "read_file"}, "read_tools is not a list"),
        ("read_before_write", {"mount_point": 5}, "mount_point is not text"),
        ("call_limit", {"limits": {"deploy": 1.0}}, "not a whole number"),
        ("approval", {"rules": [{"tool": "a", "when": {}}]}, "conditions of rule 1"),
        ("approval", {"rules": [{"tool": "a", "when": {"x": {}}}]}, "not a string"),
        ("approval", {"rules": [{"tool": "a", "when": {"a=b": 1}}]}, "'a=b'"),
        ("approval", {"rules": [], "approvers": {"group": "  "}}, "approvers.group"),
        ("approval", {"rules": [], "deadline_seconds": "60"}, "deadline_seconds"),
        ("approval", {"rules": [], "four_eyes": 1}, "four_eyes"),
        ("approval", [], "not a JSON object"),
    ],
)
def test_what_the_fields_cannot_show_is_named(
    kind: str, config: Any, reason: str
) -> None:
    assert canonical(kind, config) is None
    assert reason in (unexpressible(kind, config) or "")


def test_same_tells_true_from_one() -> None:
    assert same({"a": 1, "b": [True]}, {"b": [True], "a": 1})
    assert not same({"force": True}, {"force": 1})
    assert not same({"n": 1}, {"n": 1.0})


# -- conditions as lines ------------------------------------------------------------

ROUND_TRIP = {
    "environment": ["production", "dr"],
    "count": 3,
    "count_text": "3",
    "ratio": 1.5,
    "force": True,
    "note": None,
    "empty": "",
    "padded": " x ",
    "two_lines": "a\nb",
    "quote": '"open',
    "list_text": "[1, 2]",
    "nan_text": "NaN",
    "unicode": "Straße",
    "target.region": "us",
}


def test_conditions_read_back_as_written() -> None:
    lines = condition_lines(ROUND_TRIP)
    assert "environment = production\nenvironment = dr" in lines
    assert 'count_text = "3"' in lines and "count = 3" in lines
    assert same(parse_conditions(lines, "Rule 1"), ROUND_TRIP)


@pytest.mark.parametrize(
    ("typed", "value"),
    [
        ("production", "production"),
        ("3", 3),
        ('"3"', "3"),
        ("-2.5", -2.5),
        ("true", True),
        ("null", None),
        ("NaN", "NaN"),
        ("  spaced out  ", "spaced out"),
        ('"a \\"quoted\\" word"', 'a "quoted" word'),
    ],
)
def test_a_condition_value_is_json_or_text(typed: str, value: Any) -> None:
    assert same(parse_value(typed), value)


@pytest.mark.parametrize(
    "typed",
    [
        "\u043f\u0440\u043e\u0434",
        "Stra\u00dfe",
        "\u03b1\u03b2 beta",
        "caf\u00e9 2",
        # quantities named in Greek and the like (from a hostile review)
        "\u0394t_sensor",
        "\u03c3_threshold",
        "model_\u03b1",
        "5\u03bcm",
        "pi\u03c0",
        "x\u00b2",
        "\u6771\u4eactokyo",
        "na\u00efve_mode",
    ],
)
def test_a_condition_value_in_one_script_a_word_is_taken(typed: str) -> None:
    """Cyrillic alone, Latin with accents, a Greek word beside a Latin one:
    nothing imitates another word."""
    value = typed
    assert same(parse_value(typed), value)


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        ("[1, 2]", "is a list or an object"),
        ('{"a": 1}', "is a list or an object"),
        ('"open', "starts a quoted text that does not end"),
        ("1e400", "is not a finite number"),
        ("9" * 30, "is too long a number"),
        ("9" * 5000, "is too long a number"),
        ("[" * 100_000, "a value is one string"),
        # found by hostile QA: a Cyrillic U+0435 for the "e" of production
        ("prod\u0435ction", "reads as 'prodection' but holds U\\+0435 CYRILLIC"),
        ('"prod\u0435ction"', "reads as 'prodection'"),
        ('"prod\\u0435ction"', "reads as 'prodection'"),
        ("eu-w\u0435st 1", "'w\u0435st' reads as 'west'"),
        ("\u0391lpha", "reads as 'Alpha' but holds U\\+0391 GREEK CAPITAL"),
        # ... and by a hostile review: Armenian, full-width, invisible
        ("prod\u057dction", "reads as 'production' but holds U\\+057D ARMENIAN"),
        ("prod\uff55ction", "reads as 'production' but holds U\\+FF55 FULLWIDTH"),
        ("prod\u200bution", "holds an invisible character \\(U\\+200B"),
        ("prod\xadution", "holds an invisible character \\(U\\+00AD"),
    ],
)
def test_a_condition_value_that_is_not_one_value_is_refused(
    typed: str, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        parse_value(typed)


def test_every_bad_line_of_a_rule_is_named_at_once() -> None:
    with pytest.raises(ValidationError) as caught:
        parse_conditions(
            "environment = production\nforce true\n\n.region = us\nx = [1]", "Rule 2"
        )
    assert caught.value.messages == [
        "Rule 2, line 2: write a condition as argument = value (for example "
        "environment = production), not 'force true'.",
        "Rule 2, line 4: '.region' is not an argument name (dotted for nested "
        "arguments, such as target.region).",
        "Rule 2, line 5: '[1]' is a list or an object: a value is one string, "
        "number, true, false or null (several values: a line each; a text like "
        'this: "...").',
    ]


def test_a_condition_without_a_value_or_repeated_is_refused() -> None:
    """``environment = `` matched only an empty text: the rule never asked
    for approval (found by a hostile review). A repeated line is named."""
    with pytest.raises(ValidationError) as caught:
        parse_conditions(
            'environment = \nregion = eu\nregion = eu\nregion = "eu"\nn = 1\nn = 1.0',
            "Rule 1",
        )
    assert caught.value.messages == [
        "Rule 1, line 1: 'environment' has no value after = (to match an empty "
        'text, write "").',
        "Rule 1, line 3 repeats line 2.",
        "Rule 1, line 4 repeats line 2.",
    ]
    assert parse_conditions('environment = ""\nn = 1\nn = 1.0', "Rule 1") == {
        "environment": "",
        "n": [1, 1.0],
    }
