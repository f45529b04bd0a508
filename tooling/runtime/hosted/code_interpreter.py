"""Code interpreter: configuration, typed output, factory and section.

The provider runs the model's Python in a sandboxed container: either one it
creates on demand (``auto``, optionally sized and seeded with files) or an
existing container named by id. Containers expire after 20 idle minutes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Literal

from ..errors import PromptValidationError
from .base import HostedTool, frozen_tuple
from .section import HostedToolSection
from .spec import HostedKindSpec, HostedOption

MemoryLimit = Literal["1g", "4g", "16g", "64g"]
MEMORY_LIMITS: tuple[str, ...] = ("1g", "4g", "16g", "64g")


@dataclasses.dataclass(frozen=True, slots=True)
class CodeInterpreterConfig:
    """Options of the code_interpreter tool.

    With ``container_id`` the code runs in that existing container, which
    already has its size and files; ``memory_limit`` and ``file_ids`` only
    describe an ``auto`` container and must then stay empty.
    """

    container_id: str | None = None
    memory_limit: MemoryLimit | None = None
    file_ids: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.container_id is not None:
            if not isinstance(self.container_id, str) or not self.container_id.strip():
                raise PromptValidationError(
                    "container_id must be a non-blank container id (or None for an "
                    "auto container).",
                    placeholder="container_id",
                )
            object.__setattr__(self, "container_id", self.container_id.strip())
        if self.memory_limit is not None and self.memory_limit not in MEMORY_LIMITS:
            raise PromptValidationError(
                f"memory_limit '{self.memory_limit}' is not one of "
                f"{', '.join(MEMORY_LIMITS)}.",
                placeholder="memory_limit",
            )
        if self.file_ids is None or isinstance(self.file_ids, Mapping):
            raise PromptValidationError(
                "file_ids must be a list of file ids.", placeholder="file_ids"
            )
        ids: list[str] = []
        for value in frozen_tuple(self.file_ids):
            if not isinstance(value, str) or not value.strip():
                raise PromptValidationError(
                    f"file_ids must be non-blank strings (got {value!r}).",
                    placeholder="file_ids",
                )
            if value.strip() not in ids:
                ids.append(value.strip())
        object.__setattr__(self, "file_ids", tuple(ids))
        if self.container_id is not None and (self.memory_limit or self.file_ids):
            given = [
                name
                for name, value in (
                    ("memory_limit", self.memory_limit),
                    ("file_ids", self.file_ids),
                )
                if value
            ]
            raise PromptValidationError(
                f"container_id '{self.container_id}' names an existing container, "
                f"so {' and '.join(given)} cannot be set: they only apply to an auto "
                "container. Drop them, or drop container_id to let the provider "
                "create the container.",
                placeholder=given[0],
            )

    @property
    def auto(self) -> bool:
        """Whether the provider creates (or reuses) the container itself."""
        return self.container_id is None


@dataclasses.dataclass(frozen=True, slots=True)
class CodeRun:
    """One ``code_interpreter_call``: the code, its logs and image outputs."""

    call_id: str
    container_id: str
    code: str = ""
    logs: tuple[str, ...] = ()
    images: tuple[str, ...] = ()
    status: str = "completed"


@dataclasses.dataclass(frozen=True, slots=True)
class ContainerFile:
    """A file the code wrote, cited by the answer (download it while the
    container lives)."""

    container_id: str
    file_id: str
    filename: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class CodeInterpreterResult:
    """Every code run of a run, plus the container files the answer cites."""

    calls: tuple[CodeRun, ...] = ()
    files: tuple[ContainerFile, ...] = ()

    @property
    def logs(self) -> str:
        return "".join(log for call in self.calls for log in call.logs)

    def render(self) -> str:
        lines: list[str] = []
        for call in self.calls:
            lines.append(f"[{call.status}] {call.container_id}:\n{call.code}")
            lines.extend(call.logs)
            lines.extend(f"image: {url}" for url in call.images)
        lines.extend(
            f"file: {f.filename or f.file_id} ({f.container_id}/{f.file_id})"
            for f in self.files
        )
        return "\n".join(lines)


CODE_INTERPRETER_DESCRIPTION = (
    "Run Python code in a sandboxed container to calculate, analyse data and "
    "create files."
)


def code_interpreter_tool(
    config: CodeInterpreterConfig | None = None,
    *,
    name: str = "code_interpreter",
    description: str = CODE_INTERPRETER_DESCRIPTION,
) -> HostedTool[CodeInterpreterConfig]:
    """A code interpreter hosted tool (an auto container unless configured)."""
    if config is not None and not isinstance(config, CodeInterpreterConfig):
        raise PromptValidationError(
            "code_interpreter_tool needs a CodeInterpreterConfig.", placeholder="config"
        )
    return HostedTool(
        kind="code_interpreter",
        name=name,
        description=description,
        config=config or CodeInterpreterConfig(),
    )


CODE_INTERPRETER_TEMPLATE = """\
Use the code_interpreter tool for arithmetic, data analysis and charts instead
of computing in your head. Files you create are returned as citations; mention
them in the answer."""


class CodeInterpreterSection(HostedToolSection[CodeInterpreterConfig]):
    """A section that documents and exposes the code_interpreter hosted tool."""

    default_key = "code_interpreter"
    default_title = "Code Interpreter"
    default_template = CODE_INTERPRETER_TEMPLATE
    tool_factory = code_interpreter_tool


__all__ = [
    "CODE_INTERPRETER_DESCRIPTION",
    "MEMORY_LIMITS",
    "CodeInterpreterConfig",
    "CodeInterpreterResult",
    "CodeInterpreterSection",
    "CodeRun",
    "ContainerFile",
    "MemoryLimit",
    "code_interpreter_tool",
]


# -- The catalog's view of this kind (``spec.HostedKindSpec``).

CODE_INTERPRETER_SPEC: HostedKindSpec[CodeInterpreterConfig] = HostedKindSpec(
    kind="code_interpreter",
    label="Code interpreter",
    config_type=CodeInterpreterConfig,
    tool_factory=code_interpreter_tool,
    description="Used when the kind is code_interpreter: either an existing "
    "container id, or an auto container with a memory limit and files.",
    options=(
        HostedOption(
            "container_id",
            max_length=200,
            help="An existing container; leave empty for an auto container "
            "(then memory limit and file ids apply).",
        ),
        HostedOption("memory_limit", "choice", choices=MEMORY_LIMITS),
        HostedOption(
            "file_ids",
            "lines",
            help="Auto container: files to copy in, one id per line.",
        ),
    ),
)
