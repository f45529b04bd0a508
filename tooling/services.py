"""Workflows: preview a prompt, start a session, run it.

Every interface (API, admin, task, command) calls these functions. Bad input
raises ``django.core.exceptions.ValidationError`` before anything is written.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import openai
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from sessions_app.models import AgentSession
from sessions_app.sinks import DatabaseSink
from sessions_app.state import DatabaseSession
from tooling import assembly
from tooling.models import PromptTemplate, TrustLevel
from tooling.providers import build_client
from tooling.runtime import (
    Budget,
    Deadline,
    OpenAIAdapter,
    Prompt,
    PromptError,
    PromptEvaluationError,
    RenderedPrompt,
)
from tooling.runtime.adapters.openai import redact_request

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class PromptPreview:
    """What a run of the template would send first."""

    prompt: Prompt
    rendered: RenderedPrompt
    request: dict[str, Any]

    @property
    def withheld_tools(self) -> list[dict[str, str]]:
        """The hosted tools the trust level left out, as stored on a session."""
        return [tool.as_dict() for tool in self.rendered.withheld_hosted_tools]

    @property
    def text(self) -> str:
        return self.rendered.text

    @property
    def safe_request(self) -> dict[str, Any]:
        """The request with credentials masked: what may be shown or stored."""
        return redact_request(self.request)

    @property
    def options(self) -> dict[str, Any]:
        """The request without ``input`` and ``tools``."""
        return {k: v for k, v in self.request.items() if k not in ("input", "tools")}


def build_adapter(
    *, template: PromptTemplate, client: openai.OpenAI | None = None
) -> OpenAIAdapter:
    return OpenAIAdapter(
        client=client or build_client(),
        model=template.model,
        model_capabilities=assembly.model_capabilities(template.model),
        max_turns=template.max_turns,
    )


def preview_prompt(
    *,
    template: PromptTemplate,
    params: Mapping[str, Any] | None = None,
    trust_level: str = TrustLevel.STANDARD,
) -> PromptPreview:
    """Build, render and serialise ``template`` without calling the provider,
    for a session at ``trust_level``."""
    if params is not None and not isinstance(params, Mapping):
        raise ValidationError({"params": "Params must be a JSON object."})
    if trust_level not in TrustLevel.values:
        raise ValidationError(
            {
                "trust_level": f"Unknown trust level '{trust_level}'; expected one "
                f"of: {', '.join(TrustLevel.values)}."
            }
        )
    try:
        prompt = assembly.build_prompt(template)
    except PromptError as error:
        raise ValidationError(
            f"The catalog entry is invalid: {error.message}"
        ) from error
    try:
        rendered = prompt.render(values=params or {}, trust_level=trust_level)
    except PromptError as error:
        raise ValidationError({"params": error.message}) from error
    adapter = build_adapter(template=template, client=_NO_CLIENT)
    try:
        request = adapter.request_preview(rendered)
    except PromptEvaluationError as error:
        raise ValidationError(error.message) from error
    return PromptPreview(prompt=prompt, rendered=rendered, request=request)


_NO_CLIENT: Any = object()  # previews never send


def start_session(
    *,
    prompt_ref: str,
    params: Mapping[str, Any] | None = None,
    user: Any = None,
    trust_level: str = TrustLevel.STANDARD,
) -> AgentSession:
    """Validate, snapshot and record a new session, then run it (inline without a
    broker, on a worker otherwise).

    ``trust_level`` decides which hosted tools the run is offered; callers
    check who may ask for ``trusted`` (see ``may_start_at``).
    """
    try:
        template = assembly.load_template(prompt_ref)
    except PromptTemplate.DoesNotExist:
        raise ValidationError(
            {"prompt": f"No enabled prompt template is named '{prompt_ref}'."}
        ) from None
    preview = preview_prompt(
        template=template, params=params or {}, trust_level=trust_level
    )
    session = AgentSession.objects.create(
        prompt=template,
        prompt_ref=template.ref,
        params=dict(params or {}),
        trust_level=trust_level,
        withheld_tools=preview.withheld_tools,
        model=template.model,
        provider=settings.WINK_PROVIDER,
        rendered_prompt=preview.text,
        tools_payload=preview.safe_request.get("tools", []),
        request_options=preview.options,
        catalog_hash=assembly.catalog_hash(
            {"text": preview.text, "request": preview.safe_request}
        ),
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return run_session(session_id=session.pk)
    from tooling.tasks import run_session_task

    transaction.on_commit(lambda: run_session_task.delay(str(session.pk)))
    return session


def run_session(
    *, session_id: Any, client: openai.OpenAI | None = None
) -> AgentSession:
    """Run a pending session to completion, recording every step."""
    session = AgentSession.objects.select_related("prompt").get(pk=session_id)
    if session.status != AgentSession.Status.PENDING:
        logger.info(
            "Session %s is %s; not running it again", session.pk, session.status
        )
        return session
    session.status = AgentSession.Status.RUNNING
    session.started_at = timezone.now()
    session.save(update_fields=["status", "started_at"])
    try:
        if session.prompt is None:
            raise PromptTemplate.DoesNotExist
        template = assembly.load_template(session.prompt.ref)
        prompt = assembly.build_prompt(template)
        adapter = build_adapter(template=template, client=client)
    except PromptTemplate.DoesNotExist:
        return _fail(
            session, "render", f"Prompt '{session.prompt_ref}' is gone or disabled."
        )
    except PromptError as error:
        return _fail(
            session, "render", f"The catalog entry is invalid: {error.message}"
        )
    try:
        adapter.evaluate(
            prompt,
            values=session.params,
            session=DatabaseSession(session),
            sink=DatabaseSink(session),
            trust_level=session.trust_level,
            deadline=(
                Deadline(timezone.now() + timedelta(seconds=template.deadline_seconds))
                if template.deadline_seconds
                else None
            ),
            budget=(
                Budget(max_total_tokens=template.max_total_tokens)
                if template.max_total_tokens
                else None
            ),
        )
    except PromptEvaluationError:
        pass  # the sink recorded it (PromptFailed)
    except Exception as error:  # never leave a session "running"
        logger.exception("Session %s failed unexpectedly", session.pk)
        return _fail(session, "internal", f"{type(error).__name__}: {error}")
    session.refresh_from_db()
    return session


def may_start_at(user: Any, trust_level: str) -> bool:
    """Whether ``user`` may start a session at ``trust_level``: anyone may
    lower the level; ``trusted`` needs the ``start_trusted_session``
    permission."""
    if trust_level != TrustLevel.TRUSTED:
        return True
    return bool(
        user is not None and user.has_perm("sessions_app.start_trusted_session")
    )


def _fail(session: AgentSession, phase: str, message: str) -> AgentSession:
    session.status = AgentSession.Status.FAILED
    session.error_phase = phase
    session.error_message = message
    session.finished_at = timezone.now()
    session.save(
        update_fields=["status", "error_phase", "error_message", "finished_at"]
    )
    return session
