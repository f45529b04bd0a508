"""apply_patch: configuration, results, the local handler, factory and section.

OpenAI's ``apply_patch`` tool is advertised like a hosted tool
(``{"type":"apply_patch"}``) but the provider runs nothing: the model sends
``apply_patch_call`` items (``create_file``, ``update_file`` with a V4A diff,
``delete_file``) and the product applies them to the session's files, the
virtual filesystem the file tools use, answering with
``apply_patch_call_output``. The adapter runs each operation as a call of
``patch_tool(hosted)``: under the prompt's policies (``ReadBeforeWritePolicy``
treats every patch as a write of its path) and inside the same rollback as
any tool call.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..context import ToolContext
from ..errors import PromptValidationError
from ..patches import PatchError, PatchOperation, apply_operation
from ..results import ToolResult
from ..tools import Tool
from ..vfs import NO_FILESYSTEM_MESSAGE, normalise_path
from .base import HostedTool
from .section import HostedToolSection
from .spec import HostedKindSpec


@dataclasses.dataclass(frozen=True, slots=True)
class ApplyPatchConfig:
    """Options of the apply_patch tool: there are none to choose (the wire
    format's only option, ``allowed_callers``, is not used)."""


@dataclasses.dataclass(frozen=True, slots=True)
class PatchApplied:
    """One applied operation: the diff and the file's text after it
    (``content`` is ``None`` once the file is deleted)."""

    operation: str
    path: str
    diff: str | None = None
    content: str | None = None
    previous: str | None = None

    @property
    def deleted(self) -> bool:
        return self.content is None

    def render(self) -> str:
        verb = {
            "create_file": "Created",
            "update_file": "Updated",
            "delete_file": "Deleted",
        }.get(self.operation, "Patched")
        if self.content is None:
            return f"{verb} {self.path}"
        lines = self.content.count("\n") + (0 if self.content.endswith("\n") else 1)
        return f"{verb} {self.path} ({lines} line{'' if lines == 1 else 's'})"


def apply_patch(
    params: PatchOperation, *, context: ToolContext
) -> ToolResult[PatchApplied]:
    """Apply one operation to the session's filesystem, all or nothing."""
    filesystem = context.filesystem
    if filesystem is None:
        return ToolResult.error(NO_FILESYSTEM_MESSAGE)
    path = normalise_path(params.path)
    current = filesystem.read(path) if filesystem.exists(path) else None
    try:
        after = apply_operation(params, current, path=path)
    except PatchError as error:
        return ToolResult.error(str(error))
    if after is None:
        filesystem.delete(path)
    else:
        filesystem.write(path, after)
    applied = PatchApplied(
        operation=params.type,
        path=path,
        diff=params.diff,
        content=after,
        previous=current,
    )
    return ToolResult(message="", value=applied)


def patch_tool(hosted: HostedTool[Any]) -> Tool[PatchOperation, PatchApplied]:
    """The local tool the adapter runs an ``apply_patch_call`` through: same
    name as ``hosted``, so the prompt's policies for it apply."""
    return Tool(
        name=hosted.name,
        description=hosted.description,
        handler=apply_patch,
    )


APPLY_PATCH_DESCRIPTION = (
    "Create, update (with a V4A diff) and delete files in the session's files."
)


def apply_patch_tool(
    config: ApplyPatchConfig | None = None,
    *,
    name: str = "apply_patch",
    description: str = APPLY_PATCH_DESCRIPTION,
) -> HostedTool[ApplyPatchConfig]:
    """An apply_patch tool, applied by the product to the session's files."""
    if config is not None and not isinstance(config, ApplyPatchConfig):
        raise PromptValidationError(
            "apply_patch_tool needs an ApplyPatchConfig.", placeholder="config"
        )
    return HostedTool(
        kind="apply_patch",
        name=name,
        description=description,
        config=config or ApplyPatchConfig(),
    )


APPLY_PATCH_TEMPLATE = """\
Use the apply_patch tool to create, change and delete files. Read a file before
patching it, and give enough unchanged context lines in each hunk to place the
change; a patch whose context is not found is refused with the reason."""


class ApplyPatchSection(HostedToolSection[ApplyPatchConfig]):
    """A section that documents and exposes the apply_patch tool."""

    default_key = "apply_patch"
    default_title = "Apply Patch"
    default_template = APPLY_PATCH_TEMPLATE
    tool_factory = apply_patch_tool


__all__ = [
    "APPLY_PATCH_DESCRIPTION",
    "ApplyPatchConfig",
    "ApplyPatchSection",
    "PatchApplied",
    "apply_patch",
    "apply_patch_tool",
    "patch_tool",
]


# -- The catalog's view of this kind (``spec.HostedKindSpec``).

APPLY_PATCH_SPEC: HostedKindSpec[ApplyPatchConfig] = HostedKindSpec(
    kind="apply_patch",
    label="Apply patch",
    config_type=ApplyPatchConfig,
    tool_factory=apply_patch_tool,
    description="Used when the kind is apply_patch, which has no options: the "
    "model's patches are applied to the session's files under the prompt's "
    "policies (read-before-write covers patches to existing files).",
)
