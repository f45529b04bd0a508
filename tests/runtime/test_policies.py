"""Tool policies: ``SequentialDependencyPolicy`` and ``ReadBeforeWritePolicy``.

Policies are exercised directly here (``check`` / ``on_result`` with a real
``ToolContext``); ``test_executor.py`` covers how the executor applies them.
"""

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from tooling.runtime.context import ToolContext
from tooling.runtime.errors import PromptValidationError
from tooling.runtime.policies import (
    PolicyDecision,
    PolicyState,
    ReadBeforeWritePolicy,
    SequentialDependencyPolicy,
    ToolPolicy,
    load_state,
    save_state,
    state_key,
)
from tooling.runtime.prompt import Prompt
from tooling.runtime.results import ToolResult
from tooling.runtime.session import InMemoryFilesystem, InMemorySession, Resources
from tooling.runtime.tools import Tool

OK: ToolResult[Any] = ToolResult.ok(None)
FAILED: ToolResult[Any] = ToolResult.error("nope")


@dataclasses.dataclass(frozen=True)
class PathParams:
    path: str
    content: str = ""


@dataclasses.dataclass(frozen=True)
class FilePathParams:
    file_path: str


@dataclasses.dataclass(frozen=True)
class NoPath:
    text: str = ""


@dataclasses.dataclass(frozen=True)
class NumericPath:
    path: int = 0


def tool(name: str) -> Tool[Any, Any]:
    return Tool(name=name, description=f"The {name} tool.")


class BareSession:
    """A session without any resources (so without a filesystem)."""

    def __init__(self) -> None:
        self.state: dict[str, Any] = {}
        self._resources = Resources()

    @property
    def session_id(self) -> str:
        return "bare"

    @property
    def resources(self) -> Resources:
        return self._resources

    def get_state(self, key: str) -> Any | None:
        return self.state.get(key)

    def put_state(self, key: str, value: Any) -> None:
        self.state[key] = value

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Any]:
        yield None


def ctx(session: Any = None, files: dict[str, str] | None = None) -> ToolContext:
    if session is None:
        session = InMemorySession(filesystem=InMemoryFilesystem(files or {}))
    return ToolContext(
        prompt=Prompt(ns="tests", key="policies"),
        rendered_prompt=None,
        adapter=None,
        session=session,
    )


# -- PolicyDecision / state helpers ----------------------------------------------


def test_policies_decision_factories() -> None:
    assert PolicyDecision.allow() == PolicyDecision(allowed=True, reason=None)
    assert PolicyDecision.deny("why") == PolicyDecision(allowed=False, reason="why")


def test_policies_builtins_satisfy_the_protocol() -> None:
    assert isinstance(SequentialDependencyPolicy({}), ToolPolicy)
    assert isinstance(ReadBeforeWritePolicy(), ToolPolicy)


def test_policies_state_is_stored_per_policy_name() -> None:
    context = ctx()
    save_state(PolicyState("one", invoked_tools=frozenset({"a"})), context)
    assert state_key("one") == "policy:one"
    assert context.session.get_state("policy:one") == PolicyState(
        "one", invoked_tools=frozenset({"a"})
    )
    assert load_state("two", context) == PolicyState("two")


def test_policies_load_state_ignores_foreign_values() -> None:
    context = ctx()
    context.session.put_state("policy:one", {"invoked_tools": ["a"]})
    assert load_state("one", context) == PolicyState("one")


# -- SequentialDependencyPolicy --------------------------------------------------


def deps() -> SequentialDependencyPolicy:
    return SequentialDependencyPolicy(
        {"deploy": {"test", "build"}, "build": ["lint"], "test": ()}
    )


def test_policies_sequential_denies_with_sorted_missing_tools() -> None:
    decision = deps().check(tool("deploy"), None, context=ctx())
    assert decision == PolicyDecision.deny("Tool 'deploy' requires: build, test")


