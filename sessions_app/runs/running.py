"""A run, claimed and evaluated to its end: resumed from its record when an
earlier attempt was interrupted or paused (``replay.py``), reconnected when
its database connection is lost, always on the catalog revision its session
was started with. Its writes go through its store (``store/``)."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from decimal import Decimal
from typing import Any

import openai
from celery.exceptions import SoftTimeLimitExceeded
from django.core.exceptions import ValidationError
from django.db import InterfaceError, OperationalError, connection
from django.utils import timezone
from django.utils.timezone import get_default_timezone as default_timezone

from sessions_app.models import AgentSession
from sessions_app.runs import answers, lifecycle, replay, store
from sessions_app.runs.sinks import DatabaseSink
from sessions_app.runs.state import DatabaseSession
from tooling import assembly
from tooling import services as catalog
from tooling.runtime import (
    ApprovalPending,
    Budget,
    Deadline,
    PriceSheet,
    Prompt,
    PromptEvaluationError,
    RunRecord,
)

logger = logging.getLogger(__name__)

Status = AgentSession.Status

# A run that loses its database connection this many times in a row without
# committing anything in between stops (phase "internal"); a connection lost
# now and then, with progress between, never stops it.
MAX_RECONNECTS = 3


def run_session(
    *,
    session_id: Any,
    client: openai.OpenAI | None = None,
    new: AgentSession | None = None,
    prompt: Prompt | None = None,
    pricing: PriceSheet | None = None,
) -> AgentSession:
    """Claim the session and run it to its end, resuming from its record if an
    earlier attempt was interrupted. A session that cannot be claimed (finished,
    held by a live worker) is left as it is, or settled if nothing can run it
    any more. Returns the session as it stands afterwards
    (``AgentSession.DoesNotExist`` if there is none). ``new`` and ``prompt``:
    the session as ``start_session`` just stored it and the prompt it built
    from the session's revision (saves reading and building them again);
    ``pricing``: the prices it read (default: those in effect on the day the
    session was created)."""
    _run(session_id, client=client, new=new, prompt=prompt, pricing=pricing)
    return AgentSession.objects.get(pk=session_id)


def run_session_status(*, session_id: Any) -> str | None:
    """Run the session as ``run_session`` does (a worker's task); the status it
    left the session with, ``None`` if there is no such session. A run this
    call ended or paused is not read back: its end's own update gave the
    status; the session is read only when this worker did not end it (not
    claimable, or taken over by another worker).

    A lost database connection around the run (its claim, the read after it;
    the run itself reconnects on its own) is tried again on a new connection
    after each of ``store.RECOMMIT_DELAYS``; then ``lifecycle.StoreUnavailable``
    (the task leaves its message to be delivered again). Trying again is
    safe: a claim that did commit, its reply lost, holds the run until its
    lease expires and the sweeper sends it again."""
    delays = store.RECOMMIT_DELAYS
    for attempt in range(len(delays) + 1):
        try:
            return _run_status(session_id)
        except (OperationalError, InterfaceError) as error:
            if connection.in_atomic_block:
                raise  # a caller's transaction is broken: it must handle that
            store.reconnect()  # and the next task starts on a new connection
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
    prompt: Prompt | None = None,
    pricing: PriceSheet | None = None,
) -> lifecycle.Claim | None:
    """Claim and run the session; its claim, ``None`` if it was not claimable
    (or does not exist)."""
    claim = lifecycle.claim(session_id, new=new)
    if claim is None:
        lifecycle.settle(session_id)
        logger.info("Session %s is not claimable; not running it", session_id)
    else:
        store.leases.register(claim)
        try:
            _run_claimed(claim, client, prompt, pricing)
        finally:
            store.leases.unregister(claim)
    return claim


def _run_claimed(
    claim: lifecycle.Claim,
    client: openai.OpenAI | None,
    prompt: Prompt | None,
    pricing: PriceSheet | None = None,
) -> None:
    reconnects = 0  # in a row, without a commit in between
    # a run that paused for a decision before resumes from its record too
    resuming = claim.session.attempts > 1 or claim.session.pauses > 0
    while True:
        run_store = store.RunStore(claim.session, claim=claim)
        try:
            _evaluate(run_store, client, prompt, resuming=resuming, pricing=pricing)
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
            logger.warning(
                "Session %s: this worker no longer holds it (another worker took "
                "it over, or it was ended past its deadline)",
                claim.session_id,
            )
            return
        except SoftTimeLimitExceeded:
            lifecycle.end_claimed(
                claim,
                phase="deadline",
                message="The run reached its time limit and was stopped.",
            )
            return
        except (lifecycle.StoreUnavailable, OperationalError, InterfaceError):
            reconnects = 1 if run_store.commits else reconnects + 1
            logger.warning(
                "Session %s lost its database connection (%d in a row); resuming",
                claim.session_id,
                reconnects,
                exc_info=True,
            )
            if connection.in_atomic_block:
                raise  # a caller's transaction is broken: it must handle that
            store.reconnect()
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


def _evaluate(
    run_store: store.RunStore,
    client: openai.OpenAI | None,
    prompt: Prompt | None,
    *,
    resuming: bool,
    pricing: PriceSheet | None = None,
) -> None:
    session = run_store.session
    claim = run_store.claim
    assert claim is not None  # a run's store holds its claim
    data = _revision_data(session)
    if data is None:
        run_store.finish(
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
        run_store.finish(
            status=Status.FAILED, phase="render", message=error.messages[0]
        )
        return
    resumption = replay.load(session) if resuming else None
    if resumption is not None and resumption.failure is not None:
        phase, message = resumption.failure
        run_store.finish(status=Status.FAILED, phase=phase, message=message)
        return
    record = resumption.record if resumption else None
    recorded_answers = answers.answers_for(session)  # a replay of another run
    if recorded_answers is not None:
        record = dataclasses.replace(record or RunRecord(), answers=recorded_answers)
    settings_ = data["prompt"]
    # a run is priced as of the day it started, however long it waits
    if pricing is None:
        started = timezone.localdate(session.created_at, default_timezone())
        token = getattr(session, "catalog_token", None)  # read by the claim
        pricing = assembly.price_sheet(on=started, token=token)
    sink = DatabaseSink(
        run_store,
        recorded_event_ids=resumption.recorded_event_ids if resumption else (),
        resumed=resuming,
    )
    assert session.deadline_at is not None  # set by the claim
    store.release()  # the reads are done: no connection held while it waits
    # A PromptEvaluationError has already ended the session (the sink records
    # PromptFailed through the store).
    with contextlib.suppress(PromptEvaluationError):
        adapter.evaluate(
            prompt,
            values=session.params,
            session=DatabaseSession(session, run_store, fresh=not resuming),
            sink=sink,
            trust_level=session.trust_level,
            deadline=Deadline(session.deadline_at),
            budget=_budget(settings_.get("max_total_tokens"), session.cost_budget),
            pricing=pricing,
            heartbeat=claim.beat,
            run_id=str(session.pk),
            resume=record,
        )


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
