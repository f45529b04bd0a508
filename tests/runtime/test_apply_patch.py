"""apply_patch and the local shell through the adapter: the real ``openai`` SDK
fed by the offline provider, the product applying each operation to the
session's files under the prompt's policies and answering with
``apply_patch_call_output`` / ``shell_call_output``."""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest

from tooling.offline import (
    OfflineServer,
    ScriptedModel,
    build_response,
    offline_transport,
)
from tooling.offline.patches import CREATED_TEXT, EDIT_SUFFIX
from tooling.runtime.adapters.openai import OpenAIAdapter, RunRecord
from tooling.runtime.adapters.openai.codecs import default_codecs
from tooling.runtime.adapters.openai.codecs.apply_patch import OpenAIApplyPatchCodec
from tooling.runtime.errors import PromptValidationError
from tooling.runtime.events import (
    InMemorySink,
    PolicyDenied,
    ProviderCallCompleted,
    StateChanged,
    ToolInvoked,
)
from tooling.runtime.hosted.apply_patch import (
    ApplyPatchConfig,
    ApplyPatchSection,
    PatchApplied,
    apply_patch_tool,
)
from tooling.runtime.hosted.base import HostedTool
from tooling.runtime.hosted.shell import ShellConfig, ShellSection
from tooling.runtime.local_shell import CommandOutcome, ScratchExecutor, ShellCallOutput
from tooling.runtime.patches import PatchOperation
from tooling.runtime.policies import ReadBeforeWritePolicy
from tooling.runtime.prompt import Prompt
from tooling.runtime.results import ToolResult
from tooling.runtime.sections import MarkdownSection
from tooling.runtime.session import InMemoryFilesystem, InMemorySession
from tooling.runtime.vfs import vfs_tools

READ_FILE = [tool for tool in vfs_tools() if tool.name == "read_file"]


