"""The session lifecycle: claims, leases, attempts, cancel, the sweeper, and
resuming an interrupted run from its record."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from sessions_app import services
from sessions_app.models import AgentSession, ProviderCall, ToolInvocation
from sessions_app.runs import lifecycle
from tests.sessions_app.brokers import broker_at, sent_runs
from tests.sessions_app.clients import CountingProvider, WorkerKilled, kill_at
from tests.sessions_app.factories import UserFactory
from tooling.demo import seed_demo_catalog
from tooling.handlers import registry
from tooling.runtime import Tool, ToolContext, ToolResult

pytestmark = pytest.mark.django_db

Status = AgentSession.Status


@pytest.fixture
def queued(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    seed_demo_catalog()
    return services.start_session(prompt_ref="demo/release", params={})


@dataclasses.dataclass(frozen=True)
class Nothing:
    pass


def expire_lease(session_id: Any) -> None:
    AgentSession.objects.filter(pk=session_id).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )


def fresh(session_id: Any) -> AgentSession:
    return AgentSession.objects.get(pk=session_id)


# -- claims and leases -----------------------------------------------------------


def test_claim_moves_a_queued_session_to_running_with_a_lease(queued, settings):
    claim = lifecycle.claim(queued.pk)

    assert claim is not None
    session = fresh(queued.pk)
    assert session.status == Status.RUNNING
    assert session.attempts == 1
    assert session.claim_token == claim.token
    assert session.lease_expires_at is not None and session.started_at is not None
    assert session.lease_expires_at > timezone.now()
    assert session.deadline_at == session.started_at + timedelta(
        seconds=session.deadline_seconds
    )
    assert session.worker


def test_a_held_session_cannot_be_claimed_twice(queued):
    assert lifecycle.claim(queued.pk) is not None
    assert lifecycle.claim(queued.pk) is None
    assert fresh(queued.pk).attempts == 1


def test_an_expired_lease_can_be_claimed_and_fences_the_old_worker(queued):
    first = lifecycle.claim(queued.pk)
    assert first is not None
    expire_lease(queued.pk)

    second = lifecycle.claim(queued.pk)

    assert second is not None and second.token != first.token
    assert fresh(queued.pk).attempts == 2
    first.renew_every = 0
    with pytest.raises(lifecycle.LeaseLost):
        first.beat()
    with pytest.raises(lifecycle.LeaseLost):
        lifecycle.finish(first, status=Status.SUCCEEDED)
    assert fresh(queued.pk).status == Status.RUNNING


def test_the_deadline_is_set_once_and_kept_by_later_claims(queued):
    lifecycle.claim(queued.pk)
    deadline = fresh(queued.pk).deadline_at
    expire_lease(queued.pk)

    lifecycle.claim(queued.pk)

    assert fresh(queued.pk).deadline_at == deadline


def test_heartbeat_renews_the_lease(queued):
    claim = lifecycle.claim(queued.pk)
    assert claim is not None
    AgentSession.objects.filter(pk=queued.pk).update(
        lease_expires_at=timezone.now() + timedelta(seconds=1)
    )
    claim.renew_every = 0

    claim.beat()

    lease_expires_at = fresh(queued.pk).lease_expires_at
    assert lease_expires_at is not None
    assert lease_expires_at > timezone.now() + timedelta(seconds=30)


def test_heartbeat_is_throttled(queued, django_assert_num_queries):
    claim = lifecycle.claim(queued.pk)
    assert claim is not None
    claim.renew_every = 3600
    with django_assert_num_queries(0):
        claim.beat()


def test_heartbeat_reports_a_cancel_request(queued):
    claim = lifecycle.claim(queued.pk)
    assert claim is not None
    claim.renew_every = 0
    services.cancel_session(session_id=queued.pk, user=None)

    with pytest.raises(lifecycle.RunCancelled):
        claim.beat()


def test_out_of_attempts_a_stale_run_is_settled_as_interrupted(queued, settings):
    settings.WINK_RUN_MAX_ATTEMPTS = 2
    for _ in range(2):
        assert lifecycle.claim(queued.pk) is not None
        expire_lease(queued.pk)

    assert lifecycle.claim(queued.pk) is None
    finished = services.run_session(session_id=queued.pk)

    assert finished.status == Status.FAILED
    assert finished.error_phase == "interrupted"
    assert finished.error_message.startswith("The run was interrupted 2 time(s)")
    assert finished.finished_at is not None
    assert finished.usage["total_tokens"] == 0


def test_run_session_leaves_a_finished_session_alone(queued):
    services.run_session(session_id=queued.pk)
    before = fresh(queued.pk)

    after = services.run_session(session_id=queued.pk)

    assert (after.status, after.attempts, after.finished_at) == (
        before.status,
        before.attempts,
        before.finished_at,
    )


def test_run_deadline_is_capped(settings):
    settings.WINK_RUN_MAX_SECONDS = 100
    assert services.run_deadline(None) == 100
    assert services.run_deadline(30) == 30
    assert services.run_deadline(3600) == 100


# -- cancel ----------------------------------------------------------------------


def test_cancel_a_queued_session_at_once(queued):
    user = UserFactory.create()

    outcome = services.cancel_session(session_id=queued.pk, user=user)

    session = fresh(queued.pk)
    assert outcome == "cancelled"
    assert session.status == Status.CANCELLED
    assert session.cancelled_by == user
    assert session.error_message == f"Cancelled by {user.username}."
    assert session.finished_at is not None
    assert services.run_session(session_id=queued.pk).status == Status.CANCELLED
    assert not ProviderCall.objects.filter(session=queued).exists()


def test_cancel_a_finished_session_changes_nothing(queued):
    services.run_session(session_id=queued.pk)
    assert services.cancel_session(session_id=queued.pk, user=None) == "finished"
    assert fresh(queued.pk).status == Status.SUCCEEDED


@pytest.fixture
def cancelling_tool():
    """A tool that cancels its own session, as a user would mid-run."""

    def handler(params: Nothing, *, context: ToolContext) -> ToolResult[None]:
        session_id = context.session.session_id
        services.cancel_session(session_id=session_id, user=None)
        return ToolResult.ok(None, "asked to stop")

    key = "tests.cancel_me"
    registry.register(
        key, Tool(name="cancel_me", description="Cancel the run.", handler=handler)
    )
    yield key
    registry.unregister(key)


def test_a_running_session_stops_at_its_next_step(settings, cancelling_tool):
    from tests.tooling.factories import (
        PromptTemplateFactory,
        SectionDefinitionFactory,
        ToolDefinitionFactory,
        add_sections,
        attach,
    )

    settings.WINK_RUN_HEARTBEAT_SECONDS = 0
    section = SectionDefinitionFactory.create(key="stop", template="Stop.")
    attach(
        section,
        ToolDefinitionFactory.create(name="cancel_me", handler_key=cancelling_tool),
        ToolDefinitionFactory.create(
            name="count_words", handler_key="demo.count_words"
        ),
    )
    prompt = PromptTemplateFactory.create()
    add_sections(prompt, section)
    provider = CountingProvider()

    session = services.start_session(prompt_ref=prompt.ref, client=provider.client)

    assert session.status == Status.CANCELLED
    assert session.cancel_requested_at is not None
    assert session.error_message == "Cancelled."
    names = list(session.tool_invocations.values_list("name", flat=True))
    assert names == ["cancel_me"]  # the next call never ran
    assert len(provider.requests) == 1
    assert session.turns == 1 and session.usage["total_tokens"] > 0


# -- resuming an interrupted run ---------------------------------------------------


def recorded_calls(session: AgentSession) -> list[str]:
    call_ids = []
    for call in session.provider_calls.order_by("turn"):
        for item in (call.response or {}).get("output", []):
            if item.get("type") == "function_call":
                call_ids.append(item["call_id"])
    return call_ids


def test_a_killed_run_resumes_without_repeating_anything():
    seed_demo_catalog()
    crashing = CountingProvider(before=kill_at(3))
    with pytest.raises(WorkerKilled):
        services.start_session(prompt_ref="demo/release", client=crashing.client)
    session = AgentSession.objects.get()
    assert session.status == Status.RUNNING
    assert session.provider_calls.count() == 2
    done_before = set(session.tool_invocations.values_list("call_id", flat=True))
    assert done_before
    expire_lease(session.pk)

    resumed = CountingProvider()
    finished = services.run_session(session_id=session.pk, client=resumed.client)

    assert finished.status == Status.SUCCEEDED, finished.error_message
    assert finished.attempts == 2
    # The interrupted request is the first one sent again, byte for byte;
    # recorded responses are never requested again.
    assert resumed.requests[0] == crashing.requests[2]
    recorded_ids = list(finished.provider_calls.values_list("response_id", flat=True))
    assert len(recorded_ids) == len(set(recorded_ids))
    assert not set(crashing.responses) & set(resumed.responses)
    # Every function call the model asked for ran exactly once.
    invoked = list(
        finished.tool_invocations.filter(native=False).values_list("call_id", flat=True)
    )
    assert sorted(invoked) == sorted(recorded_calls(finished))
    assert len(invoked) == len(set(invoked))
    sequences = list(
        finished.tool_invocations.order_by("sequence").values_list(
            "sequence", flat=True
        )
    )
    assert sequences == list(range(1, len(sequences) + 1))
    assert finished.turns == finished.provider_calls.count()
    assert finished.usage["input_tokens"] == sum(
        finished.provider_calls.values_list("input_tokens", flat=True)
    )


@pytest.fixture
def crashing_writer():
    """``write_file`` that writes, then dies the first time (no record)."""
    original = registry.get("vfs.write_file")
    state = {"crashed": False}

    def handler(params: Any, *, context: ToolContext) -> Any:
        assert original.handler is not None
        result = original.handler(params, context=context)
        if not state["crashed"]:
            state["crashed"] = True
            raise WorkerKilled("killed inside the tool, after its write")
        return result

    registry.unregister("vfs.write_file")
    registry.register("vfs.write_file", dataclasses.replace(original, handler=handler))
    yield state
    registry.unregister("vfs.write_file")
    registry.register("vfs.write_file", original)


def test_a_run_killed_inside_a_tool_keeps_neither_its_write_nor_a_record(
    crashing_writer,
):
    seed_demo_catalog()
    with pytest.raises(WorkerKilled):
        services.start_session(prompt_ref="demo/notes")
    session = AgentSession.objects.get()
    assert crashing_writer["crashed"]
    assert not session.tool_invocations.filter(name="write_file").exists()
    expire_lease(session.pk)

    finished = services.run_session(session_id=session.pk)

    assert finished.status == Status.SUCCEEDED, finished.error_message
    writes = finished.tool_invocations.filter(name="write_file", success=True)
    assert writes.count() == 1
    assert finished.files.count() >= 1


# -- the sweeper -------------------------------------------------------------------


def test_sweeper_runs_a_dead_run_inline_without_a_broker():
    seed_demo_catalog()
    with pytest.raises(WorkerKilled):
        services.start_session(
            prompt_ref="demo/release", client=CountingProvider(kill_at(2)).client
        )
    session = AgentSession.objects.get()
    assert services.sweep_stale_sessions().ran_inline == []  # lease still valid
    expire_lease(session.pk)
    AgentSession.objects.filter(pk=session.pk).update(
        dispatched_at=timezone.now() - timedelta(hours=1)
    )

    report = services.sweep_stale_sessions()

    assert report.ran_inline == [str(session.pk)]
    assert fresh(session.pk).status == Status.SUCCEEDED


def test_sweeper_redispatches_with_a_broker_once_per_lease(queued, settings):
    lifecycle.claim(queued.pk)
    expire_lease(queued.pk)
    AgentSession.objects.filter(pk=queued.pk).update(
        dispatched_at=timezone.now() - timedelta(hours=1)
    )

    with broker_at(settings, "memory://") as app:
        first = services.sweep_stale_sessions()
        second = services.sweep_stale_sessions()
        sent = sent_runs(app)

    assert first.redispatched == [str(queued.pk)]
    assert second.redispatched == []  # dispatched within the lease: not again
    assert sent == [str(queued.pk)]


def test_sweeper_redispatches_a_queued_session_nothing_claimed(queued, settings):
    settings.WINK_QUEUED_REDISPATCH_SECONDS = 60
    with broker_at(settings, "memory://") as app:
        assert services.sweep_stale_sessions().redispatched == []
        AgentSession.objects.filter(pk=queued.pk).update(
            dispatched_at=timezone.now() - timedelta(minutes=2)
        )

        report = services.sweep_stale_sessions()
        sent = sent_runs(app)

    assert report.redispatched == [str(queued.pk)]
    assert sent == [str(queued.pk)]


def test_sweeper_settles_cancelled_and_exhausted_runs(queued, settings):
    settings.WINK_RUN_MAX_ATTEMPTS = 1
    lifecycle.claim(queued.pk)
    expire_lease(queued.pk)
    other = services.start_session(prompt_ref="demo/release", params={})
    lifecycle.claim(other.pk)
    lifecycle.request_cancel(other.pk, user=None, now=timezone.now())
    expire_lease(other.pk)

    report = services.sweep_stale_sessions()

    assert report.settled == {
        str(queued.pk): Status.FAILED,
        str(other.pk): Status.CANCELLED,
    }
    assert fresh(queued.pk).error_phase == "interrupted"


def test_cancel_of_a_run_whose_worker_died_settles_at_once(queued):
    lifecycle.claim(queued.pk)
    expire_lease(queued.pk)

    assert services.cancel_session(session_id=queued.pk, user=None) == "cancelled"
    assert fresh(queued.pk).status == Status.CANCELLED


def test_a_second_cancel_once_the_worker_is_gone_settles_at_once(queued):
    """Cancelled while its worker still held the lease, then again once the
    lease expired: the second stayed "requested" until a sweep, since only
    the first request settled (found by hostile QA)."""
    lifecycle.claim(queued.pk)
    assert services.cancel_session(session_id=queued.pk, user=None) == "requested"
    expire_lease(queued.pk)

    assert services.cancel_session(session_id=queued.pk, user=None) == "cancelled"
    assert fresh(queued.pk).status == Status.CANCELLED


def test_a_cancel_of_a_live_run_costs_no_settling(
    queued, django_assert_max_num_queries
):
    # (settling every cancel read the run's totals for nothing: 7 -> 18)
    lifecycle.claim(queued.pk)
    with django_assert_max_num_queries(8):
        assert services.cancel_session(session_id=queued.pk, user=None) == ("requested")
    with django_assert_max_num_queries(8):
        assert services.cancel_session(session_id=queued.pk, user=None) == ("requested")


def test_sweep_command_reports(queued, capsys):
    from django.core.management import call_command

    call_command("sweep_sessions")

    assert "Sweep done: 0 re-dispatched, 0 run inline, 0 settled, 0 approval(s) " in (
        capsys.readouterr().out
    )


def test_tool_invocations_are_unique_per_event(queued):
    services.run_session(session_id=queued.pk)
    ids = list(ToolInvocation.objects.values_list("event_id", flat=True))
    assert all(ids) and len(ids) == len(set(ids))
