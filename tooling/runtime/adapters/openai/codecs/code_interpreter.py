"""OpenAI Responses codec for ``code_interpreter``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ....hosted.base import HostedTool
from ....hosted.code_interpreter import (
    CodeInterpreterConfig,
    CodeInterpreterResult,
    CodeRun,
    ContainerFile,
)
from ..parsing import citations_from_items
from .base import NativeCall, field, status_ok

_LOG_TAIL = 500


def _config(tool: HostedTool[Any]) -> CodeInterpreterConfig:
    config = tool.config
    if not isinstance(config, CodeInterpreterConfig):
        raise TypeError(
            f"Hosted tool '{tool.name}' of kind 'code_interpreter' needs a "
            f"CodeInterpreterConfig, not {type(config).__name__}."
        )
    return config


def code_run(item: Any) -> CodeRun:
    """One ``code_interpreter_call`` item (``outputs`` need the include)."""
    logs: list[str] = []
    images: list[str] = []
    for output in field(item, "outputs", []) or []:
        kind = field(output, "type")
        if kind == "logs":
            logs.append(str(field(output, "logs", "")))
        elif kind == "image":
            url = field(output, "url")
            if isinstance(url, str) and url:
                images.append(url)
    return CodeRun(
        call_id=str(field(item, "id", "")),
        container_id=str(field(item, "container_id", "")),
        code=str(field(item, "code", "")),
        logs=tuple(logs),
        images=tuple(images),
        status=str(field(item, "status", "completed")),
    )


def container_files(items: Sequence[Any]) -> tuple[ContainerFile, ...]:
    """Files cited by ``container_file_citation`` annotations, each once."""
    files: list[ContainerFile] = []
    for citation in citations_from_items(items):
        if citation.kind != "container_file_citation" or not citation.file_id:
            continue
        found = ContainerFile(
            container_id=citation.container_id or "",
            file_id=citation.file_id,
            filename=citation.filename,
        )
        if all(
            (f.container_id, f.file_id) != (found.container_id, found.file_id)
            for f in files
        ):
            files.append(found)
    return tuple(files)


class OpenAICodeInterpreterCodec:
    """``code_interpreter``: an auto container object or an existing container id."""

    kind = "code_interpreter"
    item_types = ("code_interpreter_call",)
    include = ("code_interpreter_call.outputs",)
    # NativeTool support (see ..native): the default config, the fields a
    # call's params carry and the type of a parsed call.
    config_type = CodeInterpreterConfig
    call_fields = ("code", "container_id")
    value_type = CodeRun

    def serialize(self, tool: HostedTool[Any]) -> dict[str, Any]:
        config = _config(tool)
        container: str | dict[str, Any]
        if config.container_id is not None:
            container = config.container_id
        else:
            container = {"type": "auto"}
            if config.memory_limit is not None:
                container["memory_limit"] = config.memory_limit
            if config.file_ids:
                container["file_ids"] = list(config.file_ids)
        return {"type": "code_interpreter", "container": container}

    def tool_choice(self, tool: HostedTool[Any]) -> dict[str, Any]:
        return {"type": "code_interpreter"}

    def matches(self, item: Any, tool: HostedTool[Any]) -> bool:
        return True

    def parse_call(self, item: Any) -> NativeCall | None:
        run = code_run(item)
        params = {"code": run.code, "container_id": run.container_id}
        summary = f"code interpreter ({run.status}) in {run.container_id or '?'}"
        lines = [summary, "```python", run.code, "```"]
        logs = "".join(run.logs)
        if logs:
            lines += ["output:", logs.rstrip("\n")]
        lines += [f"image: {url}" for url in run.images]
        success = status_ok(run.status)
        if success:
            message = summary
        else:
            message = (
                f"Code interpreter call {run.call_id} {run.status} in container "
                f"{run.container_id or '?'}."
            )
            if logs.strip():
                message += f" Last output: {logs.strip()[-_LOG_TAIL:]}"
        return NativeCall(run.call_id, params, run, success, message, "\n".join(lines))

    def parse_output(
        self, response_items: Sequence[Any], tool: HostedTool[Any]
    ) -> CodeInterpreterResult | None:
        runs = [
            code_run(item)
            for item in response_items
            if field(item, "type") == "code_interpreter_call"
        ]
        if not runs:
            return None
        return CodeInterpreterResult(
            calls=tuple(runs), files=container_files(response_items)
        )