class Recording:
    """The offline model, remembering every request body it answered."""

    def __init__(
        self, script: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    ):
        self.model = ScriptedModel(script)
        self.requests: list[dict[str, Any]] = []

    def respond(self, request: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(copy.deepcopy(request))
        return self.model.respond(request)

    def answers(self, item_type: str) -> list[dict[str, Any]]:
        """Every answer item of ``item_type`` the product sent, once each (the
        provider's own output items, replayed, carry an ``id``)."""
        seen: dict[str, dict[str, Any]] = {}
        for request in self.requests:
            for item in request["input"]:
                if item.get("type") == item_type and "id" not in item:
                    seen.setdefault(item["call_id"], item)
        return list(seen.values())


def _adapter(model: Recording, **kwargs: Any) -> OpenAIAdapter:
    client = openai.OpenAI(
        api_key="sk-offline",
        base_url="http://offline.invalid/v1",
        http_client=httpx.Client(transport=offline_transport(model)),  # type: ignore[arg-type]
        max_retries=0,
    )
    return OpenAIAdapter(client=client, model="gpt-5.4", **kwargs)


def _prompt(
    *extra: Any, policies: Any = None, task: str = "Edit `CHANGELOG.md`."
) -> Prompt:
    return Prompt(
        ns="tests",
        key="patch",
        sections=[
            MarkdownSection(title="Task", key="task", template=task),
            MarkdownSection(
                title="Files", key="files", template="Files.", tools=READ_FILE
            ),
            *extra,
        ],
        policies=policies
        if policies is not None
        else [ReadBeforeWritePolicy(write_tools=("apply_patch",))],
    )


def _patches(sink: InMemorySink) -> list[ToolInvoked]:
    return [e for e in sink.of_type(ToolInvoked) if e.kind == "apply_patch"]


# -- config, section, codec --------------------------------------------------------


def test_tool_section_and_codec() -> None:
    tool = apply_patch_tool()
    assert (tool.kind, tool.name, tool.config) == (
        "apply_patch",
        "apply_patch",
        ApplyPatchConfig(),
    )
    section = ApplyPatchSection(name="patcher")
    assert section.hosted_tools() == (section.tool,)
    assert section.tool.name == "patcher"
    codec = default_codecs()["apply_patch"]
    assert isinstance(codec, OpenAIApplyPatchCodec)
    assert codec.serialize(tool) == {"type": "apply_patch"}
    assert codec.tool_choice(tool) == {"type": "apply_patch"}
    assert codec.item_types == ("apply_patch_call", "apply_patch_call_output")
    assert codec.parse_call({"type": "apply_patch_call_output"}) is None
    with pytest.raises(PromptValidationError, match="needs an ApplyPatchConfig"):
        apply_patch_tool(ShellConfig())  # type: ignore[arg-type]
    foreign = HostedTool(
        kind="apply_patch", name="x", description="x", config=ShellConfig()
    )
    with pytest.raises(TypeError, match="needs an ApplyPatchConfig"):
        codec.serialize(foreign)


def test_the_request_advertises_apply_patch() -> None:
    model = Recording()
    adapter = _adapter(model)
    body = adapter.request_preview(_prompt(ApplyPatchSection()).render())
    assert {"type": "apply_patch"} in body["tools"]


# -- apply_patch end to end ----------------------------------------------------------


def test_patches_are_applied_under_read_before_write_and_answered() -> None:
    model = Recording()
    session = InMemorySession()
    sink = InMemorySink()

    response = _adapter(model).evaluate(
        _prompt(ApplyPatchSection()), session=session, sink=sink
    )

    patches = _patches(sink)
    assert [(e.params.type, e.success) for e in patches] == [
        ("create_file", True),
        ("update_file", False),
        ("update_file", True),
        ("update_file", False),
    ]
    assert all(not e.native and isinstance(e.params, PatchOperation) for e in patches)
    created, denied, updated, stale = patches
    assert created.result.value == PatchApplied(
        operation="create_file",
        path="CHANGELOG.md",
        diff="+# Notes\n+\n+Created by the offline model.\n",
        content=CREATED_TEXT,
    )
    assert (
        denied.result.message == "File 'CHANGELOG.md' must be read before overwriting."
    )
    [denial] = sink.of_type(PolicyDenied)
    assert (denial.policy_name, denial.tool_name, denial.sequence) == (
        "read_before_write",
        "apply_patch",
        denied.sequence,
    )
    reads = [
        e for e in sink.of_type(ToolInvoked) if e.name == "read_file" and e.success
    ]
    assert denied.sequence < reads[0].sequence < updated.sequence
    expected = CREATED_TEXT.replace("# Notes", "# Notes" + EDIT_SUFFIX, 1)
    assert isinstance(updated.result.value, PatchApplied)
    assert updated.result.value.content == expected
    assert updated.result.value.previous == CREATED_TEXT
    assert stale.result.message.startswith(
        "Context not found in 'CHANGELOG.md': hunk 1"
    )
    assert session.filesystem.files == {"CHANGELOG.md": expected}

    answers = model.answers("apply_patch_call_output")
    assert [(a["call_id"], a["status"]) for a in answers] == [
        (created.call_id, "completed"),
        (denied.call_id, "failed"),
        (updated.call_id, "completed"),
        (stale.call_id, "failed"),
    ]
    assert answers[0]["output"] == "Created CHANGELOG.md (3 lines)"
    assert answers[1]["output"] == denied.result.message
    assert answers[3]["output"] == stale.model_output
    assert response.text is not None
    assert response.text.endswith(
        "Local calls: create_file completed, update_file failed, "
        "update_file completed, update_file failed."
    )


def test_over_loopback_http() -> None:
    session = InMemorySession()
    sink = InMemorySink()
    with OfflineServer() as server:
        adapter = OpenAIAdapter(
            client=openai.OpenAI(
                api_key="sk-offline", base_url=server.base_url, max_retries=0
            ),
            model="gpt-5.4",
        )
        adapter.evaluate(_prompt(ApplyPatchSection()), session=session, sink=sink)
    assert [e.success for e in _patches(sink)] == [True, False, True, False]
    assert session.filesystem.files["CHANGELOG.md"].startswith("# Notes" + EDIT_SUFFIX)


def test_an_existing_unread_file_is_denied_then_patched_after_a_read() -> None:
    session = InMemorySession(
        filesystem=InMemoryFilesystem({"CHANGELOG.md": "# Log\n"})
    )
    sink = InMemorySink()

    _adapter(Recording()).evaluate(
        _prompt(ApplyPatchSection()), session=session, sink=sink
    )

    steps = [(e.params.type, e.success, e.result.message[:40]) for e in _patches(sink)]
    assert steps[0] == (
        "create_file",
        False,
        "File 'CHANGELOG.md' must be read before ",
    )
    assert steps[1][:2] == ("update_file", True)
    assert session.filesystem.files == {"CHANGELOG.md": "# Log" + EDIT_SUFFIX + "\n"}


def test_without_a_read_tool_the_model_cannot_recover_and_the_file_is_untouched() -> (
    None
):
    prompt = Prompt(
        ns="tests",
        key="patch",
        sections=[
            MarkdownSection(title="Task", key="task", template="Edit `a.md`."),
            MarkdownSection(
                title="Files", key="files", template="Files.", tools=READ_FILE
            ),
            ApplyPatchSection(enabled=True),
        ],
        policies=[ReadBeforeWritePolicy(write_tools=("apply_patch",))],
    )
    session = InMemorySession(filesystem=InMemoryFilesystem({"a.md": "keep\n"}))
    sink = InMemorySink()
    _adapter(Recording()).evaluate(prompt, session=session, sink=sink)
    assert session.filesystem.files["a.md"].startswith("keep")


class _FailingRecord:
    """A policy that fails while recording a successful patch."""

    name = "fails_on_result"

    def check(self, tool: Any, params: Any, *, context: Any) -> Any:
        from tooling.runtime.policies import PolicyDecision

        return PolicyDecision.allow()

    def on_result(
        self, tool: Any, params: Any, result: ToolResult[Any], *, context: Any
    ) -> None:
        if tool.name == "apply_patch":
            raise RuntimeError("disk full")


def test_a_patch_whose_call_fails_after_writing_is_rolled_back() -> None:
    model = Recording()
    session = InMemorySession()
    sink = InMemorySink()
    prompt = _prompt(ApplyPatchSection(), policies=[_FailingRecord()])

    _adapter(model).evaluate(prompt, session=session, sink=sink)

    first = _patches(sink)[0]
    assert not first.success
    assert "could not record the result: disk full" in first.result.message
    assert session.filesystem.files == {}
    assert not [e for e in sink.of_type(StateChanged) if e.call_id == first.call_id]
    assert model.answers("apply_patch_call_output")[0]["status"] == "failed"


def test_a_resumed_run_replays_patch_answers_without_applying_them_again() -> None:
    model = Recording()
    sink = InMemorySink()
    _adapter(model).evaluate(
        _prompt(ApplyPatchSection()), session=InMemorySession(), sink=sink
    )
    responses = tuple(e.response for e in sink.of_type(ProviderCallCompleted))
    outputs = {e.sequence: e.model_output for e in sink.of_type(ToolInvoked)}
    turns = 3
    recorded_sequences = {
        e.sequence for e in sink.of_type(ToolInvoked) if e.turn <= turns
    }
    record = RunRecord(
        responses=responses[:turns],
        tool_outputs={s: outputs[s] for s in recorded_sequences},
    )
    resumed_model = Recording()
    resumed = InMemorySession()

    _adapter(resumed_model).evaluate(
        _prompt(ApplyPatchSection()),
        session=resumed,
        sink=InMemorySink(),
        resume=record,
    )

    assert resumed_model.requests[0]["input"] == model.requests[turns]["input"]


# -- hostile and malformed items -----------------------------------------------------


def _scripted(items: list[dict[str, Any]]) -> Recording:
    """A model that sends ``items`` once, then answers."""

    def script(request: dict[str, Any]) -> dict[str, Any]:
        answered = any(
            item.get("type", "").endswith("_output") for item in request["input"]
        )
        output = (
            [
                {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [
                        {"type": "output_text", "text": "done", "annotations": []}
                    ],
                }
            ]
            if answered
            else items
        )
        return build_response(request, output, response_id="resp_1", turn=1)

    return Recording(script)


def _patch_call(call_id: Any, operation: Any) -> dict[str, Any]:
    return {
        "id": f"apc_{call_id}",
        "type": "apply_patch_call",
        "call_id": call_id,
        "status": "completed",
        "operation": operation,
    }


@pytest.mark.parametrize(
    ("operation", "message"),
    [
        (
            {"type": "update_file", "path": "a.md", "diff": "@@\n-x\n+\x00\n"},
            "NUL byte",
        ),
        (
            {"type": "update_file", "path": "../etc/passwd", "diff": "@@\n-x\n+y\n"},
            "'..'",
        ),
        ({"type": "create_file", "path": "a.md", "diff": {"x": 1}}, "expected string"),
        ({"type": "chmod", "path": "a.md"}, "is not one of create_file"),
        ({"type": "delete_file", "path": "missing.md"}, "does not exist"),
        ("rm -rf /", "has no operation object"),
        (
            {"type": "update_file", "path": "a.md", "diff": "@@\n-nope\n+y\n"},
            "Context not found",
        ),
        ({"type": "create_file", "path": "a.md", "diff": "+x\n"}, "already exists"),
    ],
)
def test_hostile_operations_fail_with_a_message_and_leave_the_files(
    operation: Any, message: str
) -> None:
    model = _scripted([_patch_call("call_1", operation)])
    session = InMemorySession(filesystem=InMemoryFilesystem({"a.md": "x\n"}))
    sink = InMemorySink()
    prompt = _prompt(ApplyPatchSection(), policies=[])

    _adapter(model).evaluate(prompt, session=session, sink=sink)

    [patch] = _patches(sink)
    assert not patch.success and message in patch.result.message
    [answer] = model.answers("apply_patch_call_output")
    assert answer["status"] == "failed" and message in answer["output"]
    assert session.filesystem.files == {"a.md": "x\n"}


def test_calls_without_or_with_a_repeated_call_id_are_recorded_not_run() -> None:
    create = {"type": "create_file", "path": "b.md", "diff": "+b\n"}
    model = _scripted(
        [
            _patch_call("call_1", create),
            _patch_call("call_1", {**create, "path": "c.md"}),
            _patch_call(None, {**create, "path": "d.md"}),
        ]
    )
    session = InMemorySession()
    sink = InMemorySink()

    _adapter(model).evaluate(
        _prompt(ApplyPatchSection(), policies=[]), session=session, sink=sink
    )

    messages = [e.result.message for e in _patches(sink)]
    assert messages[1].startswith("The call_id 'call_1' was already used")
    assert messages[2] == "The apply_patch_call has no call_id; it was not run."
    assert session.filesystem.files == {"b.md": "b\n"}


def test_a_patch_for_a_prompt_without_apply_patch_is_refused() -> None:
    model = _scripted([_patch_call("call_1", {"type": "delete_file", "path": "a.md"})])
    session = InMemorySession(filesystem=InMemoryFilesystem({"a.md": "x\n"}))
    sink = InMemorySink()

    _adapter(model).evaluate(_prompt(policies=[]), session=session, sink=sink)

    [answer] = model.answers("apply_patch_call_output")
    assert answer["status"] == "failed"
    assert "no apply_patch tool" in answer["output"]
    assert session.filesystem.files == {"a.md": "x\n"}


# -- the local shell -----------------------------------------------------------------

needs_coreutils = pytest.mark.skipif(
    not all(shutil.which(p) for p in ("ls", "wc", "tail")),
    reason="coreutils not on PATH",
)


def _shell_prompt(executor: str = "scratch") -> Prompt:
    return _prompt(
        ShellSection(ShellConfig(environment="local", executor=executor)),
        policies=[],
        task="Look at `notes.md`.",
    )


@needs_coreutils
def test_local_shell_commands_run_through_the_named_executor() -> None:
    model = Recording()
    session = InMemorySession(filesystem=InMemoryFilesystem({"notes.md": "a\nb\n"}))
    sink = InMemorySink()
    adapter = _adapter(
        model, shell_executors={"scratch": ScratchExecutor(["ls", "wc", "tail"])}
    )

    adapter.evaluate(_shell_prompt(), session=session, sink=sink)

    calls = [e for e in sink.of_type(ToolInvoked) if e.kind == "shell"]
    assert [(c.native, c.success) for c in calls] == [(False, True), (False, False)]
    ran = calls[0].result.value
    assert isinstance(ran, ShellCallOutput)
    assert [(r.command, r.outcome, r.policy) for r in ran.runs] == [
        ("ls", CommandOutcome.exited(0), "command_policy"),
        ("wc -l notes.md", CommandOutcome.exited(0), "command_policy"),
        ("tail -F notes.md", CommandOutcome.timed_out(), "command_policy"),
    ]
    assert ran.runs[1].stdout == "2 notes.md\n"
    [denial] = sink.of_type(PolicyDenied)
    assert denial.policy_name == "command_policy"
    assert denial.reason == (
        "Command 1 ('rm -rf notes.md') refused: program 'rm' is not allowed "
        "(allowed: ls, tail, wc)."
    )
    first, refused = model.answers("shell_call_output")
    assert first["max_output_length"] == 4096
    assert [entry["outcome"] for entry in first["output"]] == [
        {"type": "exit", "exit_code": 0},
        {"type": "exit", "exit_code": 0},
        {"type": "timeout"},
    ]
    assert first["output"][0]["stdout"] == "notes.md\n"
    assert refused["output"] == [
        {
            "stdout": "",
            "stderr": denial.reason,
            "outcome": {"type": "exit", "exit_code": 126},
        }
    ]
    assert session.filesystem.files == {"notes.md": "a\nb\n"}


def test_no_local_command_runs_without_a_registered_executor() -> None:
    model = Recording()
    sink = InMemorySink()

    _adapter(model).evaluate(
        _shell_prompt("missing"), session=InMemorySession(), sink=sink
    )

    calls = [e for e in sink.of_type(ToolInvoked) if e.kind == "shell"]
    assert calls and not any(c.success for c in calls)
    assert "No local shell executor named 'missing'" in calls[0].result.message
    first = model.answers("shell_call_output")[0]
    assert len(first["output"]) == 3
    assert all(entry["outcome"]["exit_code"] == 126 for entry in first["output"])


def test_a_hosted_shell_is_never_run_locally() -> None:
    model = Recording()
    sink = InMemorySink()
    prompt = _prompt(ShellSection(), policies=[])

    _adapter(model).evaluate(prompt, session=InMemorySession(), sink=sink)

    calls = [e for e in sink.of_type(ToolInvoked) if e.kind == "shell"]
    assert calls and all(c.native for c in calls)
    assert model.answers("shell_call_output") == []


def test_shell_output_json_is_what_the_model_reads() -> None:
    output = ShellCallOutput(runs=(), max_output_length=1)
    assert json.loads(output.render()) == []


def test_a_later_function_call_is_never_taken_for_an_earlier_patch() -> None:
    """Calls are tracked by identity: a function call allocated where a
    finished patch call used to be must not be answered as a patch."""
    from tooling.runtime.adapters.openai.local_calls import LocalCalls
    from tooling.runtime.execution.calls import FunctionCall
    from tooling.runtime.execution.executor import ToolExecutor

    prompt = _prompt(ApplyPatchSection(), policies=[])
    rendered = prompt.render()
    executor = ToolExecutor(
        prompt=prompt, rendered=rendered, session=InMemorySession(), sink=InMemorySink()
    )
    local = LocalCalls(executor, rendered, {}, set(), iter(range(1, 100)))
    item = _patch_call("call_1", {"type": "delete_file", "path": "a.md"})
    key = id(local.call(item, 1))
    others = [
        FunctionCall(name="read_file", arguments="{}", call_id=f"c{n}")
        for n in range(2000)
    ]
    assert not any(local.owns(other) for other in others)
    assert not any(id(other) == key for other in others)
