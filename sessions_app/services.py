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
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import openai
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import DatabaseError, InterfaceError, OperationalError, connection
from django.db.models import Q
from django.utils import timezone
from django.utils.timezone import get_default_timezone as default_timezone

from sessions_app import dispatch, inserts, lifecycle, replay, steps
from sessions_app.approvals import expiry
from sessions_app.costs import budgets
from sessions_app.models import AgentSession
from sessions_app.sinks import DatabaseSink
from sessions_app.state import DatabaseSession
from tooling import assembly, prepared
from tooling import services as catalog
from tooling.models import CatalogRevision, PromptTemplate, TrustLevel
from tooling.runtime import (
    ApprovalPending,
    Budget,
    Deadline,
    PriceSheet,
    Prompt,
    PromptEvaluationError,
)
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

    Raises ``budgets.DailyBudgetExceeded`` before recording anything when
    ``user`` has spent their daily budget; otherwise the run may spend at most
    its template's budget, capped by what is left of the user's day, which
    simultaneous starts share (``budgets.reserving``).
    """
    try:
        template = assembly.load_template(prompt_ref)
    except PromptTemplate.DoesNotExist:
        raise ValidationError(
            {"prompt": f"No enabled prompt template is named '{prompt_ref}'."}
        ) from None
    # read before the preview uses it up: prices are cached per generation
    catalog_token = template.__dict__.get("catalog_token")
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
    limit = budgets.daily_limit(user)
    if limit is None:  # nothing to share: written below, with its claim inline
        session, rows = _new_session(
            template,
            preview,
            params,
            trust_level,
            user,
            cost_budget=budgets.session_budget(template.max_cost_per_session, None),
        )
    else:
        # what is left of the day is read and the session that takes its share
        # written under the user's lock: the next start reads the day with it
        with budgets.reserving(
            user, limit=limit, template_budget=template.max_cost_per_session
        ) as cost_budget:
            session, rows = _new_session(
                template, preview, params, trust_level, user, cost_budget=cost_budget
            )
            inserts.write(rows)
        rows = []  # written: an inline run's claim finds the session stored
    if not dispatch.runs_inline():
        inserts.write(rows)  # one query on PostgreSQL (nothing if written)
        # the stored revision may be older than the one built here: read it
        # if asked (only its hash is needed)
        AgentSession._meta.get_field("revision").delete_cached_value(session)
        dispatch.dispatch_run(session.pk, deadline_seconds=session.deadline_seconds)
        return session
    pricing = assembly.price_sheet(token=catalog_token)
    # Inline, nothing is acknowledged before the run ends, and its end flushes
    # every commit before it: the session's creation commits as its steps do,
    # written with its claim (and the setting) in one query on PostgreSQL
    # (a start under a daily budget wrote it already, with its share).
    with steps.run_commits(by_claim=True):
        return run_session(
            session_id=session.pk,
            client=client,
            new=session,
            rows=rows,
            prompt=preview.prompt,
            pricing=pricing,
        )


def _new_session(
    template: PromptTemplate,
    preview: catalog.PromptPreview,
    params: Mapping[str, Any] | None,
    trust_level: str,
    user: Any,
    *,
    cost_budget: Decimal | None = None,
) -> tuple[AgentSession, list[inserts.Batch]]:
    """The session of a new run and the rows that record it, not written
    yet: its catalog revision (an identical one already stored is left as
    it is, not read) and the session. The session's ``revision`` is the one
    built here: its data is the stored one's (same hash), its ``created_at``
    not necessarily."""
    revision = catalog.unsaved_revision(preview)
    deadline_seconds = run_deadline(preview.settings.get("deadline_seconds"))
    session = AgentSession(
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
        cost_budget=cost_budget,
        dispatched_at=timezone.now(),
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
    return session, [
        inserts.Batch(CatalogRevision, [revision], ignore_conflicts=True),
        inserts.Batch(AgentSession, [session]),
    ]


def run_session(
    *,
    session_id: Any,
    client: openai.OpenAI | None = None,
    new: AgentSession | None = None,
    rows: Sequence[inserts.Batch] = (),
    prompt: Prompt | None = None,
    pricing: PriceSheet | None = None,
) -> AgentSession:
    """Claim the session and run it to its end, resuming from its record if an
    earlier attempt was interrupted. A session that cannot be claimed (finished,
    held by a live worker) is left as it is, or settled if nothing can run it
    any more. Returns the session as it stands afterwards
    (``AgentSession.DoesNotExist`` if there is none). ``new`` and ``prompt``:
    the session as ``start_session`` just built it and the prompt it built
    from the session's revision (saves reading and building them again);
    ``rows``: the rows recording ``new``, not written yet (written with the
    claim); ``pricing``: the prices it read (default: those in effect on the
    day the session was created)."""
    _run(session_id, client=client, new=new, rows=rows, prompt=prompt, pricing=pricing)
    session: AgentSession = prepared.compiled("session by pk", _session_by_pk).get(
        {"pk": session_id}
    )
    return session


def _session_by_pk() -> prepared.Select:
    """``AgentSession.objects.get(pk=...)``, compiled once (``prepared``)."""
    return prepared.select_one(
        AgentSession.objects.filter(pk=prepared.slot(AgentSession, "id", "pk"))
    )


def run_session_status(*, session_id: Any) -> str | None:
    """Run the session as ``run_session`` does (a worker's task); the status it
    left the session with, ``None`` if there is no such session. A run this
    call ended or paused is not read back: its end's own update gave the
    status; the session is read only when this worker did not end it (not
    claimable, or taken over by another worker).

    A lost database connection around the run (its claim, the read after it;
    the run itself reconnects on its own) is tried again on a new connection
    after each of ``steps.RECOMMIT_DELAYS``; then ``lifecycle.StoreUnavailable``
    (the task leaves its message to be delivered again). Trying again is
    safe: a claim that did commit, its reply lost, holds the run until its
    lease expires and the sweeper sends it again."""
    delays = steps.RECOMMIT_DELAYS
    for attempt in range(len(delays) + 1):
        try:
            return _run_status(session_id)
        except (OperationalError, InterfaceError) as error:
            if connection.in_atomic_block:
                raise  # a caller's transaction is broken: it must handle that
            _reconnect()  # and the next task starts on a new connection
            if attempt == len(delays):
                raise lifecycle.StoreUnavailable(
                    "The database could not be reached to run the session."
                ) from error
            logger.warning(
                "Session %s: the database connection failed around its run "
                "(%s); trying again on a new connection (%d/%d)",
                session_id,
                type(error).__name__,
                attempt + 1,
                len(delays),
            )
            time.sleep(delays[attempt])
    raise AssertionError("unreachable")


def _run_status(session_id: Any) -> str | None:
    claim = _run(session_id)
    if claim is not None and claim.ended is not None:
        return claim.ended
    status: str | None = (
        AgentSession.objects.filter(pk=session_id)
        .values_list("status", flat=True)
        .first()
    )
    return status


def _run(
    session_id: Any,
    *,
    client: openai.OpenAI | None = None,
    new: AgentSession | None = None,
    rows: Sequence[inserts.Batch] = (),
    prompt: Prompt | None = None,
    pricing: PriceSheet | None = None,
) -> lifecycle.Claim | None:
    """Claim and run the session; its claim, ``None`` if it was not claimable
    (or does not exist)."""
    # the claim and every step of the run; the claim sends the setting
    with steps.run_commits(by_claim=True):
        claim = lifecycle.claim(session_id, new=new, rows=rows)
        if claim is None:
            lifecycle.settle(session_id)
            logger.info("Session %s is not claimable; not running it", session_id)
        else:
            _run_claimed(claim, client, prompt, pricing)
    return claim


def _run_claimed(
    claim: lifecycle.Claim,
    client: openai.OpenAI | None,
    prompt: Prompt | None,
    pricing: PriceSheet | None = None,
) -> None:
    reconnects = 0
    # a run that paused for a decision before resumes from its record too
    resuming = claim.session.attempts > 1 or claim.session.pauses > 0
    while True:
        try:
            _evaluate(claim, client, prompt, resuming=resuming, pricing=pricing)
            return
        except ApprovalPending:
            # the sink recorded the request and paused the session: no worker
            # holds it until a decision (sessions_app.approvals) queues it again
            logger.info("Session %s waits for an approval", claim.session_id)
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
    pricing: PriceSheet | None = None,
) -> None:
    session = claim.session
    data = _revision_data(session)
    if data is None:
        lifecycle.finish(
            claim,
            status=Status.FAILED,
            phase="render",
            message="The session has no catalog revision (it was recorded before "
            "revisions existed) and cannot run.",
        )
        return
    try:
        prompt = prompt or catalog.build_prompt(
            revision=data, digest=session.revision_id
        )
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
    # a run is priced as of the day it started, however long it waits
    if pricing is None:
        started = timezone.localdate(session.created_at, default_timezone())
        token = getattr(session, "catalog_token", None)  # read by the claim
        pricing = assembly.price_sheet(on=started, token=token)
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
    # PromptFailed through the lifecycle). Anything else that stops the run
    # still writes the rows waiting for an effect, if the database lets it.
    with contextlib.suppress(PromptEvaluationError), _flushed_on_error(writer):
        adapter.evaluate(
            prompt,
            values=session.params,
            session=DatabaseSession(session, writer, fresh=not resuming),
            sink=sink,
            trust_level=session.trust_level,
            deadline=Deadline(session.deadline_at),
            budget=_budget(settings_.get("max_total_tokens"), session.cost_budget),
            pricing=pricing,
            heartbeat=claim.beat,
            run_id=str(session.pk),
            resume=resumption.record if resumption else None,
        )


@contextlib.contextmanager
def _flushed_on_error(writer: steps.StepWriter) -> Iterator[None]:
    """The rows held back are written when the run stops on an error, unless
    it lost its lease: the run's record is another worker's now, which
    records those steps again itself."""
    try:
        yield
    except lifecycle.LeaseLost:
        raise
    except BaseException:
        try:
            writer.flush()
        except Exception:  # the error that stopped the run is the one to report
            logger.warning("Could not write a stopped run's last rows", exc_info=True)
        raise


def _revision_data(session: AgentSession) -> dict[str, Any] | None:
    """The data of the revision the session runs (``None``: it has none): the
    one it was created with, or the process's copy (read once per revision)."""
    if AgentSession.revision.is_cached(session):
        return session.revision.data if session.revision is not None else None
    if session.revision_id is None:
        return None
    return assembly.revision_data(session.revision_id)


def _budget(max_total_tokens: int | None, max_cost: Decimal | None) -> Budget | None:
    """The run's token and money limits (``None``: neither)."""
    if not max_total_tokens and max_cost is None:
        return None
    return Budget(max_total_tokens=max_total_tokens or None, max_cost=max_cost)


def cancel_session(*, session_id: Any, user: Any) -> str:
    """Cancel a session: a queued one, or one waiting for an approval (which
    expires with it), at once (``"cancelled"``); a running one at its next
    step (``"requested"``); ``"finished"`` if it already ended (or a cancel
    was already requested: ``"requested"``)."""
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
    # approval requests denied automatically (no decision in time), by id
    expired_approvals: list[str] = dataclasses.field(default_factory=list)
    # due for a dispatch, left for the next sweep: the broker was unreachable
    undispatched: list[str] = dataclasses.field(default_factory=list)
    # what could not be handled (logged with its traceback): the error's type,
    # by session id ("approvals": expiring the overdue approvals)
    errors: dict[str, str] = dataclasses.field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def broker_unreachable(self) -> str:
        """The line a sweep that could not reach the broker logs ("" if it could)."""
        if not self.undispatched:
            return ""
        return (
            f"Broker unreachable: {len(self.undispatched)} session(s) left queued "
            "for the next sweep."
        )

    def __str__(self) -> str:
        text = (
            f"{len(self.redispatched)} re-dispatched, {len(self.ran_inline)} run "
            f"inline, {len(self.settled)} settled, {len(self.expired_approvals)} "
            "approval(s) expired"
        )
        if self.undispatched:
            text += f", {len(self.undispatched)} left queued (broker unreachable)"
        if self.errors:
            text += f", {len(self.errors)} error(s) (see the log)"
        return text


@contextlib.contextmanager
def _going_on(report: SweepReport, key: Any) -> Iterator[None]:
    """One piece of a sweep: an error is logged and reported, and the sweep
    goes on with the rest."""
    try:
        yield
    except Exception as error:
        logger.exception("The sweep could not handle %s; going on", key)
        report.errors[str(key)] = type(error).__name__


def sweep_stale_sessions() -> SweepReport:
    """Recover runs nothing is working on.

    A running session whose lease expired (its worker died) is settled if it
    was cancelled or is out of attempts, and re-dispatched otherwise; a queued
    session no worker claimed within ``WINK_QUEUED_REDISPATCH_SECONDS`` (a lost
    message, a web process that died before running it inline) is
    re-dispatched, and one that was never sent (the broker could not be
    reached) at every sweep. Without a broker, re-dispatched sessions run
    here, inline. Approval requests past their deadline are denied
    automatically first, and their runs resumed (``expiry.expire_overdue``).

    Each session is handled on its own: an error is logged and the sweep goes
    on. A broker that cannot be reached ends the sweep's sends (each would
    wait for it again): the sessions left are reported (``undispatched``),
    logged in one line, and sent by the next sweep.
    """
    report = SweepReport()
    began = timezone.now()
    with _going_on(report, "approvals"):
        expired = expiry.expire_overdue()
        report.expired_approvals = expired.approvals
        for session_id in expired.run_inline:
            run_session(session_id=session_id)
    now = timezone.now()
    stale = Q(status=Status.RUNNING, lease_expires_at__lt=now)
    for pk in (
        AgentSession.objects.filter(stale)
        .filter(
            Q(cancel_requested_at__isnull=False)
            | Q(attempts__gte=settings.WINK_RUN_MAX_ATTEMPTS)
        )
        .values_list("pk", flat=True)
    ):
        with _going_on(report, pk):
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
        # never sent: the broker could not be reached
        | Q(status=Status.QUEUED, dispatched_at__isnull=True)
    ).values_list(
        "pk", "status", "dispatched_at", "deadline_seconds", "dispatch_failed_at"
    )
    due = []
    for pk, status, dispatched_at, deadline_seconds, failed_at in candidates:
        if failed_at is not None and failed_at >= began:
            # its send failed in this sweep (an expired approval's run,
            # above): each session is sent at most once per sweep
            report.undispatched.append(str(pk))
        else:
            due.append((pk, status, dispatched_at, deadline_seconds))
    for pk, status, dispatched_at, deadline_seconds in due:
        if report.undispatched:  # the broker is unreachable: the next sweep
            report.undispatched.append(str(pk))
            continue
        with _going_on(report, pk):
            _redispatch(report, pk, status, dispatched_at, deadline_seconds, now)
    if report.undispatched:
        logger.warning(report.broker_unreachable)
    return report


def _redispatch(
    report: SweepReport,
    pk: Any,
    status: str,
    dispatched_at: datetime | None,
    deadline_seconds: int,
    now: datetime,
) -> None:
    """Send (or, without a broker, run) one session the sweep chose, unless
    it changed since the sweep read it (``lifecycle.mark_dispatched``)."""
    if not lifecycle.mark_dispatched(
        pk, previous=dispatched_at, status=status, now=now
    ):
        return
    if dispatch.runs_inline():
        run_session(session_id=pk)
        report.ran_inline.append(str(pk))
    elif dispatch.send_run(pk, deadline_seconds=deadline_seconds):
        report.redispatched.append(str(pk))
    else:
        report.undispatched.append(str(pk))
