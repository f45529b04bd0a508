"""Virtual filesystem tools over the session's ``Filesystem`` resource.

``read_file``, ``write_file``, ``edit_file`` and ``list_files`` work on the
session-scoped file store (``context.filesystem``); they never touch the
host's disk. Paths are relative and '/'-separated: surrounding whitespace and
leading slashes are removed, and anything that could escape or confuse the
store ('..', '.', empty segments, backslashes, drive letters, control
characters, more than 255 characters) is refused with a
``ToolValidationError``. A session without a filesystem gets a failed result.

The tool names match ``ReadBeforeWritePolicy``'s defaults, so that policy
can require a ``read_file`` before an existing file is overwritten or edited.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Final

from .context import ToolContext
from .errors import ToolValidationError
from .results import ToolResult
from .session import Filesystem
from .tools import Tool, ToolExample

MAX_PATH_LENGTH: Final = 255
NO_FILESYSTEM_MESSAGE: Final = "No filesystem is available to this session."

_DRIVE = re.compile(r"^[A-Za-z]:")


# --------------------------------------------------------------------------
# Paths
# --------------------------------------------------------------------------


def _check_common(value: str, label: str) -> str:
    if len(value) > MAX_PATH_LENGTH:
        raise ToolValidationError(
            f"{label} must be <= {MAX_PATH_LENGTH} characters (got {len(value)})."
        )
    if "\\" in value:
        raise ToolValidationError(
            f"{label} '{value}' must use '/' as separator, not backslashes."
        )
    if _DRIVE.match(value):
        raise ToolValidationError(
            f"{label} '{value}' must be relative to the session filesystem, not a "
            "Windows drive path."
        )
    if any(ord(char) < 32 or ord(char) == 127 for char in value):
        raise ToolValidationError(f"{label} must not contain control characters.")
    relative = value.lstrip("/")
    if ".." in relative.split("/"):
        raise ToolValidationError(f"{label} '{value}' must not contain '..' segments.")
    return relative


def normalise_path(path: str) -> str:
    """The canonical form of a file path, or ``ToolValidationError``.

    Strips surrounding whitespace and leading slashes (so ``/notes.md`` is
    ``notes.md``); refuses empty paths and every segment that is empty, ``.``
    or ``..``.
    """
    value = path.strip()
    if not value:
        raise ToolValidationError("Path must not be empty.")
    relative = _check_common(value, "Path")
    if not relative:
        raise ToolValidationError(f"Path '{value}' must name a file, not the root.")
    segments = relative.split("/")
    if "" in segments:
        raise ToolValidationError(
            f"Path '{value}' must not contain empty segments or end with '/'."
        )
    if "." in segments:
        raise ToolValidationError(f"Path '{value}' must not contain '.' segments.")
    return relative


def normalise_prefix(prefix: str) -> str:
    """The canonical form of a listing prefix; an empty prefix lists everything."""
    value = prefix.strip()
    if not value:
        return ""
    return _check_common(value, "Prefix")


# --------------------------------------------------------------------------
# Parameters and results
# --------------------------------------------------------------------------

_PATH_DESCRIPTION = "Relative file path using '/' separators, e.g. 'docs/notes.md'."


@dataclasses.dataclass(frozen=True, slots=True)
class ReadFile:
    path: str = dataclasses.field(metadata={"description": _PATH_DESCRIPTION})


@dataclasses.dataclass(frozen=True, slots=True)
class WriteFile:
    path: str = dataclasses.field(metadata={"description": _PATH_DESCRIPTION})
    content: str = dataclasses.field(
        metadata={"description": "The complete new text of the file."}
    )


@dataclasses.dataclass(frozen=True, slots=True)
class EditFile:
    path: str = dataclasses.field(metadata={"description": _PATH_DESCRIPTION})
    old: str = dataclasses.field(
        metadata={"description": "Exact text to replace; must occur in the file."}
    )
    new: str = dataclasses.field(metadata={"description": "Replacement text."})
    replace_all: bool = dataclasses.field(
        default=False,
        metadata={
            "description": "Replace every occurrence; otherwise 'old' must occur "
            "exactly once."
        },
    )


@dataclasses.dataclass(frozen=True, slots=True)
class ListFiles:
    prefix: str = dataclasses.field(
        default="",
        metadata={
            "description": "Only list paths starting with this text; empty lists "
            "every file."
        },
    )


@dataclasses.dataclass(frozen=True, slots=True)
class FileContent:
    path: str
    content: str

    def render(self) -> str:
        return self.content


@dataclasses.dataclass(frozen=True, slots=True)
class FileWritten:
    path: str
    bytes_written: int
    created: bool

    def render(self) -> str:
        action = "created" if self.created else "updated"
        return f"{self.path}: {action}, {self.bytes_written} bytes"


@dataclasses.dataclass(frozen=True, slots=True)
class FileList:
    paths: tuple[str, ...]

    def render(self) -> str:
        return "\n".join(self.paths) if self.paths else "<no files>"


# --------------------------------------------------------------------------
# Handlers
# --------------------------------------------------------------------------


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _size(content: str) -> int:
    return len(content.encode("utf-8"))


def _existing(filesystem: Filesystem, path: str) -> str:
    if not filesystem.exists(path):
        raise ToolValidationError(f"File '{path}' does not exist.")
    return filesystem.read(path)


def read_file(params: ReadFile, *, context: ToolContext) -> ToolResult[FileContent]:
    """Return the text of one file."""
    filesystem = context.filesystem
    if filesystem is None:
        return ToolResult.error(NO_FILESYSTEM_MESSAGE)
    path = normalise_path(params.path)
    content = _existing(filesystem, path)
    return ToolResult.ok(
        FileContent(path=path, content=content),
        f"Read '{path}' ({_plural(_size(content), 'byte')}).",
    )


def write_file(params: WriteFile, *, context: ToolContext) -> ToolResult[FileWritten]:
    """Create a file or replace its whole content."""
    filesystem = context.filesystem
    if filesystem is None:
        return ToolResult.error(NO_FILESYSTEM_MESSAGE)
    path = normalise_path(params.path)
    created = not filesystem.exists(path)
    filesystem.write(path, params.content)
    size = _size(params.content)
    verb = "Created" if created else "Overwrote"
    return ToolResult.ok(
        FileWritten(path=path, bytes_written=size, created=created),
        f"{verb} '{path}' ({_plural(size, 'byte')}).",
    )


def edit_file(params: EditFile, *, context: ToolContext) -> ToolResult[FileWritten]:
    """Replace exact text inside an existing file."""
    filesystem = context.filesystem
    if filesystem is None:
        return ToolResult.error(NO_FILESYSTEM_MESSAGE)
    path = normalise_path(params.path)
    if not params.old:
        raise ToolValidationError("'old' must not be empty.")
    if params.old == params.new:
        raise ToolValidationError("'old' and 'new' are identical; nothing to change.")
    content = _existing(filesystem, path)
    count = content.count(params.old)
    if count == 0:
        raise ToolValidationError(f"Text to replace was not found in '{path}'.")
    if count > 1 and not params.replace_all:
        raise ToolValidationError(
            f"Text to replace occurs {count} times in '{path}'; give more context "
            "so it occurs once, or set replace_all to true."
        )
    updated = content.replace(params.old, params.new)
    filesystem.write(path, updated)
    size = _size(updated)
    return ToolResult.ok(
        FileWritten(path=path, bytes_written=size, created=False),
        f"Replaced {_plural(count, 'occurrence')} in '{path}'.",
    )


def list_files(params: ListFiles, *, context: ToolContext) -> ToolResult[FileList]:
    """List file paths, optionally under a prefix."""
    filesystem = context.filesystem
    if filesystem is None:
        return ToolResult.error(NO_FILESYSTEM_MESSAGE)
    prefix = normalise_prefix(params.prefix)
    paths = tuple(sorted(filesystem.list(prefix)))
    where = f" under '{prefix}'" if prefix else ""
    return ToolResult.ok(
        FileList(paths=paths), f"Found {_plural(len(paths), 'file')}{where}."
    )


# --------------------------------------------------------------------------
# Tools
# --------------------------------------------------------------------------


def vfs_tools() -> tuple[Tool[Any, Any], ...]:
    """``read_file``, ``write_file``, ``edit_file`` and ``list_files``."""
    return (
        Tool(
            name="read_file",
            description="Read the full text of a file in the session filesystem.",
            handler=read_file,
            read_only=True,
            examples=(
                ToolExample(
                    description="Read a notes file.",
                    input=ReadFile(path="notes.md"),
                    output=FileContent(path="notes.md", content="# Notes\n"),
                ),
            ),
        ),
        Tool(
            name="write_file",
            description=(
                "Create a file or replace its whole content. Read an existing file "
                "before overwriting it."
            ),
            handler=write_file,
            examples=(
                ToolExample(
                    description="Create a new notes file.",
                    input=WriteFile(path="notes.md", content="# Notes\n"),
                    output=FileWritten(path="notes.md", bytes_written=8, created=True),
                ),
            ),
        ),
        Tool(
            name="edit_file",
            description=(
                "Replace exact text in an existing file. 'old' must occur exactly "
                "once unless replace_all is true."
            ),
            handler=edit_file,
        ),
        Tool(
            name="list_files",
            description=(
                "List file paths in the session filesystem, optionally under a prefix."
            ),
            handler=list_files,
            read_only=True,
        ),
    )


__all__ = [
    "MAX_PATH_LENGTH",
    "NO_FILESYSTEM_MESSAGE",
    "EditFile",
    "FileContent",
    "FileList",
    "FileWritten",
    "ListFiles",
    "ReadFile",
    "WriteFile",
    "edit_file",
    "list_files",
    "normalise_path",
    "normalise_prefix",
    "read_file",
    "vfs_tools",
    "write_file",
]
