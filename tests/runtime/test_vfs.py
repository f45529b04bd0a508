"""The virtual filesystem tools, directly and under ``ReadBeforeWritePolicy``.

Framework-free: run with ``pytest tests/runtime/test_vfs.py -p no:django``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tooling.runtime.context import ToolContext
from tooling.runtime.errors import ToolValidationError
from tooling.runtime.events import InMemorySink, PolicyDenied, ToolInvoked
from tooling.runtime.execution.calls import FunctionCall, ToolExecution
from tooling.runtime.execution.executor import ToolExecutor
from tooling.runtime.policies import ReadBeforeWritePolicy
from tooling.runtime.prompt import Prompt
from tooling.runtime.schema import dataclass_schema, is_strict_compatible
from tooling.runtime.sections import MarkdownSection
from tooling.runtime.session import InMemoryFilesystem, InMemorySession, Resources
from tooling.runtime.vfs import (
    MAX_PATH_LENGTH,
    NO_FILESYSTEM_MESSAGE,
    EditFile,
    FileContent,
    FileList,
    FileWritten,
    ListFiles,
    ReadFile,
    WriteFile,
    edit_file,
    list_files,
    normalise_path,
    normalise_prefix,
    read_file,
    vfs_tools,
    write_file,
)

# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def make_context(
    files: dict[str, str] | None = None,
) -> tuple[ToolContext, InMemoryFilesystem]:
    filesystem = InMemoryFilesystem(files)
    session = InMemorySession(filesystem=filesystem)
    prompt = Prompt(
        ns="tests",
        key="vfs",
        sections=[MarkdownSection(title="Files", key="files", tools=vfs_tools())],
    )
    context = ToolContext(
        prompt=prompt, rendered_prompt=None, adapter=None, session=session
    )
    return context, filesystem


class _NoFilesystemSession(InMemorySession):
    """A session whose resources hold no filesystem."""

    def __init__(self) -> None:
        super().__init__()
        self._empty = Resources()

    @property
    def resources(self) -> Resources:
        return self._empty


class Harness:
    """The vfs tools behind ``ReadBeforeWritePolicy``, run by the executor."""

    def __init__(self, files: dict[str, str] | None = None) -> None:
        self.filesystem = InMemoryFilesystem(files)
        self.session = InMemorySession(filesystem=self.filesystem)
        self.sink = InMemorySink()
        self.prompt = Prompt(
            ns="tests",
            key="vfs",
            sections=[
                MarkdownSection(
                    title="Files",
                    key="files",
                    template="Read a file before you overwrite it.",
                    tools=vfs_tools(),
                    policies=[ReadBeforeWritePolicy()],
                )
            ],
        )
        self.executor = ToolExecutor(
            prompt=self.prompt,
            rendered=self.prompt.render(),
            session=self.session,
            sink=self.sink,
        )
        self._calls = 0

    def call(self, name: str, **arguments: Any) -> ToolExecution:
        self._calls += 1
        return self.executor.execute(
            FunctionCall(name, json.dumps(arguments), f"call-{self._calls}")
        )


# --------------------------------------------------------------------------
# Path normalisation
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("notes.md", "notes.md"),
        ("  notes.md  ", "notes.md"),
        ("/notes.md", "notes.md"),
        ("///docs/notes.md", "docs/notes.md"),
        ("docs/a b/c.txt", "docs/a b/c.txt"),
        ("..hidden", "..hidden"),
        ("a/.config", "a/.config"),
        ("x" * MAX_PATH_LENGTH, "x" * MAX_PATH_LENGTH),
    ],
)
def test_normalise_path_accepts(raw: str, expected: str) -> None:
    assert normalise_path(raw) == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("", "Path must not be empty."),
        ("   ", "Path must not be empty."),
        ("/", "Path '/' must name a file, not the root."),
        ("../secret", "Path '../secret' must not contain '..' segments."),
        ("docs/../../etc/passwd", "must not contain '..' segments."),
        ("/..", "must not contain '..' segments."),
        ("docs\\notes.md", "must use '/' as separator, not backslashes."),
        ("C:/Windows/notes.md", "not a Windows drive path."),
        ("c:notes.md", "not a Windows drive path."),
        ("docs//notes.md", "must not contain empty segments or end with '/'."),
        ("docs/", "must not contain empty segments or end with '/'."),
        ("./notes.md", "must not contain '.' segments."),
        ("docs/./notes.md", "must not contain '.' segments."),
        ("bad\x00name", "Path must not contain control characters."),
        ("x" * (MAX_PATH_LENGTH + 1), "Path must be <= 255 characters (got 256)."),
    ],
)
def test_normalise_path_rejects(raw: str, message: str) -> None:
    with pytest.raises(ToolValidationError) as caught:
        normalise_path(raw)
    assert message in str(caught.value)


def test_normalise_prefix() -> None:
    assert normalise_prefix("") == ""
    assert normalise_prefix("  ") == ""
    assert normalise_prefix("/docs/") == "docs/"
    assert normalise_prefix("/") == ""
    with pytest.raises(ToolValidationError, match=r"Prefix '\.\./' must not"):
        normalise_prefix("../")
    with pytest.raises(ToolValidationError, match="backslashes"):
        normalise_prefix("docs\\")


# --------------------------------------------------------------------------
# Handlers
# --------------------------------------------------------------------------


def test_read_file() -> None:
    context, _ = make_context({"docs/notes.md": "héllo"})
    result = read_file(ReadFile(path="/docs/notes.md"), context=context)
    assert result.success
    assert result.value == FileContent(path="docs/notes.md", content="héllo")
    assert result.message == "Read 'docs/notes.md' (6 bytes)."
    assert result.render() == "héllo"


def test_read_missing_file() -> None:
    context, _ = make_context()
    with pytest.raises(
        ToolValidationError, match=r"^File 'nope\.md' does not exist\.$"
    ):
        read_file(ReadFile(path="nope.md"), context=context)


def test_write_file_creates_and_overwrites() -> None:
    context, filesystem = make_context()
    created = write_file(WriteFile(path="a.txt", content="hi"), context=context)
    assert created.value == FileWritten(path="a.txt", bytes_written=2, created=True)
    assert created.message == "Created 'a.txt' (2 bytes)."
    assert filesystem.files == {"a.txt": "hi"}
    again = write_file(WriteFile(path=" /a.txt ", content="é"), context=context)
    assert again.value == FileWritten(path="a.txt", bytes_written=2, created=False)
    assert again.message == "Overwrote 'a.txt' (2 bytes)."
    assert filesystem.files == {"a.txt": "é"}
    empty = write_file(WriteFile(path="b.txt", content=""), context=context)
    assert empty.message == "Created 'b.txt' (0 bytes)."


def test_write_file_rejects_bad_paths_without_writing() -> None:
    context, filesystem = make_context()
    with pytest.raises(ToolValidationError, match=r"'\.\.' segments"):
        write_file(WriteFile(path="../escape.txt", content="x"), context=context)
    assert filesystem.files == {}


def test_edit_file_single_occurrence() -> None:
    context, filesystem = make_context({"a.txt": "one two three"})
    result = edit_file(EditFile(path="a.txt", old="two", new="2"), context=context)
    assert result.success
    assert result.message == "Replaced 1 occurrence in 'a.txt'."
    assert result.value == FileWritten(path="a.txt", bytes_written=11, created=False)
    assert filesystem.files["a.txt"] == "one 2 three"


def test_edit_file_requires_a_unique_match_unless_replace_all() -> None:
    context, filesystem = make_context({"a.txt": "x x x"})
    with pytest.raises(ToolValidationError) as caught:
        edit_file(EditFile(path="a.txt", old="x", new="y"), context=context)
    assert str(caught.value) == (
        "Text to replace occurs 3 times in 'a.txt'; give more context so it "
        "occurs once, or set replace_all to true."
    )
    assert filesystem.files["a.txt"] == "x x x"
    result = edit_file(
        EditFile(path="a.txt", old="x", new="y", replace_all=True), context=context
    )
    assert result.message == "Replaced 3 occurrences in 'a.txt'."
    assert filesystem.files["a.txt"] == "y y y"


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (
            EditFile(path="a.txt", old="zzz", new="y"),
            "Text to replace was not found in 'a.txt'.",
        ),
        (EditFile(path="a.txt", old="", new="y"), "'old' must not be empty."),
        (
            EditFile(path="a.txt", old="abc", new="abc"),
            "'old' and 'new' are identical; nothing to change.",
        ),
        (EditFile(path="missing.txt", old="a", new="b"), "does not exist."),
        (EditFile(path="..", old="a", new="b"), "'..' segments"),
    ],
)
def test_edit_file_errors(params: EditFile, message: str) -> None:
    context, filesystem = make_context({"a.txt": "abc"})
    with pytest.raises(ToolValidationError) as caught:
        edit_file(params, context=context)
    assert message in str(caught.value)
    assert filesystem.files == {"a.txt": "abc"}


def test_list_files() -> None:
    context, _ = make_context({"b.md": "", "docs/a.md": "", "docs/z/c.md": ""})
    everything = list_files(ListFiles(), context=context)
    assert everything.value == FileList(paths=("b.md", "docs/a.md", "docs/z/c.md"))
    assert everything.message == "Found 3 files."
    assert everything.render() == "b.md\ndocs/a.md\ndocs/z/c.md"
    docs = list_files(ListFiles(prefix="/docs/z"), context=context)
    assert docs.value == FileList(paths=("docs/z/c.md",))
    assert docs.message == "Found 1 file under 'docs/z'."
    none = list_files(ListFiles(prefix="nothing"), context=context)
    assert none.value == FileList(paths=())
    assert none.render() == "<no files>"


@pytest.mark.parametrize(
    ("handler", "params"),
    [
        (read_file, ReadFile(path="a")),
        (write_file, WriteFile(path="a", content="b")),
        (edit_file, EditFile(path="a", old="b", new="c")),
        (list_files, ListFiles()),
    ],
)
def test_no_filesystem_is_a_failed_result(handler: Any, params: Any) -> None:
    context = ToolContext(
        prompt=make_context()[0].prompt,
        rendered_prompt=None,
        adapter=None,
        session=_NoFilesystemSession(),
    )
    assert context.filesystem is None
    result = handler(params, context=context)
    assert not result.success
    assert result.message == NO_FILESYSTEM_MESSAGE
    assert result.value is None


# --------------------------------------------------------------------------
# Tools and schemas
# --------------------------------------------------------------------------


def test_vfs_tools() -> None:
    tools = vfs_tools()
    assert [tool.name for tool in tools] == [
        "read_file",
        "write_file",
        "edit_file",
        "list_files",
    ]
    assert [tool.params_type for tool in tools] == [
        ReadFile,
        WriteFile,
        EditFile,
        ListFiles,
    ]
    assert [tool.result_type for tool in tools] == [
        FileContent,
        FileWritten,
        FileWritten,
        FileList,
    ]
    for tool in tools:
        assert 1 <= len(tool.description) <= 200 and tool.description.isascii()


def test_vfs_schemas_are_strict_compatible() -> None:
    for tool in vfs_tools():
        schema = dataclass_schema(tool.params_type)
        assert is_strict_compatible(schema), tool.name
        for name, prop in schema["properties"].items():
            assert prop.get("description"), (tool.name, name)


# --------------------------------------------------------------------------
# Through the executor, under ReadBeforeWritePolicy
# --------------------------------------------------------------------------


def test_policy_denies_overwriting_an_unread_file() -> None:
    harness = Harness({"notes.md": "original"})
    denied = harness.call("write_file", path="notes.md", content="new")
    assert not denied.result.success
    assert denied.output == "File 'notes.md' must be read before overwriting."
    assert harness.filesystem.files == {"notes.md": "original"}
    events = harness.sink.of_type(PolicyDenied)
    assert [(e.policy_name, e.tool_name) for e in events] == [
        ("read_before_write", "write_file")
    ]


def test_policy_denies_editing_an_unread_file() -> None:
    harness = Harness({"notes.md": "original"})
    denied = harness.call("edit_file", path="notes.md", old="original", new="x")
    assert denied.output == "File 'notes.md' must be read before overwriting."
    assert harness.filesystem.files == {"notes.md": "original"}


def test_policy_allows_creating_a_new_file() -> None:
    harness = Harness({"notes.md": "original"})
    created = harness.call("write_file", path="fresh.md", content="hello")
    assert created.result.success
    assert created.result.message == "Created 'fresh.md' (5 bytes)."
    assert harness.filesystem.files["fresh.md"] == "hello"
    assert not harness.sink.of_type(PolicyDenied)


def test_policy_allows_overwriting_after_read() -> None:
    harness = Harness({"notes.md": "original"})
    read = harness.call("read_file", path="notes.md")
    assert read.output == "Read 'notes.md' (8 bytes).\n\noriginal"
    written = harness.call("write_file", path="notes.md", content="new")
    assert written.result.success
    assert written.result.message == "Overwrote 'notes.md' (3 bytes)."
    edited = harness.call("edit_file", path="notes.md", old="new", new="newer")
    assert edited.result.success
    assert harness.filesystem.files == {"notes.md": "newer"}


def test_reading_one_file_does_not_unlock_another() -> None:
    harness = Harness({"a.md": "a", "b.md": "b"})
    harness.call("read_file", path="a.md")
    denied = harness.call("write_file", path="b.md", content="x")
    assert denied.output == "File 'b.md' must be read before overwriting."


def test_leading_slash_is_the_same_file_for_tool_and_policy() -> None:
    harness = Harness({"notes.md": "original"})
    denied = harness.call("write_file", path="/notes.md", content="x")
    assert denied.output == "File '/notes.md' must be read before overwriting."
    harness.call("read_file", path="/notes.md")
    assert harness.call("write_file", path="notes.md", content="x").result.success


def test_a_created_file_must_be_read_before_it_is_overwritten() -> None:
    harness = Harness()
    assert harness.call("write_file", path="new.md", content="1").result.success
    denied = harness.call("write_file", path="new.md", content="2")
    assert denied.output == "File 'new.md' must be read before overwriting."


def test_failed_read_does_not_unlock_the_file() -> None:
    harness = Harness({"notes.md": "x"})
    failed = harness.call("read_file", path="../notes.md")
    assert failed.output == (
        "Tool validation failed: Path '../notes.md' must not contain '..' segments."
    )
    denied = harness.call("write_file", path="notes.md", content="y")
    assert not denied.result.success


def test_failed_edit_rolls_back_and_reports_validation_error() -> None:
    harness = Harness({"notes.md": "a a"})
    harness.call("read_file", path="notes.md")
    failed = harness.call("edit_file", path="notes.md", old="a", new="b")
    assert failed.output.startswith("Tool validation failed: Text to replace occurs 2")
    assert harness.filesystem.files == {"notes.md": "a a"}
    invoked = harness.sink.of_type(ToolInvoked)
    assert [event.success for event in invoked] == [True, False]


def test_executor_rejects_unknown_arguments() -> None:
    harness = Harness()
    bad = harness.call("write_file", path="a.md", content="x", mode="append")
    assert not bad.result.success
    assert "Extra keys not permitted" in bad.output
    assert harness.filesystem.files == {}


def test_list_files_through_the_executor_with_null_prefix() -> None:
    harness = Harness({"a.md": "", "b/c.md": ""})
    listed = harness.call("list_files", prefix=None)
    assert listed.output == "Found 2 files.\n\na.md\nb/c.md"


def test_whitespace_padded_path_cannot_bypass_the_policy() -> None:
    harness = Harness({"notes.md": "original"})
    harness.call("write_file", path=" notes.md", content="clobbered")
    assert harness.filesystem.files == {"notes.md": "original"}
