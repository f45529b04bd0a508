"""What became of an approved call, as its run recorded it (docs/approvals.md,
"Approve racing cancel"): an approver is never told a plain "approved" for a
call that did not run, nor "did not run" for one that may have.

Read from the annotations of ``ApprovalRequestQuerySet.with_call_record``
and the run's status and claims: a run that paused for the request has no
claim (``attempts`` 0, ``store.pause``); the claim that resumes it counts one.
So a run that ended with the call unrecorded and no claim since the pause
never took the call up again (cancelled while queued, or paused on another
policy's request and cancelled then): the call did not run. With a claim, it may
have run (a handler whose worker died before recording
it, an MCP call the provider was asked to make when the run was cancelled).
"""

from __future__ import annotations

import enum

from sessions_app.models import AgentSession, ApprovalRequest


class Outcome(enum.StrEnum):
    """What became of an approved call (``None``: not approved, or its run
    is still on its way to the call)."""

    RAN = "ran"  # recorded: run (or an MCP request answered)
    REFUSED = "refused"  # another policy refused it: it did not run
    NOT_RUN = "not_run"  # the run ended before taking it up again
    UNKNOWN = "unknown"  # the run ended after taking it up, unrecorded


# How a run that ended is said to have ended, by its status.
_ENDED: dict[str, str] = {
    AgentSession.Status.CANCELLED: "was cancelled",
    AgentSession.Status.FAILED: "failed",
    AgentSession.Status.SUCCEEDED: "ended",
}


def of(approval: ApprovalRequest) -> Outcome | None:
    """The outcome of ``approval``'s call (annotated ``with_call_record``)."""
    if approval.status != ApprovalRequest.Status.APPROVED:
        return None
    session = approval.session
    if getattr(approval, "call_refused", None):
        # refused on a second claim: the first may have run it before its
        # worker died (a call limit counts it, then refuses the replay)
        return Outcome.REFUSED if session.attempts <= 1 else Outcome.UNKNOWN
    if getattr(approval, "call_recorded", None):
        return Outcome.RAN
    if session.status not in AgentSession.TERMINAL:
        return None
    return Outcome.NOT_RUN if session.attempts == 0 else Outcome.UNKNOWN


def ended(approval: ApprovalRequest) -> str:
    """How the approval's run ended, as a verb ("was cancelled", "failed")."""
    return _ENDED.get(approval.session.status, "ended")


def label(outcome: Outcome) -> str:
    """An approved request's status as the inbox shows it."""
    return {
        Outcome.RAN: "Approved",
        Outcome.REFUSED: "Approved (another policy refused the call)",
        Outcome.NOT_RUN: "Approved (the call did not run)",
        Outcome.UNKNOWN: "Approved (the run ended; the call may have run)",
    }[outcome]


def note(approval: ApprovalRequest, outcome: Outcome) -> str:
    """What the request's page says beside the decision (empty: the call
    ran)."""
    return {
        Outcome.RAN: "",
        Outcome.REFUSED: "Another policy refused the call (see the run's "
        "denials): it did not run.",
        Outcome.NOT_RUN: f"The run {ended(approval)} before the approved call "
        "ran; the call did not run.",
        Outcome.UNKNOWN: f"The run {ended(approval)} after it took the approved "
        "call up, before it recorded it: the call may have run (a handler's "
        "effects, or an MCP call the provider was asked to make).",
    }[outcome]


def answer(approval: ApprovalRequest, outcome: Outcome) -> str:
    """What the approver is answered when the call did not run, or may have
    (``decisions.RunNotResumed``)."""
    if outcome is Outcome.REFUSED:
        return (
            "Approved, but another policy refused the call (see the run's "
            "denials); the call did not run."
        )
    if outcome is Outcome.NOT_RUN:
        return (
            f"Approved, but the run {ended(approval)} before the approved call "
            "ran; the call did not run."
        )
    return (
        f"Approved, but the run {ended(approval)} before it recorded the approved "
        "call; the call may have run."
    )
