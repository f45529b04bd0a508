"""``register_handlers`` is here, but not a function."""

from __future__ import annotations

register_handlers = "acme.shout"
