"""Demo tools ``lint``, ``test``, ``build`` and ``deploy``.

They are dry runs: each handler only reports what it would do, so they are
safe to expose to a model while trying out policies such as
``SequentialDependencyPolicy(DEMO_DEPENDENCIES)`` (deploy needs test and
build, build needs lint). Framework-free, like the runtime it uses.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Literal

from .runtime.context import ToolContext
from .runtime.errors import ToolValidationError
from .runtime.results import ToolResult
from .runtime.tools import Tool, ToolExample

if TYPE_CHECKING:
    from .handlers import HandlerRegistry

Environment = Literal["staging", "production"]

MAX_TARGET_LENGTH: Final = 255

DEMO_DEPENDENCIES: Final[Mapping[str, frozenset[str]]] = MappingProxyType(
    {
        "build": frozenset({"lint"}),
        "deploy": frozenset({"test", "build"}),
    }
)

_TARGET_DESCRIPTION = "Path or package to act on; '.' is the whole project."


@dataclasses.dataclass(frozen=True, slots=True)
class LintParams:
    target: str = dataclasses.field(
        default=".", metadata={"description": _TARGET_DESCRIPTION}
    )


@dataclasses.dataclass(frozen=True, slots=True)
class RunTestsParams:
    target: str = dataclasses.field(
        default=".", metadata={"description": _TARGET_DESCRIPTION}
    )


@dataclasses.dataclass(frozen=True, slots=True)
class BuildParams:
    target: str = dataclasses.field(
        default=".", metadata={"description": _TARGET_DESCRIPTION}
    )


@dataclasses.dataclass(frozen=True, slots=True)
class DeployParams:
    environment: Environment = dataclasses.field(
        default="staging",
        metadata={"description": "Where to deploy: staging or production."},
    )


@dataclasses.dataclass(frozen=True, slots=True)
class Report:
    """What a demo tool would have done."""

    tool: str
    summary: str

    def render(self) -> str:
        return f"[{self.tool}] {self.summary}"


def _target(value: str) -> str:
    """The target as the reports name it ('.' reads as "the whole project")."""
    target = value.strip() or "."
    if len(target) > MAX_TARGET_LENGTH:
        raise ToolValidationError(f"Target must be <= {MAX_TARGET_LENGTH} characters.")
    return "the whole project" if target == "." else target


def _report(tool: str, summary: str) -> ToolResult[Report]:
    return ToolResult.ok(Report(tool=tool, summary=summary), summary)


def lint(params: LintParams, *, context: ToolContext) -> ToolResult[Report]:
    """Report the lint run that would happen."""
    del context
    return _report("lint", f"Would run lint on {_target(params.target)}")


def run_tests(params: RunTestsParams, *, context: ToolContext) -> ToolResult[Report]:
    """Report the test run that would happen."""
    del context
    return _report("test", f"Would run tests on {_target(params.target)}")


def build(params: BuildParams, *, context: ToolContext) -> ToolResult[Report]:
    """Report the build that would happen."""
    del context
    return _report("build", f"Would build {_target(params.target)}")


def deploy(params: DeployParams, *, context: ToolContext) -> ToolResult[Report]:
    """Report the deployment that would happen."""
    del context
    return _report("deploy", f"Would deploy to {params.environment}")


def demo_tools() -> tuple[Tool[Any, Any], ...]:
    """The four dry-run tools, in pipeline order."""
    return (
        Tool(
            name="lint",
            description="Dry run: report the lint run that would check the target.",
            handler=lint,
            examples=(
                ToolExample(
                    description="Lint the whole project.",
                    input=LintParams(),
                    output=Report(
                        tool="lint", summary="Would run lint on the whole project"
                    ),
                ),
            ),
        ),
        Tool(
            name="test",
            description="Dry run: report the test run that would exercise the target.",
            handler=run_tests,
        ),
        Tool(
            name="build",
            description="Dry run: report the build that would package the target.",
            handler=build,
        ),
        Tool(
            name="deploy",
            description="Dry run: report the deployment to staging or production.",
            handler=deploy,
            examples=(
                ToolExample(
                    description="Deploy to staging.",
                    input=DeployParams(environment="staging"),
                    output=Report(tool="deploy", summary="Would deploy to staging"),
                ),
            ),
        ),
    )


def register_handlers(registry: HandlerRegistry) -> None:
    """Register the four as ``demo.lint`` ... ``demo.deploy`` (``docs/handlers.md``)."""
    registry.register_group("demo", demo_tools())


__all__ = [
    "DEMO_DEPENDENCIES",
    "MAX_TARGET_LENGTH",
    "BuildParams",
    "DeployParams",
    "Environment",
    "LintParams",
    "Report",
    "RunTestsParams",
    "build",
    "demo_tools",
    "deploy",
    "lint",
    "register_handlers",
    "run_tests",
]
