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
        problem = look_alike_problem(text)
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
    problem = look_alike_problem(value) if isinstance(value, str) else None
    if problem:
        raise ValueError(problem)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{quoted(text)} is not a finite number")
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= HUGE:
        raise ValueError(f"{quoted(text)} is too long a number")
    return value


# Letters of other scripts that read as a Latin one (after Unicode's
# confusables, UTS #39, for the letters a condition's value would hold): a
# word whose other letters are Latin reads as the Latin word it imitates and
# equals no argument ("production" with a Cyrillic U+0435 for its "e").
_LOOKS_LATIN = str.maketrans(
    # Cyrillic
    "\u0430\u0435\u043e\u0440\u0441\u0443\u0445\u0456\u0458\u0455\u04bb"
    "\u0501\u051b\u051d\u04cf"
    "\u0410\u0412\u0415\u041a\u041c\u041d\u041e\u0420\u0421\u0422\u0425"
    "\u0406\u0408\u0405\u04ae"
    # Greek: omicron and the capitals (alpha, rho, nu ... in lower case read
    # as themselves in most fonts, and name quantities: "model_\u03b1")
    "\u03bf"
    "\u0391\u0392\u0395\u0396\u0397\u0399\u039a\u039c\u039d\u039f\u03a1"
    "\u03a4\u03a5\u03a7"
    # Armenian
    "\u057d\u0585\u0578\u0570\u0566",
    "aeopcyxijshdqwlABEKMHOPCTXIJSYoABEZHIKMNOPTYXuonhq",
)


def _halfwidth(char: str) -> str:
    """A full-width ASCII letter or digit (U+FF01-U+FF5E) as itself."""
    return chr(ord(char) - 0xFEE0) if "\uff01" <= char <= "\uff5e" else char


def _invisible(char: str) -> bool:
    return unicodedata.category(char) == "Cf"  # a zero-width space, soft hyphen


def look_alike_problem(text: str) -> str | None:
    """What is wrong with a condition's text that holds an invisible
    character, or a word that reads as a Latin one while it is not (a
    letter of another script, or a full-width one, among Latin letters), or
    ``None``: such a value would never match the argument it looks like, and
    the rule would never ask for approval. A word of another script alone
    (``прод``), or with letters no Latin one resembles (``Δt_sensor``), is
    taken."""
    for char in text:
        if _invisible(char):
            return (
                f"{quoted(text)} holds an invisible character (U+{ord(char):04X} "
                f"{unicodedata.name(char, '')}): it would never match the text it "
                "looks like, so the rule would never ask"
            )
    for word in re.findall(r"\w+", text):
        plain = "".join(map(_halfwidth, word)).translate(_LOOKS_LATIN)
        if plain == word or not plain.isascii():
            continue
        if not any(char.isascii() and char.isalpha() for char in word):
            continue  # no Latin letter to imitate beside it
        odd = next(c for c, p in zip(word, plain, strict=False) if c != p)
        return (
            f"{quoted(word)} reads as {quoted(plain)} but holds U+{ord(odd):04X} "
            f"{unicodedata.name(odd, '')}: it would never match the text it looks "
            "like, so the rule would never ask; type it in Latin letters"
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


def rules_look_alike_problem(policy: Any) -> str | None:
    """A rule's condition value that reads as another text, as the rules'
    editor refuses it (``look_alike_problem``), in a config typed as JSON."""
    for number, rule in enumerate(getattr(policy, "rules", ()), start=1):
        for key, values in rule.when.items():
            for value in values:
                problem = look_alike_problem(value) if isinstance(value, str) else None
                if problem:
                    return f"rules[{number - 1}].when.{key}: {problem}."
    return None
