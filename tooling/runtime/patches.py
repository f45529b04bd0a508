"""V4A patches: the diffs of OpenAI's ``apply_patch`` tool, applied to text.

Pure functions on strings; nothing here touches a filesystem. Each operation
of an ``apply_patch_call`` maps to one function:

- ``create_file(diff)``: every line of the diff is ``+`` and a line of the new
  file;
- ``update_file(content, diff)``: the diff is a list of hunks; each starts with
  ``@@`` (optionally followed by an anchor line to find first, such as
  ``@@ def greet():``) and holds context lines (`` ``), removed lines (``-``)
  and added lines (``+``). Hunks apply in order, each after the previous one;
  context is matched exactly, then ignoring trailing whitespace, then ignoring
  surrounding whitespace. ``*** End of File`` pins a hunk to the file's end;
- ``delete_file`` has no diff.

Every failure is a ``PatchError`` whose message the model can act on: which
hunk, which diff lines and which text was not found, which line of the diff
is malformed. Placing hunks is linear in the file's length, and a patch that
needs more than ``MAX_SEARCH_LINES`` line comparisons is refused, so no diff
keeps a worker busy.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from typing import Final, Literal

MAX_DIFF_LENGTH: Final = 1_000_000
MAX_FILE_LENGTH: Final = 4_000_000
END_OF_FILE: Final = "*** End of File"
MAX_SEARCH_LINES: Final = 10_000_000  # lines compared to place all hunks
_QUOTE_LINES: Final = 6

OperationType = Literal["create_file", "update_file", "delete_file"]
OPERATION_TYPES: Final[tuple[str, ...]] = ("create_file", "update_file", "delete_file")

_INVALID = re.compile("[\x00\ud800-\udfff]")


class PatchError(ValueError):
    """A patch that cannot be applied; the message says why and where."""


@dataclasses.dataclass(frozen=True, slots=True)
class PatchOperation:
    """One ``apply_patch_call`` operation, as the model sent it.

    ``diff`` is required for ``create_file`` and ``update_file`` and absent
    for ``delete_file``. ``path`` is checked by the caller against its
    filesystem's rules.
    """

    type: str
    path: str
    diff: str | None = None

    def __post_init__(self) -> None:
        if self.type not in OPERATION_TYPES:
            raise PatchError(
                f"Operation type {_quote(self.type)} is not one of "
                f"{', '.join(OPERATION_TYPES)}."
            )
        if not isinstance(self.path, str):
            raise PatchError("The operation's path must be a string.")
        if self.type == "delete_file":
            if self.diff:
                raise PatchError("delete_file takes no diff.")
            return
        if not isinstance(self.diff, str):
            raise PatchError(f"{self.type} needs a diff (a string).")
        check_text(self.diff, "The diff", MAX_DIFF_LENGTH)


def check_text(text: str, label: str, limit: int) -> None:
    if len(text) > limit:
        raise PatchError(f"{label} is {len(text)} characters; the limit is {limit}.")
    match = _INVALID.search(text)
    if match is not None:
        what = "a NUL byte" if match.group() == "\x00" else "an invalid character"
        line = text.count("\n", 0, match.start()) + 1
        raise PatchError(f"{label} holds {what} on line {line}.")


def _quote(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


# --------------------------------------------------------------------------
# create_file
# --------------------------------------------------------------------------


def create_file(diff: str) -> str:
    """The text of a new file from a diff of ``+`` lines."""
    check_text(diff, "The diff", MAX_DIFF_LENGTH)
    lines = _diff_lines(diff)
    content: list[str] = []
    for number, line in enumerate(lines, start=1):
        if line == END_OF_FILE:
            continue
        if not line.startswith("+"):
            raise PatchError(
                f"Line {number} of the create_file diff does not start with '+': "
                f"{_quote(line)}. Every line of a new file is an added line."
            )
        content.append(line[1:])
    return "\n".join(content) + "\n" if content else ""


def _diff_lines(diff: str) -> list[str]:
    lines = diff.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the diff's own final newline
    return [line[:-1] if line.endswith("\r") else line for line in lines]


# --------------------------------------------------------------------------
# update_file
# --------------------------------------------------------------------------


@dataclasses.dataclass(slots=True)
class Hunk:
    """One ``@@`` block: what it expects (``old``) and what replaces it."""

    number: int
    first_line: int  # 1-based line of the diff where the hunk starts
    last_line: int
    anchor: str = ""
    old: list[str] = dataclasses.field(default_factory=list)
    new: list[str] = dataclasses.field(default_factory=list)
    at_end: bool = False

    @property
    def lines(self) -> str:
        if self.first_line == self.last_line:
            return f"diff line {self.first_line}"
        return f"diff lines {self.first_line}-{self.last_line}"


def parse_hunks(diff: str) -> list[Hunk]:
    """The hunks of an update diff, or ``PatchError`` naming the bad line."""
    hunks: list[Hunk] = []
    current: Hunk | None = None
    for number, line in enumerate(_diff_lines(diff), start=1):
        if line.startswith("@@"):
            anchor = line[2:].strip()
            if anchor.endswith("@@"):  # '@@ -1,2 +1,2 @@' style headers
                anchor = ""
            current = Hunk(len(hunks) + 1, number, number, anchor=anchor)
            hunks.append(current)
            continue
        if current is None:
            current = Hunk(1, number, number)
            hunks.append(current)
        current.last_line = number
        if line == END_OF_FILE:
            current.at_end = True
            continue
        if current.at_end:
            raise PatchError(
                f"Line {number} of the diff follows '{END_OF_FILE}' in hunk "
                f"{current.number}; start a new hunk with '@@'."
            )
        prefix, text = line[:1], line[1:]
        if prefix == " " or line == "":
            current.old.append(text)
            current.new.append(text)
        elif prefix == "-":
            current.old.append(text)
        elif prefix == "+":
            current.new.append(text)
        elif line.startswith("***"):
            raise PatchError(
                f"Line {number} of the diff is a patch header ({_quote(line)}); "
                "send only the hunks of this one file (lines starting with '@@', "
                "' ', '-' or '+')."
            )
        else:
            raise PatchError(
                f"Line {number} of the diff does not start with ' ', '-', '+' or "
                f"'@@': {_quote(line)}. Prefix unchanged context lines with a space."
            )
    if not hunks:
        raise PatchError("The update_file diff is empty: it holds no hunk.")
    for hunk in hunks:
        if hunk.old == hunk.new:
            raise PatchError(
                f"Hunk {hunk.number} ({hunk.lines}) changes nothing: it has no '-' "
                "or '+' lines."
            )
    return hunks


_MATCHERS: Final[tuple[Callable[[str], str], ...]] = (
    lambda line: line,
    lambda line: line.rstrip(),
    lambda line: line.strip(),
)


class _Budget:
    """How many more file lines may be compared to place a patch's hunks, so
    no patch (thousands of hunks, context that matches only loosely) can
    keep a worker busy for long."""

    def __init__(self, lines: int = MAX_SEARCH_LINES) -> None:
        self.left = lines

    def spend(self, lines: int) -> None:
        self.left -= lines
        if self.left < 0:
            raise PatchError(
                "The patch is too costly to place: its hunks needed more than "
                f"{MAX_SEARCH_LINES} line comparisons. Send fewer hunks, each "
                "with context copied exactly from the file."
            )


def _find(
    lines: Sequence[str], wanted: Sequence[str], start: int, budget: _Budget
) -> int | None:
    """Where ``wanted`` occurs in ``lines`` at or after ``start``, trying exact
    matching first, then looser matching; ``None`` when it does not occur."""
    if not wanted:
        return start
    for normal in _MATCHERS:
        found = _search(lines, [normal(line) for line in wanted], start, normal, budget)
        if found is not None:
            return found
    return None


def _search(
    lines: Sequence[str],
    wanted: Sequence[str],
    start: int,
    normal: Callable[[str], str],
    budget: _Budget,
) -> int | None:
    """The first index at or after ``start`` where the normalised ``lines``
    read ``wanted`` (Knuth-Morris-Pratt: repetitive context cannot make the
    search quadratic)."""
    fallback = [0] * len(wanted)  # longest proper prefix that is also a suffix
    length = 0
    for index in range(1, len(wanted)):
        while length and wanted[index] != wanted[length]:
            length = fallback[length - 1]
        if wanted[index] == wanted[length]:
            length += 1
        fallback[index] = length
    matched = 0
    for index in range(start, min(len(lines), start + max(budget.left, 0))):
        line = normal(lines[index])
        while matched and line != wanted[matched]:
            matched = fallback[matched - 1]
        if line == wanted[matched]:
            matched += 1
            if matched == len(wanted):
                budget.spend(index + 1 - start)
                return index - matched + 1
    budget.spend(len(lines) - start)  # raises when the scan was cut short
    return None


def _find_anchor(
    lines: Sequence[str], anchor: str, start: int, budget: _Budget
) -> int | None:
    for normal in _MATCHERS:
        wanted = normal(anchor)
        for index in range(start, min(len(lines), start + max(budget.left, 0))):
            if normal(lines[index]) == wanted:
                budget.spend(index + 1 - start)
                return index
        budget.spend(len(lines) - start)  # raises when the scan was cut short
    return None


def _excerpt(lines: Sequence[str]) -> str:
    shown = [f"    {_quote(line)}" for line in lines[:_QUOTE_LINES]]
    if len(lines) > _QUOTE_LINES:
        shown.append(f"    ... ({len(lines) - _QUOTE_LINES} more)")
    return "\n".join(shown)


def update_file(content: str, diff: str, *, path: str = "the file") -> str:
    """``content`` with every hunk of the V4A ``diff`` applied, in order.

    All or nothing: a hunk whose context is not found fails the whole patch,
    naming the hunk, its diff lines and the lines that were looked for.
    """
    check_text(diff, "The diff", MAX_DIFF_LENGTH)
    hunks = parse_hunks(diff)
    crlf = "\r\n" in content and content.count("\r\n") == content.count("\n")
    newline = "\r\n" if crlf else "\n"
    ends_with_newline = content.endswith("\n") or content == ""
    lines = content.split(newline)
    if ends_with_newline:
        lines.pop()
    # Hunks apply in order, each after the previous one: the result is built
    # as the original lines are walked once (no splicing, no copies).
    patched: list[str] = []
    budget = _Budget()
    cursor = 0
    for hunk in hunks:
        start = cursor
        if hunk.anchor:
            found = _find_anchor(lines, hunk.anchor, cursor, budget)
            if found is None:
                raise PatchError(
                    f"Context not found in '{path}': hunk {hunk.number} ({hunk.lines}) "
                    f"is anchored at {_quote(hunk.anchor)}, which does not occur "
                    + ("in the file." if cursor == 0 else "after the previous hunk.")
                    + " Read the file and resend the patch with its current text."
                )
            # Context may repeat the anchor line; an insertion goes after it.
            start = found if hunk.old else found + 1
        if hunk.at_end:
            position = len(lines) - len(hunk.old)
            if position < start or _find(lines, hunk.old, position, budget) != position:
                raise PatchError(
                    f"Context not found in '{path}': hunk {hunk.number} "
                    f"({hunk.lines}) must match the end of the file, which does "
                    f"not end with:\n{_excerpt(hunk.old)}\nRead the file and "
                    "resend the patch with its current text."
                )
            index = position
        elif not hunk.old:
            index = start if hunk.anchor else len(lines)
        else:
            found_at = _find(lines, hunk.old, start, budget)
            if found_at is None:
                where = "in the file" if start == 0 else f"after line {start}"
                raise PatchError(
                    f"Context not found in '{path}': hunk {hunk.number} "
                    f"({hunk.lines}) expects these lines {where}, and they do not "
                    f"occur:\n{_excerpt(hunk.old)}\nRead the file and resend the "
                    "patch with its current text."
                )
            index = found_at
        patched += lines[cursor:index]
        patched += hunk.new
        cursor = index + len(hunk.old)
    patched += lines[cursor:]
    result = newline.join(patched)
    if patched and ends_with_newline:
        result += newline
    if len(result) > MAX_FILE_LENGTH:
        raise PatchError(
            f"The patched '{path}' would be {len(result)} characters; the limit is "
            f"{MAX_FILE_LENGTH}."
        )
    return result


def apply_operation(
    operation: PatchOperation, current: str | None, *, path: str | None = None
) -> str | None:
    """The file's text after ``operation`` (``None``: the file is deleted).

    ``current`` is the file's text, ``None`` when it does not exist.
    """
    name = path or operation.path
    if operation.type == "create_file":
        if current is not None:
            raise PatchError(
                f"File '{name}' already exists; use update_file to change it, or "
                "delete_file first."
            )
        assert operation.diff is not None
        return create_file(operation.diff)
    if current is None:
        raise PatchError(f"File '{name}' does not exist; use create_file to create it.")
    if operation.type == "delete_file":
        return None
    assert operation.diff is not None
    return update_file(current, operation.diff, path=name)


__all__ = [
    "END_OF_FILE",
    "MAX_DIFF_LENGTH",
    "MAX_FILE_LENGTH",
    "MAX_SEARCH_LINES",
    "OPERATION_TYPES",
    "Hunk",
    "OperationType",
    "PatchError",
    "PatchOperation",
    "apply_operation",
    "check_text",
    "create_file",
    "parse_hunks",
    "update_file",
]
