"""Conditions of approval rules as the policy form shows them: a line each,
``argument = value`` (``environment = production``); one argument on several
lines matches any of its values. A value is JSON when it is one value
(``3``, ``true``, ``null``, ``"3"``), else the text itself."""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError

from .editors import quoted, text_problem

#: A whole number too long to show (``str()`` refuses past 4300 digits).
HUGE = 10**18


def condition_key_problem(key: str) -> str | None:
    """What is wrong with ``key`` as a condition's argument name (the
    runtime's rule, and what a line can hold), or ``None``."""
    if not key or any(not part.strip() for part in key.split(".")):
        return (
            f"{quoted(key)} is not an argument name (dotted for nested arguments, "
            "such as target.region)"
        )
    if "=" in key or "\n" in key or "\r" in key:
        return f"{quoted(key)} is not an argument name"
    return None


class _NotAScalar(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NotAScalar(name)


_NUMBER = re.compile(r"-?[0-9][0-9.eE+-]*")


def parse_value(text: str) -> Any:
    """A condition's value as typed: JSON text of a string, number, boolean
    or null (``3``, ``true``, ``"3"``), else the text itself as a string.
    Refused (``ValueError``): a list or an object, a number out of range, a
    quoted text whose escapes give what no text may hold (``"\\u202e"``)."""
    text = text.strip()
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except _NotAScalar:
        return text  # NaN, Infinity: text
    except ValueError:
        if _NUMBER.fullmatch(text):
            raise ValueError(f"{quoted(text)} is too long a number") from None
        if text.startswith('"'):
            raise ValueError(
                f"{quoted(text)} starts a quoted text that does not end: close it "
                'with a " (write \\" for a quote inside)'
            ) from None
        problem = mixed_script_problem(text)
        if problem:
            raise ValueError(problem) from None
        return text
    except RecursionError:
        raise ValueError("a value is one string, number, true, false or null") from None
    if isinstance(value, list | dict):
        raise ValueError(
            f"{quoted(text)} is a list or an object: a value is one string, number, "
            'true, false or null (several values: a line each; a text like this: "...")'
        )
    problem = text_problem(value) if isinstance(value, str) else None
    if problem:
        raise ValueError(problem.removesuffix("."))
    problem = mixed_script_problem(value) if isinstance(value, str) else None
    if problem:
        raise ValueError(problem)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{quoted(text)} is not a finite number")
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= HUGE:
        raise ValueError(f"{quoted(text)} is too long a number")
    return value


# Scripts whose letters look alike: a word mixing them ("production" with a
# Cyrillic U+0435 for its "e") reads as the word it imitates and equals no
# argument.
_LOOK_ALIKE_SCRIPTS = ("LATIN", "CYRILLIC", "GREEK")


def _script(char: str) -> str | None:
    name = unicodedata.name(char, "")
    return next((s for s in _LOOK_ALIKE_SCRIPTS if name.startswith(f"{s} ")), None)


def mixed_script_problem(text: str) -> str | None:
    """What is wrong with a condition's text whose word mixes Latin, Cyrillic
    or Greek letters, or ``None``: such a value would never match the
    argument it looks like, and the rule would never ask for approval."""
    for word in re.findall(r"\w+", text):
        letters = [(char, _script(char)) for char in word if char.isalpha()]
        scripts = {script for _char, script in letters if script}
        if len(scripts) < 2:
            continue
        first = next(script for _char, script in letters if script)
        odd = next(c for c, script in letters if script and script != first)
        return (
            f"{quoted(word)} mixes {first.title()} and "
            f"{(_script(odd) or '').title()} letters (U+{ord(odd):04X} "
            f"{unicodedata.name(odd, '')}): it would never match the text it "
            "looks like, so the rule would never ask; type it in one script"
        )
    return None


def show_value(value: Any) -> str:
    """A condition's value as a line shows it: text as it is when that reads
    back as the same text, else JSON (``"3"``, ``true``, ``null``)."""
    if (
        isinstance(value, str)
        and value
        and value == value.strip()
        and "\n" not in value
        and "\r" not in value
    ):
        try:
            if parse_value(value) == value:
                return value
        except ValueError:
            pass
    return json.dumps(value, ensure_ascii=False)


def condition_lines(when: Mapping[str, Any]) -> str:
    """``{"environment": ["production", "dr"]}`` as ``environment = production``
    and ``environment = dr``, a line each."""
    lines = []
    for key, value in when.items():
        for item in value if isinstance(value, list) else [value]:
            lines.append(f"{key} = {show_value(item)}")
    return "\n".join(lines)


def parse_conditions(text: str, where: str) -> dict[str, Any]:
    """The lines of ``condition_lines`` read back; every line's mistake at
    once (``ValidationError``, each naming ``where`` and the line)."""
    values: dict[str, list[Any]] = {}
    seen: dict[tuple[str, str], int] = {}  # (argument, value's JSON) -> line
    problems = []
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        key, sep, rest = line.partition("=")
        key = key.strip()
        if not sep:
            problems.append(
                f"{where}, line {number}: write a condition as argument = value "
                f"(for example environment = production), not {quoted(line.strip())}."
            )
            continue
        problem = condition_key_problem(key)
        if problem:
            problems.append(f"{where}, line {number}: {problem}.")
            continue
        if not rest.strip():
            # Not a wildcard: it would match only an empty text, so a rule
            # whose value was left out would never ask for approval.
            problems.append(
                f"{where}, line {number}: {quoted(key)} has no value after = "
                '(to match an empty text, write "").'
            )
            continue
        try:
            value = parse_value(rest)
        except ValueError as error:
            problems.append(f"{where}, line {number}: {error}.")
            continue
        written = (key, json.dumps(value, sort_keys=True))
        if written in seen:
            problems.append(f"{where}, line {number} repeats line {seen[written]}.")
            continue
        seen[written] = number
        values.setdefault(key, []).append(value)
    if problems:
        raise ValidationError(problems)
    return {
        key: items[0] if len(items) == 1 else items for key, items in values.items()
    }