def test_policies_sequential_lists_only_missing_tools() -> None:
    policy, context = deps(), ctx()
    policy.on_result(tool("test"), None, OK, context=context)
    decision = policy.check(tool("deploy"), None, context=context)
    assert decision.reason == "Tool 'deploy' requires: build"


def test_policies_sequential_allows_after_all_dependencies_succeeded() -> None:
    policy, context = deps(), ctx()
    for name in ("lint", "build", "test"):
        assert policy.check(tool(name), None, context=context).allowed
        policy.on_result(tool(name), None, OK, context=context)
    assert policy.check(tool("deploy"), None, context=context) == PolicyDecision.allow()


def test_policies_sequential_tools_without_dependencies_are_allowed() -> None:
    policy = deps()
    assert policy.check(tool("lint"), None, context=ctx()).allowed is True
    assert policy.check(tool("test"), None, context=ctx()).allowed is True


def test_policies_sequential_on_result_ignores_failures() -> None:
    policy, context = deps(), ctx()
    policy.on_result(tool("lint"), None, FAILED, context=context)
    assert context.session.get_state("policy:sequential_dependency") is None
    assert not policy.check(tool("build"), None, context=context).allowed


def test_policies_sequential_on_result_records_any_successful_tool() -> None:
    policy, context = deps(), ctx()
    policy.on_result(tool("unrelated"), None, OK, context=context)
    state = context.session.get_state("policy:sequential_dependency")
    assert state == PolicyState("sequential_dependency", frozenset({"unrelated"}))


def test_policies_sequential_on_result_does_not_rewrite_known_tools() -> None:
    writes: list[str] = []
    session = InMemorySession()
    original = session.put_state

    def counting(key: str, value: Any) -> None:
        writes.append(key)
        original(key, value)

    session.put_state = counting  # type: ignore[method-assign]
    policy, context = deps(), ctx(session)
    policy.on_result(tool("lint"), None, OK, context=context)
    policy.on_result(tool("lint"), None, OK, context=context)
    assert writes == ["policy:sequential_dependency"]


def test_policies_sequential_rejects_self_dependency() -> None:
    with pytest.raises(PromptValidationError) as info:
        SequentialDependencyPolicy({"a": {"a", "b"}})
    assert info.value.message == "Tool 'a' cannot depend on itself."


def test_policies_sequential_rejects_two_tool_cycle() -> None:
    with pytest.raises(PromptValidationError) as info:
        SequentialDependencyPolicy({"a": {"b"}, "b": {"a"}})
    assert info.value.message == "Dependency cycle: a -> b -> a."


def test_policies_sequential_rejects_longer_cycle() -> None:
    with pytest.raises(PromptValidationError) as info:
        SequentialDependencyPolicy({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})
    assert info.value.message == "Dependency cycle: a -> b -> c -> a."


def test_policies_sequential_accepts_diamonds() -> None:
    policy = SequentialDependencyPolicy(
        {"deploy": {"build", "test"}, "build": {"lint"}, "test": {"lint"}}
    )
    assert policy.dependencies["deploy"] == frozenset({"build", "test"})


def test_policies_sequential_dependencies_are_not_transitive() -> None:
    policy, context = deps(), ctx()
    policy.on_result(tool("build"), None, OK, context=context)
    policy.on_result(tool("test"), None, OK, context=context)
    assert policy.check(tool("deploy"), None, context=context).allowed is True


def test_policies_sequential_referenced_tools_and_name() -> None:
    policy = deps()
    assert policy.referenced_tools() == frozenset({"deploy", "build", "test", "lint"})
    assert policy.name == "sequential_dependency"
    assert SequentialDependencyPolicy({}, name="custom").name == "custom"


def test_policies_sequential_state_is_separate_per_policy_name() -> None:
    context = ctx()
    first = SequentialDependencyPolicy({"b": {"a"}}, name="first")
    second = SequentialDependencyPolicy({"b": {"a"}}, name="second")
    first.on_result(tool("a"), None, OK, context=context)
    assert first.check(tool("b"), None, context=context).allowed is True
    assert second.check(tool("b"), None, context=context).allowed is False
    assert context.session.get_state("policy:second") is None


