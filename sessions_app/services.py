"""The session lifecycle: start, run (claim, resume), cancel, sweep.

Every interface (API, admin, tasks, commands) calls these functions. Runs are
dispatched through ``dispatch.py`` (inline without a broker, on a Celery
worker otherwise); the status moves are ``lifecycle.py``'s conditional
updates; a run always executes the catalog revision its session was started
with; a run that was interrupted resumes from its record (``replay.py``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import openai
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import DatabaseError, InterfaceError, OperationalError, connection
from django.db.models import Q
from django.utils import timezone

from sessions_app import dispatch, lifecycle, replay, steps
from sessions_app.models import AgentSession
from sessions_app.sinks import DatabaseSink
from sessions_app.state import DatabaseSession
from tooling import assembly
from tooling import services as catalog
from tooling.models import PromptTemplate, TrustLevel
from tooling.runtime import Budget, Deadline, Prompt, PromptEvaluationError
from tooling.runtime.text import storable

logger = logging.getLogger(__name__)

Status = AgentSession.Status

# A lost database connection is retried in-process this many times.
MAX_RECONNECTS = 3


def run_deadline(template_seconds: int | None) -> int:
    """A run's time limit: the template's deadline, capped by
    ``WINK_RUN_MAX_SECONDS`` (which is also the limit of a template without)."""
    cap = int(settings.WINK_RUN_MAX_SECONDS)
    return min(template_seconds or cap, cap)


def start_session(
    *,
    prompt_ref: str,
    params: Mapping[str, Any] | None = None,
    user: Any = None,
    trust_level: str = TrustLevel.STANDARD,
    client: openai.OpenAI | None = None,
) -> AgentSession:
    """Validate, snapshot and record a new session, then run it: inline without
    a broker (the returned session is finished), on a worker otherwise (it is
    ``queued``).

    ``trust_level`` decides which hosted tools the run is offered; callers
    check who may start and at which level (``access``). ``client`` replaces
    the provider client of an inline run (tests).
    """
    try:
        template = assembly.load_template(prompt_ref)
    except PromptTemplate.DoesNotExist:
        raise ValidationError(
            {"prompt": f"No enabled prompt template is named '{prompt_ref}'."}
        ) from None
    if params is not None and not isinstance(params, Mapping):
        raise ValidationError({"params": "Params must be a JSON object."})
    if storable(dict(params or {}))[1]:
        raise ValidationError(
            {
                "params": "Params must not contain NUL bytes, lone surrogates or "
                "non-finite numbers."
            }
        )
    preview = catalog.preview_prompt(
        template=template, params=params or {}, trust_level=trust_level
    )
    if not dispatch.runs_inline():
        session = _record_session(template, preview, params, trust_level, user)
        dispatch.dispatch_run(session.pk, deadline_seconds=session.deadline_seconds)
        return session
    # Inline, nothing is acknowledged before the run ends, and its end flushes
    # every commit before it: the session's creation commits as its steps do.
    with steps.run_commits():
        session = _record_session(template, preview, params, trust_level, user)
        return run_session(
            session_id=session.pk, client=client, new=session, prompt=preview.prompt
        )


def _record_session(
    template: PromptTemplate,
    preview: catalog.PromptPreview,
    params: Mapping[str, Any] | None,
    trust_level: str,
    user: Any,
) -> AgentSession:
    """The session row of a new run, with its catalog revision."""
    revision = catalog.record_revision(preview)
    deadline_seconds = run_deadline(preview.settings.get("deadline_seconds"))
    return AgentSession.objects.create(
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
        revision=revision,
        deadline_seconds=deadline_seconds,
        dispatched_at=timezone.now(),
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )


def run_session(
    *,
    session_id: Any,
    client: openai.OpenAI | None = None,
    new: AgentSession | None = None,
    prompt: Prompt | None = None,
) -> AgentSession:
    """Claim the session and run it to its end, resuming from its record if an
    earlier attempt was interrupted. A session that cannot be claimed (finished,
    held by a live worker) is left as it is, or settled if nothing can run it
    any more. Returns the session as it stands afterwards. ``new`` and
    ``prompt``: the session as ``start_session`` just created it and the prompt
    it built from the session's revision (saves reading and building them
    again)."""
    with steps.run_commits():  # the claim and every step of the run
        claim = lifecycle.claim(session_id, new=new)
        if claim is None:
            lifecycle.settle(session_id)
            logger.info("Session %s is not claimable; not running it", session_id)
        else:
            _run_claimed(claim, client, prompt)
    return AgentSession.objects.get(pk=session_id)


def _run_claimed(
    claim: lifecycle.Claim, client: openai.OpenAI | None, prompt: Prompt | None
) -> None:
    reconnects = 0
    resuming = claim.session.attempts > 1
    while True:
        try:
            _evaluate(claim, client, prompt, resuming=resuming)
            return
        except lifecycle.RunCancelled:
            with contextlib.suppress(lifecycle.LeaseLost):
                lifecycle.cancel_claimed(claim)
            return
        except lifecycle.LeaseLost:
            logger.warning("Session %s: another worker holds it now", claim.session_id)
            return
        except SoftTimeLimitExceeded:
            lifecycle.end_claimed(
                claim,
                phase="deadline",
                message="The run reached its time limit and was stopped.",
            )
            return
        except (lifecycle.StoreUnavailable, OperationalError, InterfaceError):
            reconnects += 1
            logger.warning(
                "Session %s lost its database connection (%d); resuming",
                claim.session_id,
                reconnects,
                exc_info=True,
            )
            if connection.in_atomic_block:
                raise  # a caller's transaction is broken: it must handle that
            _reconnect()
            with contextlib.suppress(DatabaseError):  # the next step will tell
                steps.relax_commits()  # a new connection has the server's setting
            if reconnects > MAX_RECONNECTS:
                lifecycle.end_claimed(
                    claim,
                    phase="internal",
                    message="The run lost its database connection repeatedly and "
                    f"was stopped. Details are in the server log (session "
                    f"{claim.session_id}).",
                )
                return
            resuming = True
        except Exception as error:  # never leave a session "running"
            logger.exception("Session %s failed unexpectedly", claim.session_id)
            lifecycle.end_claimed(
                claim,
                phase="internal",
                message=f"The run stopped on an unexpected error "
                f"({type(error).__name__}). Details are in the server log (session "
                f"{claim.session_id}).",
            )
            return


def _reconnect() -> None:
    """Drop the broken connection; the next query opens a new one."""
    try:
        connection.close()
    except Exception:  # a dead connection may fail to close: it is gone anyway
        logger.debug("Closing the broken connection failed", exc_info=True)


def _evaluate(
    claim: lifecycle.Claim,
    client: openai.OpenAI | None,
    prompt: Prompt | None,
    *,
    resuming: bool,
) -> None:
    session = claim.session
    if session.revision is None:
        lifecycle.finish(
            claim,
            status=Status.FAILED,
            phase="render",
            message="The session has no catalog revision (it was recorded before "
            "revisions existed) and cannot run.",
        )
        return
    data = session.revision.data
    try:
        prompt = prompt or catalog.build_prompt(revision=data)
        adapter = catalog.build_adapter(revision=data, client=client)
    except ValidationError as error:
        lifecycle.finish(
            claim, status=Status.FAILED, phase="render", message=error.messages[0]
        )
        return
    resumption = replay.load(session) if resuming else None
    if resumption is not None and resumption.failure is not None:
        phase, message = resumption.failure
        lifecycle.finish(claim, status=Status.FAILED, phase=phase, message=message)
        return
    settings_ = data["prompt"]
    writer = steps.StepWriter()
    sink = DatabaseSink(
        session,
        claim=claim,
        writer=writer,
        recorded_event_ids=resumption.recorded_event_ids if resumption else (),
        resumed=resuming,
    )
    assert session.deadline_at is not None  # set by the claim
    # A PromptEvaluationError has already ended the session (the sink records
    # PromptFailed through the lifecycle).
    with contextlib.suppress(PromptEvaluationError):
        adapter.evaluate(
            prompt,
            values=session.params,
            session=DatabaseSession(session, writer),
            sink=sink,
            trust_level=session.trust_level,
            deadline=Deadline(session.deadline_at),
            budget=(
                Budget(max_total_tokens=settings_["max_total_tokens"])
                if settings_.get("max_total_tokens")
                else None
            ),
            heartbeat=claim.beat,
            run_id=str(session.pk),
            resume=resumption.record if resumption else None,
        )


def cancel_session(*, session_id: Any, user: Any) -> str:
    """Cancel a session: a queued one at once (``"cancelled"``), a running one
    at its next step (``"requested"``); ``"finished"`` if it already ended
    (or a cancel was already requested: ``"requested"``)."""
    now = timezone.now()
    if lifecycle.cancel_queued(session_id, user=user, now=now):
        return "cancelled"
    if lifecycle.request_cancel(session_id, user=user, now=now):
        # A run whose worker is gone would never see the request.
        if lifecycle.settle(session_id, now=now) == Status.CANCELLED:
            return "cancelled"
        return "requested"
    status = AgentSession.objects.values_list("status", flat=True).get(pk=session_id)
    return "requested" if status == Status.RUNNING else "finished"


@dataclasses.dataclass
class SweepReport:
    """What one sweep did, by session id."""

    redispatched: list[str] = dataclasses.field(default_factory=list)
    ran_inline: list[str] = dataclasses.field(default_factory=list)
    settled: dict[str, str] = dataclasses.field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def __str__(self) -> str:
        return (
            f"{len(self.redispatched)} re-dispatched, {len(self.ran_inline)} run "
            f"inline, {len(self.settled)} settled"
        )


def sweep_stale_sessions() -> SweepReport:
    """Recover runs nothing is working on.

    A running session whose lease expired (its worker died) is settled if it
    was cancelled or is out of attempts, and re-dispatched otherwise; a queued
    session no worker claimed within ``WINK_QUEUED_REDISPATCH_SECONDS`` (a lost
    message, a web process that died before running it inline) is
    re-dispatched. Without a broker, re-dispatched sessions run here, inline.
    """
    now = timezone.now()
    report = SweepReport()
    stale = Q(status=Status.RUNNING, lease_expires_at__lt=now)
    for pk in (
        AgentSession.objects.filter(stale)
        .filter(
            Q(cancel_requested_at__isnull=False)
            | Q(attempts__gte=settings.WINK_RUN_MAX_ATTEMPTS)
        )
        .values_list("pk", flat=True)
    ):
        status = lifecycle.settle(pk, now=now)
        if status is not None:
            report.settled[str(pk)] = status
    recent = now - timedelta(seconds=float(settings.WINK_RUN_LEASE_SECONDS))
    lost = now - timedelta(seconds=float(settings.WINK_QUEUED_REDISPATCH_SECONDS))
    candidates = AgentSession.objects.filter(
        (
            stale
            & Q(cancel_requested_at__isnull=True)
            & Q(attempts__lt=settings.WINK_RUN_MAX_ATTEMPTS)
            & (Q(dispatched_at__isnull=True) | Q(dispatched_at__lt=recent))
        )
        | Q(status=Status.QUEUED, dispatched_at__lt=lost)
    ).values_list("pk", "dispatched_at", "deadline_seconds")
    for pk, dispatched_at, deadline_seconds in candidates:
        if not lifecycle.mark_dispatched(pk, previous=dispatched_at, now=now):
            continue
        if dispatch.dispatch_run(pk, deadline_seconds=deadline_seconds):
            report.redispatched.append(str(pk))
        else:
            run_session(session_id=pk)
            report.ran_inline.append(str(pk))
    return report
