"""Template filters for patches and local shell commands on the audit pages.

A diff comes from the model and a command's output from a program: both are
untrusted. ``diff_lines`` only classifies lines; the template escapes them.
"""

from __future__ import annotations

from typing import Any

from django import template

register = template.Library()

MAX_DIFF_LINES = 2_000
MAX_LINE = 2_000


def _kind(line: str) -> str:
    if line.startswith("@@") or line.startswith("***"):
        return "hunk muted"
    if line.startswith("+"):
        return "add ok"
    if line.startswith("-"):
        return "del bad"
    return "ctx"


@register.filter
def diff_lines(diff: Any) -> list[tuple[str, str]]:
    """``(css class, line)`` for each line of a V4A diff (added lines ``ok``,
    removed ``bad``, hunk headers ``muted``), cut for the page."""
    if not isinstance(diff, str) or not diff:
        return []
    lines = diff.split("\n")
    if lines[-1] == "":
        lines.pop()
    shown = [(_kind(line), line[:MAX_LINE]) for line in lines[:MAX_DIFF_LINES]]
    if len(lines) > MAX_DIFF_LINES:
        shown.append(("muted", f"... {len(lines) - MAX_DIFF_LINES} more lines"))
    return shown


@register.filter
def as_list(value: Any) -> list[Any]:
    """``value`` when it is a JSON list, else ``[]``: a stored value of another
    shape (a number where the commands belong) lists nothing rather than
    failing the page."""
    return list(value) if isinstance(value, list | tuple) else []


@register.filter
def command_outcome(outcome: Any) -> str:
    """A local command's stored outcome as text: ``exit 0``, ``timeout``,
    ``denied``."""
    if not isinstance(outcome, dict):
        return "no output"
    kind = outcome.get("kind")
    if kind == "exit":
        return f"exit {outcome.get('exit_code')}"
    return str(kind or "no output")