# -- ReadBeforeWritePolicy -------------------------------------------------------


def rbw(**kwargs: Any) -> ReadBeforeWritePolicy:
    return ReadBeforeWritePolicy(**kwargs)


def test_policies_rbw_defaults() -> None:
    policy = rbw()
    assert policy.name == "read_before_write"
    assert policy.read_tools == frozenset({"read_file"})
    assert policy.write_tools == frozenset({"write_file", "edit_file"})
    # the defaults cover whichever of them a prompt has (seed 003 writes
    # ReadBeforeWritePolicy() beside read_file and write_file only)
    assert policy.referenced_tools() == frozenset()
    assert policy.mount_point == ""


def test_policies_rbw_explicit_tools_must_all_exist() -> None:
    policy = rbw(read_tools=["cat"], write_tools=["save"])
    assert policy.referenced_tools() == frozenset({"cat", "save"})
    assert rbw(write_tools=["save"]).referenced_tools() == frozenset(
        {"read_file", "save"}
    )


def test_policies_rbw_allows_non_write_tools() -> None:
    decision = rbw().check(tool("list_files"), NoPath(), context=ctx(BareSession()))
    assert decision.allowed is True


def test_policies_rbw_allows_creating_new_files() -> None:
    decision = rbw().check(tool("write_file"), PathParams("new.txt"), context=ctx())
    assert decision.allowed is True


def test_policies_rbw_denies_overwriting_unread_file_quoting_raw_path() -> None:
    context = ctx(files={"config.yaml": "a: 1"})
    decision = rbw().check(
        tool("write_file"), PathParams("/config.yaml"), context=context
    )
    assert decision == PolicyDecision.deny(
        "File '/config.yaml' must be read before overwriting."
    )


def test_policies_rbw_allows_overwriting_after_a_read() -> None:
    policy, context = rbw(), ctx(files={"config.yaml": "a: 1"})
    policy.on_result(tool("read_file"), PathParams("config.yaml"), OK, context=context)
    assert policy.check(
        tool("edit_file"), PathParams("/config.yaml"), context=context
    ) == (PolicyDecision.allow())
    state = context.session.get_state("policy:read_before_write")
    assert state is not None
    assert state.invoked_keys == frozenset({("read_file", "config.yaml")})


def test_policies_rbw_read_of_another_file_does_not_count() -> None:
    policy, context = rbw(), ctx(files={"a.txt": "", "b.txt": ""})
    policy.on_result(tool("read_file"), PathParams("a.txt"), OK, context=context)
    assert not policy.check(
        tool("write_file"), PathParams("b.txt"), context=context
    ).allowed


def test_policies_rbw_accepts_file_path_field() -> None:
    policy, context = rbw(), ctx(files={"notes.md": ""})
    assert not policy.check(
        tool("write_file"), FilePathParams("notes.md"), context=context
    ).allowed
    policy.on_result(tool("read_file"), FilePathParams("notes.md"), OK, context=context)
    assert policy.check(
        tool("write_file"), FilePathParams("notes.md"), context=context
    ).allowed


def test_policies_rbw_any_read_tool_counts() -> None:
    policy = rbw(read_tools={"read_file", "cat"}, write_tools={"write_file"})
    context = ctx(files={"x": ""})
    policy.on_result(tool("cat"), PathParams("x"), OK, context=context)
    assert policy.check(tool("write_file"), PathParams("x"), context=context).allowed


@pytest.mark.parametrize(
    ("raw", "normalised"),
    [
        ("/workspace/src/app.py", "src/app.py"),
        ("workspace/src/app.py", "src/app.py"),
        ("  /workspace/src/app.py ", "src/app.py"),
        ("/workspace", ""),
        ("workspace", ""),
        ("/workspaces/x", "workspaces/x"),
        ("src/app.py", "src/app.py"),
    ],
)
def test_policies_rbw_normalises_mount_point(raw: str, normalised: str) -> None:
    assert rbw(mount_point="/workspace/").normalise(raw) == normalised


