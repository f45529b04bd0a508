"""Bidirectional control characters, shown neutralised on the audit pages
(``tooling.bidi``): each becomes a visible ``[U+202E]``-style mark after
rendering. The record keeps them; only the page changes. A filter box's value
and a link's target keep them as character references (``neutralise_page``),
so a search submitted again, or a recorded link followed, is the one recorded.
"""

from __future__ import annotations

from typing import Any

from tooling.bidi import neutralised


class NeutraliseBidiMixin:
    """For views: their pages show bidi controls neutralised."""

    def dispatch(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        return neutralised(super().dispatch(request, *args, **kwargs))  # type: ignore[misc]
