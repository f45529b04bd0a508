"""The recording boundary's one conversion: untrusted values -> storable columns.

Every recorder passes what it writes through a ``Scrubber``: text loses NUL
bytes and lone surrogates (replaced by U+FFFD, ``tooling.runtime.text``),
bounded columns get values cut to fit (the full value stays in the provider
call's raw JSON), JSON loses what strict JSON and PostgreSQL refuse, and counts
are clamped to the column's range. ``altered`` then says whether the row
differs from what was received; recorders store it as ``text_altered``.
"""

from __future__ import annotations

from typing import Any

from tooling.runtime.text import fit, storable, storable_text

MAX_COUNT = 2_147_483_647  # PositiveIntegerField on every supported database


class Scrubber:
    """Converts the values of one row and remembers whether any changed."""

    def __init__(self) -> None:
        self.altered = False

    def text(self, value: Any, max_length: int | None = None) -> str:
        """``value`` as storable text (``""`` for ``None``), cut to fit."""
        if value is None:
            return ""
        text, changed = storable_text(value if isinstance(value, str) else str(value))
        if max_length is not None:
            text, cut = fit(text, max_length)
            changed = changed or cut
        self.altered = self.altered or changed
        return text

    def optional(self, value: Any, max_length: int | None = None) -> str | None:
        """Like ``text``, but ``None`` (and ``""``) stay ``None``."""
        if value is None or value == "":
            return None
        return self.text(value, max_length)

    def json(self, value: Any) -> Any:
        cleaned, changed = storable(value)
        self.altered = self.altered or changed
        return cleaned

    def count(self, value: Any) -> int:
        """A non-negative integer that fits a ``PositiveIntegerField``."""
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            self.altered = self.altered or value is not None
            return 0
        if value > MAX_COUNT:
            self.altered = True
            return MAX_COUNT
        return value

    def optional_count(self, value: Any) -> int | None:
        return None if value is None else self.count(value)
