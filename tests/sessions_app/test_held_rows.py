"""Rows held back for the next effect (ADR 0018) at the edges of a run: a
pause that cannot be made, and a worker that learns it lost its lease.

- The pause writes the held rows before its own transaction: if the pause's
  update finds the run cancelled meanwhile, the transaction rolls back, and
  the provider calls that were paid for (and their totals) must not go with
  it.
- A worker whose heartbeat finds its lease taken does not write what it holds:
  the run's record is the new holder's, which requested those steps again and
  would otherwise fail on the duplicate (same turn, same event id).
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.db import IntegrityError
from django.utils import timezone
from sessions_app.steps import StepWriter

from sessions_app import services
from sessions_app.models import AgentSession, ProviderCall
from sessions_app.runs import lifecycle
from tests.sessions_app.approval_setup import PROMPT, add_approval
from tests.sessions_app.clients import CountingProvider
from tests.sessions_app.factories import AgentSessionFactory

pytestmark = pytest.mark.django_db


def test_a_cancel_racing_the_pause_keeps_the_provider_calls_made(
    monkeypatch: Any, django_capture_on_commit_callbacks: Any
) -> None:
    add_approval()
    real_pause = lifecycle.pause

    def cancelled_meanwhile(claim: Any, **kwargs: Any) -> None:
        # a user's cancel commits between the response and the pause
        AgentSession.objects.filter(pk=claim.session_id).update(
            cancel_requested_at=timezone.now()
        )
        real_pause(claim, **kwargs)

    monkeypatch.setattr(lifecycle, "pause", cancelled_meanwhile)
    provider = CountingProvider()
    with django_capture_on_commit_callbacks(execute=True):
        session = services.start_session(prompt_ref=PROMPT, client=provider.client)
    session.refresh_from_db()
    assert session.status == AgentSession.Status.CANCELLED
    answered = len(provider.responses)
    recorded = ProviderCall.objects.filter(session=session).count()
    # every response the provider gave (and billed) is recorded, and counted
    assert recorded == answered, (recorded, answered)
    billed = ProviderCall.objects.filter(session=session)
    assert session.turns == answered
    assert session.usage["input_tokens"] == sum(
        billed.values_list("input_tokens", flat=True)
    )


def provider_call(session: AgentSession, event_id: uuid.UUID) -> ProviderCall:
    return ProviderCall(session=session, turn=1, event_id=event_id, input_tokens=5)


@pytest.mark.django_db(transaction=True)
def test_a_worker_that_lost_its_lease_does_not_break_the_new_holders_run() -> None:
    session = AgentSessionFactory.create(status=AgentSession.Status.QUEUED)
    a = lifecycle.claim(session.pk)
    assert a is not None
    event_id = uuid.uuid4()  # event_id_for(run_id, "provider", 1): the same for B
    writer_a = StepWriter()
    writer_a.add([provider_call(session, event_id)])  # held by A
    # A stalls past its lease; B claims the run (turn 1 is not recorded)
    AgentSession.objects.filter(pk=session.pk).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    b = lifecycle.claim(session.pk)
    assert b is not None
    writer_b = StepWriter()
    writer_b.add([provider_call(session, event_id)])  # B asked again: held
    # A's heartbeat finds the lease gone
    with pytest.raises(lifecycle.LeaseLost), services._flushed_on_error(writer_a):
        a.lost()
    # B goes on: its next request settles what it holds
    try:
        writer_b.settle()
    except IntegrityError as error:  # A's late write took B's turn 1
        pytest.fail(f"B's run breaks on A's late write: {error}")
    assert ProviderCall.objects.filter(session=session).count() == 1
