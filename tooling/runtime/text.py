"""Making untrusted text safe to send and to store.

Provider output and tool results are untrusted: they can hold lone surrogates
(which no UTF-8 encoder accepts, so the next request would fail), NUL bytes
(which PostgreSQL refuses in text and JSON), NaN or infinite numbers (which
strict JSON refuses) and integers too long for Python to write as text (more than
4,300 digits). Two conversions, one implementation:

- ``sendable`` replaces surrogates and too long integers, so a value can be
  replayed to the provider;
- ``storable`` also replaces NUL bytes and non-finite numbers, so a value can be
  written to any database and rendered as strict JSON.

Each replaced character becomes ``REPLACEMENT`` (U+FFFD, visible on every
page); a non-finite number becomes the string that names it. Both return
``(value, altered)`` so the caller can record that what it stores is not
exactly what it received. Nesting deeper than ``MAX_DEPTH`` is replaced by a
marker string rather than risking a ``RecursionError``.

``BIDI_CONTROLS`` matches the bidirectional controls (right-to-left
overrides and isolates, "Trojan Source") that make text display in another
order than it is: the catalog's forms refuse them, the audit pages show them
as marks.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any

REPLACEMENT = "\ufffd"
TOO_DEEP = "\ufffd[nested too deeply to keep]"
TOO_LONG = "\ufffd[an integer too long to keep]"
MAX_DEPTH = 200


def _max_int_bits(digits: int) -> int:
    """The most bits an integer may have to be written as text under a limit
    of ``digits`` digits (``sys.get_int_max_str_digits``; 0: none). At most
    14,000 bits (4,215 digits, under Python's default 4,300) whatever the
    limit, so that a process with the default limit can read the value."""
    if digits <= 0:
        return 14_000
    # 2**bits - 1 has at most digits - 1 digits (log2(10) > 3.321928)
    return min(14_000, (digits - 1) * 3_321_928 // 1_000_000)


# Python writes integers of at most 4,300 digits as text (JSON included; a
# deployment may set fewer: PYTHONINTMAXSTRDIGITS, read when this is imported):
# larger ones are replaced, as NaN is.
MAX_INT_BITS = _max_int_bits(sys.get_int_max_str_digits())

#: Bidirectional controls: marks, embeddings, overrides and isolates.
BIDI_CONTROLS = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")

_SURROGATES = re.compile("[\ud800-\udfff]")
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def sendable_text(text: str) -> tuple[str, bool]:
    """``text`` with every surrogate code point replaced."""
    if _SURROGATES.search(text) is None:  # the usual case: nothing to copy
        return text, False
    return _SURROGATES.sub(REPLACEMENT, text), True


def storable_text(text: str) -> tuple[str, bool]:
    """``text`` with every NUL byte and surrogate code point replaced."""
    if _UNSTORABLE.search(text) is None:
        return text, False
    return _UNSTORABLE.sub(REPLACEMENT, text), True


def sendable(value: Any) -> tuple[Any, bool]:
    """A copy of the JSON value ``value`` whose strings (keys included) hold
    no surrogates; unchanged values are returned as they are."""
    if _is_clean(value, _SURROGATES.search, False, 0):
        return value, False
    return _clean(value, _SURROGATES, finite=False, depth=0)


def storable(value: Any) -> tuple[Any, bool]:
    """A copy of the JSON value ``value`` that every supported database stores
    and strict JSON renders: no NUL, no surrogate, no NaN or infinity."""
    if _is_clean(value, _UNSTORABLE.search, True, 0):
        return value, False
    return _clean(value, _UNSTORABLE, finite=True, depth=0)


def _is_clean(value: Any, search: Any, finite: bool, depth: int) -> bool:
    """Whether ``_clean`` would return ``value`` unaltered: the usual case,
    checked without building anything (a run checks every request and
    response it records)."""
    kind = type(value)
    if kind is str:
        return search(value) is None
    if kind is int:
        return bool(value.bit_length() <= MAX_INT_BITS)
    if value is None or kind is bool:
        return True
    if kind is float:
        return not finite or math.isfinite(value)
    if depth >= MAX_DEPTH:
        return False
    if isinstance(value, Mapping):
        depth += 1
        for key, item in value.items():
            if type(key) is not str or search(key) is not None:
                return False
            if not _is_clean(item, search, finite, depth):
                return False
        return True
    if kind is list or kind is tuple:
        depth += 1
        for item in value:  # noqa: SIM110 (a loop: all() with a generator is slower)
            if not _is_clean(item, search, finite, depth):
                return False
        return True
    return False  # anything else: ``_clean`` decides


def _clean(
    value: Any, pattern: re.Pattern[str], *, finite: bool, depth: int
) -> tuple[Any, bool]:
    if isinstance(value, str):
        if pattern.search(value) is None:
            return value, False
        return pattern.sub(REPLACEMENT, value), True
    if isinstance(value, int) and not isinstance(value, bool):
        if value.bit_length() > MAX_INT_BITS:
            return TOO_LONG, True
        return value, False
    if value is None or isinstance(value, bool):
        return value, False
    if isinstance(value, float):
        if finite and not math.isfinite(value):
            name = "NaN" if math.isnan(value) else "Infinity"
            return (name if value > 0 or math.isnan(value) else "-Infinity"), True
        return value, False
    if depth >= MAX_DEPTH:
        return TOO_DEEP, True
    if isinstance(value, Mapping):
        altered = False
        items: dict[str, Any] = {}
        for key, item in value.items():
            new_key, key_altered = _clean(
                key if isinstance(key, str) else str(key),
                pattern,
                finite=finite,
                depth=depth,
            )
            new_item, item_altered = _clean(
                item, pattern, finite=finite, depth=depth + 1
            )
            altered = altered or key_altered or item_altered or new_key != key
            items[new_key] = new_item
        if not altered:
            return value, False
        # A dict subclass (the adapter's attribute-readable JSON objects) stays one.
        return (type(value)(items) if isinstance(value, dict) else items), True
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        altered = False
        elements: list[Any] = []
        for item in value:
            new_item, item_altered = _clean(
                item, pattern, finite=finite, depth=depth + 1
            )
            altered = altered or item_altered
            elements.append(new_item)
        if not altered:
            return value, False
        return (tuple(elements) if isinstance(value, tuple) else elements), True
    return value, False


def fit(text: str, max_length: int) -> tuple[str, bool]:
    """``text`` cut to ``max_length`` characters, ending in an ellipsis when cut."""
    if len(text) <= max_length:
        return text, False
    return text[: max_length - 1] + "\u2026", True


def shortened(text: str, limit: int = 80) -> str:
    """``text`` as a message quotes it: at most ``limit`` characters (``fit``)."""
    return fit(text, limit)[0]
