"""The dry-run demo tools (lint, test, build, deploy).

Framework-free: run with ``pytest tests/runtime/test_builtin_tools.py -p no:django``.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tooling import builtin_tools
from tooling.builtin_tools import (
    DEMO_DEPENDENCIES,
    BuildParams,
    DeployParams,
    LintParams,
    Report,
    RunTestsParams,
    build,
    demo_tools,
    deploy,
    lint,
    run_tests,
)
from tooling.runtime import planning, vfs
from tooling.runtime.context import ToolContext
from tooling.runtime.errors import ToolValidationError
from tooling.runtime.events import InMemorySink
from tooling.runtime.execution.calls import FunctionCall, ToolExecution
from tooling.runtime.execution.executor import ToolExecutor
from tooling.runtime.policies import SequentialDependencyPolicy
from tooling.runtime.prompt import Prompt
from tooling.runtime.schema import dataclass_schema, is_strict_compatible
from tooling.runtime.sections import MarkdownSection
from tooling.runtime.session import InMemorySession


def make_prompt(*, with_policy: bool = False) -> Prompt:
    policies = [SequentialDependencyPolicy(DEMO_DEPENDENCIES)] if with_policy else []
    return Prompt(
        ns="tests",
        key="demo",
        sections=[
            MarkdownSection(
                title="Pipeline",
                key="pipeline",
                tools=demo_tools(),
                policies=policies,
            )
        ],
    )


@pytest.fixture
def context() -> ToolContext:
    return ToolContext(
        prompt=make_prompt(),
        rendered_prompt=None,
        adapter=None,
        session=InMemorySession(),
    )


def test_handlers_only_report(context: ToolContext) -> None:
    results = [
        lint(LintParams(), context=context),
        run_tests(RunTestsParams(target="tests/runtime"), context=context),
        build(BuildParams(target="  catalog "), context=context),
        deploy(DeployParams(), context=context),
        deploy(DeployParams(environment="production"), context=context),
    ]
    assert [(r.success, r.message) for r in results] == [
        (True, "Would run lint on the whole project"),
        (True, "Would run tests on tests/runtime"),
        (True, "Would build catalog"),
        (True, "Would deploy to staging"),
        (True, "Would deploy to production"),
    ]
    assert [r.value for r in results] == [
        Report(tool="lint", summary="Would run lint on the whole project"),
        Report(tool="test", summary="Would run tests on tests/runtime"),
        Report(tool="build", summary="Would build catalog"),
        Report(tool="deploy", summary="Would deploy to staging"),
        Report(tool="deploy", summary="Would deploy to production"),
    ]
    assert results[0].render() == "[lint] Would run lint on the whole project"
    # Nothing was written to the session.
    assert context.session.get_state("plan") is None


def test_blank_target_means_the_whole_project(context: ToolContext) -> None:
    assert lint(LintParams(target="   "), context=context).message == (
        "Would run lint on the whole project"
    )


def test_overlong_target_is_rejected(context: ToolContext) -> None:
    with pytest.raises(ToolValidationError, match="Target must be <= 255"):
        lint(LintParams(target="x" * 256), context=context)


def test_demo_tools_shape() -> None:
    tools = demo_tools()
    assert [tool.name for tool in tools] == ["lint", "test", "build", "deploy"]
    assert [tool.params_type for tool in tools] == [
        LintParams,
        RunTestsParams,
        BuildParams,
        DeployParams,
    ]
    for tool in tools:
        assert tool.result_type is Report
        assert tool.handler is not None
        assert 1 <= len(tool.description) <= 200 and tool.description.isascii()


def test_demo_schemas_are_strict_compatible() -> None:
    for tool in demo_tools():
        schema = dataclass_schema(tool.params_type)
        assert is_strict_compatible(schema), tool.name
    environment = dataclass_schema(DeployParams)["properties"]["environment"]
    assert environment["enum"] == ["staging", "production", None]


def test_demo_dependencies_are_valid_for_the_policy() -> None:
    policy = SequentialDependencyPolicy(DEMO_DEPENDENCIES)
    assert policy.referenced_tools() == {"lint", "test", "build", "deploy"}


class Harness:
    def __init__(self) -> None:
        self.prompt = make_prompt(with_policy=True)
        self.executor = ToolExecutor(
            prompt=self.prompt,
            rendered=self.prompt.render(),
            session=InMemorySession(),
            sink=InMemorySink(),
        )

    def call(self, name: str, **arguments: Any) -> ToolExecution:
        return self.executor.execute(FunctionCall(name, json.dumps(arguments), None))


def test_pipeline_order_is_enforced_by_the_policy() -> None:
    harness = Harness()
    assert harness.call("deploy").output == "Tool 'deploy' requires: build, test"
    assert harness.call("build").output == "Tool 'build' requires: lint"
    assert harness.call("lint", target=None).output == (
        "Would run lint on the whole project\n\n"
        "[lint] Would run lint on the whole project"
    )
    assert harness.call("build").result.success
    assert harness.call("deploy").output == "Tool 'deploy' requires: test"
    assert harness.call("test").result.success
    deployed = harness.call("deploy", environment="production")
    assert deployed.result.message == "Would deploy to production"


def test_executor_rejects_unknown_environment() -> None:
    harness = Harness()
    harness.call("lint")
    harness.call("build")
    harness.call("test")
    bad = harness.call("deploy", environment="moon")
    assert not bad.result.success
    assert bad.output.startswith("Tool validation failed: environment")


@pytest.mark.parametrize("module", [builtin_tools, planning, vfs])
def test_new_modules_are_framework_free(module: ModuleType) -> None:
    assert module.__file__ is not None
    source = Path(module.__file__).read_text(encoding="utf-8")
    imported: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            imported.add(node.module.split(".")[0])
    assert not imported & {"django", "rest_framework", "celery"}
