"""Which provider items the product runs itself: a provider-run (hosted)
shell call must never be run on this server."""

from __future__ import annotations

from tooling.runtime.adapters.openai.local_calls import LocalCalls
from tooling.runtime.events import InMemorySink
from tooling.runtime.execution.executor import ToolExecutor
from tooling.runtime.hosted.shell import ShellConfig, ShellSection
from tooling.runtime.local_shell import ScratchExecutor
from tooling.runtime.prompt import Prompt
from tooling.runtime.sections import MarkdownSection
from tooling.runtime.session import InMemorySession


def _local_calls(*sections: object) -> LocalCalls:
    prompt = Prompt(
        ns="tests",
        key="shells",
        sections=[
            MarkdownSection(title="Task", key="task", template="Look."),
            *sections,  # type: ignore[list-item]
        ],
    )
    rendered = prompt.render()
    executor = ToolExecutor(
        prompt=prompt, rendered=rendered, session=InMemorySession(), sink=InMemorySink()
    )
    executors = {"scratch": ScratchExecutor(["ls"])}
    return LocalCalls(executor, rendered, executors, set(), iter(range(1, 100)))


def _call(environment: object) -> dict[str, object]:
    item: dict[str, object] = {
        "type": "shell_call",
        "call_id": "call_1",
        "action": {"commands": ["ls"]},
    }
    if environment is not None:
        item["environment"] = environment
    return item


def test_a_call_without_environment_is_not_run_here_beside_a_hosted_shell() -> None:
    local = _local_calls(
        ShellSection(key="hosted"),
        ShellSection(
            ShellConfig(environment="local", executor="scratch"),
            key="local",
            name="local_shell",
        ),
    )
    assert local.claims(_call({"type": "local"}))
    assert not local.claims(_call({"type": "container_reference", "container_id": "c"}))
    # the provider ran it (or might have): it is not run again on this host
    assert not local.claims(_call(None))


def test_a_call_without_environment_is_run_when_only_a_local_shell_exists() -> None:
    local = _local_calls(
        ShellSection(ShellConfig(environment="local", executor="scratch"), key="local")
    )
    assert local.claims(_call(None))
    assert local.claims(_call({"type": "local"}))
