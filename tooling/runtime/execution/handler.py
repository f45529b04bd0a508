"""Running a tool's handler: its result, or the failure the model reads.

A handler's failure never aborts the run, with three exceptions: a
``PromptEvaluationError`` or an expired deadline stops it once the call is
recorded (the error is handed back), and a ``RunAborted`` or the session's
lost-store error (``lost_errors``) propagates at once.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from ..context import ToolContext
from ..deadlines import Deadline
from ..errors import (
    DeadlineExceededError,
    PromptEvaluationError,
    RunAborted,
    ToolValidationError,
)
from ..results import ToolResult
from ..session import SessionProtocol
from ..tools import Tool

logger = logging.getLogger(__name__)


def run_handler(
    tool: Tool[Any, Any],
    params: Any,
    context: ToolContext,
    *,
    session: SessionProtocol,
    prompt_name: str,
    deadline: Deadline | None,
) -> tuple[ToolResult[Any], PromptEvaluationError | None]:
    """The handler's result, and the error that stops the run after the
    call is recorded (a ``PromptEvaluationError`` or an expired deadline)."""
    assert tool.handler is not None
    try:
        result = tool.handler(params, context=context)
    except RunAborted:
        raise
    except PromptEvaluationError as error:
        return ToolResult.error(error.message), error
    except DeadlineExceededError as error:
        stop = PromptEvaluationError(
            str(error) or f"Tool '{tool.name}' exceeded the deadline.",
            prompt_name=prompt_name,
            phase="deadline",
            provider_payload=deadline.payload() if deadline else None,
        )
        stop.__cause__ = error
        return ToolResult.error(stop.message), stop
    except ToolValidationError as error:
        return ToolResult.error(f"Tool validation failed: {error}"), None
    except TypeError as error:
        logger.exception("Tool %s raised TypeError", tool.name)
        message = f"Tool '{tool.name}' raised TypeError: {error}"
        return ToolResult.error(message), None
    except Exception as error:
        if isinstance(error, getattr(session, "lost_errors", ())):
            raise  # the session's store was lost: the run resumes
        logger.exception("Tool %s failed", tool.name)
        message = f"Tool '{tool.name}' execution failed: {error}"
        return ToolResult.error(message), None
    if not isinstance(result, ToolResult):
        message = (
            f"Tool '{tool.name}' returned {type(result).__name__}, not a ToolResult."
        )
        return ToolResult.error(message), None
    if not result.success and result.value is not None:
        return dataclasses.replace(result, value=None), None
    return result, None