def test_policies_rbw_without_mount_point_strips_leading_slashes() -> None:
    assert rbw().normalise("//etc/hosts") == "etc/hosts"


def test_policies_rbw_mount_point_read_allows_relative_write() -> None:
    policy = rbw(mount_point="/workspace")
    context = ctx(files={"src/app.py": "print()"})
    assert not policy.check(
        tool("write_file"), PathParams("/workspace/src/app.py"), context=context
    ).allowed
    policy.on_result(
        tool("read_file"), PathParams("/workspace/src/app.py"), OK, context=context
    )
    assert policy.check(
        tool("write_file"), PathParams("src/app.py"), context=context
    ).allowed


def test_policies_rbw_denies_without_a_path() -> None:
    decision = rbw().check(tool("write_file"), NoPath(), context=ctx())
    assert decision == PolicyDecision.deny(
        "Policy 'read_before_write' cannot decide: tool 'write_file' names no path."
    )


def test_policies_rbw_denies_non_string_path() -> None:
    decision = rbw().check(tool("write_file"), NumericPath(3), context=ctx())
    assert decision.allowed is False


def test_policies_rbw_denies_without_a_filesystem() -> None:
    decision = rbw(name="rbw").check(
        tool("write_file"), PathParams("x"), context=ctx(BareSession())
    )
    assert decision == PolicyDecision.deny(
        "Policy 'rbw' cannot decide: no filesystem is available."
    )


def test_policies_rbw_on_result_ignores_failed_reads() -> None:
    policy, context = rbw(), ctx(files={"x": ""})
    policy.on_result(tool("read_file"), PathParams("x"), FAILED, context=context)
    assert context.session.get_state("policy:read_before_write") is None


def test_policies_rbw_on_result_ignores_write_tools() -> None:
    policy, context = rbw(), ctx(files={"x": ""})
    policy.on_result(tool("write_file"), PathParams("x"), OK, context=context)
    assert context.session.get_state("policy:read_before_write") is None


def test_policies_rbw_on_result_ignores_reads_without_path() -> None:
    policy, context = rbw(), ctx()
    policy.on_result(tool("read_file"), NoPath(), OK, context=context)
    assert context.session.get_state("policy:read_before_write") is None


def test_policies_rbw_on_result_records_each_key_once() -> None:
    policy, context = rbw(), ctx()
    policy.on_result(tool("read_file"), PathParams("x"), OK, context=context)
    first = context.session.get_state("policy:read_before_write")
    policy.on_result(tool("read_file"), PathParams("/x"), OK, context=context)
    assert context.session.get_state("policy:read_before_write") is first


def test_policies_rbw_state_is_separate_per_policy_name() -> None:
    context = ctx(files={"x": ""})
    one, two = rbw(name="one"), rbw(name="two")
    one.on_result(tool("read_file"), PathParams("x"), OK, context=context)
    assert one.check(tool("write_file"), PathParams("x"), context=context).allowed
    assert not two.check(tool("write_file"), PathParams("x"), context=context).allowed


@pytest.mark.parametrize(
    "kwargs",
    [{"read_tools": ()}, {"write_tools": []}, {"read_tools": (), "write_tools": ()}],
)
def test_policies_rbw_needs_read_and_write_tools(kwargs: dict[str, Any]) -> None:
    with pytest.raises(PromptValidationError) as info:
        rbw(**kwargs)
    assert info.value.message == (
        "ReadBeforeWritePolicy needs at least one read tool and one write tool."
    )


def test_policies_rbw_rejects_tools_that_are_read_and_write() -> None:
    with pytest.raises(PromptValidationError) as info:
        rbw(
            read_tools={"edit_file", "read_file", "cat"},
            write_tools={"edit_file", "cat"},
        )
    assert (
        info.value.message
        == "Tools cannot be both read and write tools: cat, edit_file."
    )
