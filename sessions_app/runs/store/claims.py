"""A worker's hold on a running session (``Claim``) and the claim itself.

A claim is one conditional ``UPDATE`` (``QuerySet.update()``): it succeeds on
a queued session, or on a running one whose lease expired (its worker died),
counts an attempt and writes a fresh ``claim_token`` and lease. Every later
update the worker makes (renewing the lease, pausing, ending the run) requires
that token (``Claim.mine()``), so a worker that lost its lease can never
overwrite the session.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import time
import uuid
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.db.models import (
    Case,
    DateTimeField,
    DurationField,
    ExpressionWrapper,
    F,
    IntegerField,
    Q,
    Value,
    When,
)
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from sessions_app.models import AgentSession
from tooling.models import generation_token
from tooling.runtime import RunAborted

from .commits import release

Status = AgentSession.Status


class LeaseLost(RunAborted):
    """Another worker claimed the run (this one's lease expired)."""


class RunCancelled(RunAborted):
    """Someone cancelled the run; it stops at this step."""


class StoreUnavailable(RunAborted):
    """The database connection failed; the run stops here and resumes."""


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"[:200]


def lease_seconds() -> float:
    return float(settings.WINK_RUN_LEASE_SECONDS)


@dataclasses.dataclass
class Claim:
    """A worker's hold on a running session: the token its updates require."""

    session: AgentSession
    token: uuid.UUID
    renew_every: float
    #: when the lease was last set (at or before), by the monotonic and the
    #: wall clock (a suspended machine stops the first, not the second)
    _renewed: float = dataclasses.field(default_factory=time.monotonic)
    _renewed_wall: float = dataclasses.field(default_factory=time.time)
    #: the status this worker's own update ended (or paused) the run with
    ended: str | None = None
    #: the process's batched renewal (``leases``) did not renew this lease
    stopped: bool = False
    #: renewed by the process's batched renewal (``leases.register``)
    batched: bool = False

    @property
    def session_id(self) -> Any:
        return self.session.pk

    def mine(self) -> Q:
        """The condition of every update this worker makes."""
        return Q(pk=self.session.pk, status=Status.RUNNING, claim_token=self.token)

    def beat(self) -> None:
        """The run's heartbeat: renew the lease (at most every ``renew_every``
        seconds) and stop the run if it was cancelled or taken over.

        With a batched renewal (``leases``), no query unless the renewal
        found the lease gone; the connection goes back to the pool (a run
        beats while it waits for the model)."""
        if self.batched:
            try:
                if self.stopped:
                    self.lost()
            finally:
                release()
            return
        if self._since_renewed() < self.renew_every:
            return
        self.renewed(self.stamp())
        try:
            renewed = AgentSession.objects.filter(
                self.mine(), cancel_requested_at__isnull=True
            ).update(
                lease_expires_at=timezone.now() + timedelta(seconds=lease_seconds())
            )
        except (OperationalError, InterfaceError) as error:
            raise StoreUnavailable("The database connection failed.") from error
        if not renewed:
            self.lost()

    def fence_due(self) -> bool:
        """Whether a commit must check the claim (``hold``): half the lease
        has passed since it was last set. Before then no other worker can
        have claimed the run (a claim needs the lease expired), so the check
        would always pass."""
        return self._since_renewed() >= lease_seconds() / 2

    def hold(self) -> tuple[float, float]:
        """Inside a commit of the run: the claim is still this worker's, its
        lease renewed by the same update; otherwise ``LeaseLost`` (or
        ``RunCancelled``), which rolls the commit back. A worker that lost
        its lease (stalled past it while another worker took the run over)
        writes nothing more to the run's record: its late rows could collide
        with the new holder's, which records the same events itself. Returns
        the time of the renewal, for ``renewed()`` once the commit is made."""
        at = self.stamp()
        held = AgentSession.objects.filter(self.mine()).update(
            lease_expires_at=timezone.now() + timedelta(seconds=lease_seconds())
        )
        if not held:
            self.lost()
        return at

    @staticmethod
    def stamp() -> tuple[float, float]:
        return time.monotonic(), time.time()

    def renewed(self, at: tuple[float, float]) -> None:
        """The lease was set at ``at`` (``stamp()``)."""
        self._renewed, self._renewed_wall = at

    def _since_renewed(self) -> float:
        return max(time.monotonic() - self._renewed, time.time() - self._renewed_wall)

    def lost(self) -> None:
        """Raise why this worker's conditional update changed nothing:
        ``RunCancelled`` or ``LeaseLost``."""
        try:
            row = (
                AgentSession.objects.filter(pk=self.session.pk)
                .values("status", "claim_token", "cancel_requested_at")
                .first()
            )
        except (OperationalError, InterfaceError) as error:
            raise StoreUnavailable("The database connection failed.") from error
        if (
            row is not None
            and row["claim_token"] == self.token
            and row["status"] == Status.RUNNING
            and row["cancel_requested_at"] is not None
        ):
            raise RunCancelled("The session was cancelled.")
        raise LeaseLost("Another worker holds this session now.")


def claim(
    session_id: Any, *, now: datetime | None = None, new: AgentSession | None = None
) -> Claim | None:
    """Claim the session for this worker, or ``None`` if it is not claimable:
    finished, cancelled, held by a live lease, out of attempts, or missing.

    The update sets the run's deadline from the row's own columns: on the
    first claim ``deadline_seconds`` from now, kept by later claims (an
    expired lease), and on the claim that resumes a paused run the time it had
    left (``deadline_left_seconds``) from now. It reads and writes the row at
    once (PostgreSQL evaluates its condition and values on the row's latest
    version), so a pause or another claim in between cannot give the run its
    deadline twice. The claimed session is then read back, with the catalog's
    generation (cached price sheets).

    ``new`` is the session as this process just created it (still queued,
    never dispatched, never paused): the claim then sets its columns in memory
    instead of reading it back."""
    now = now or timezone.now()
    token = uuid.uuid4()
    lease = now + timedelta(seconds=lease_seconds())
    worker = worker_name()
    claimable, deadline_at = _claimable(session_id, now=now, new=new)
    claimed = claimable.update(
        status=Status.RUNNING,
        claim_token=token,
        attempts=F("attempts") + 1,
        lease_expires_at=lease,
        worker=worker,
        started_at=Coalesce("started_at", Value(now)),
        deadline_at=deadline_at,
        deadline_left_seconds=None,
    )
    if not claimed:
        return None
    renew_every = float(settings.WINK_RUN_HEARTBEAT_SECONDS)
    if new is not None:
        new.status = Status.RUNNING
        new.claim_token = token
        new.attempts = 1
        new.lease_expires_at = lease
        new.worker = worker
        new.started_at = now
        new.deadline_at = new.deadline_at or now + timedelta(
            seconds=new.deadline_seconds or 1
        )
        return Claim(new, token, renew_every)
    session = AgentSession.objects.annotate(catalog_token=generation_token()).get(
        pk=session_id
    )
    release()
    return Claim(session, token, renew_every)


def _claimable(
    session_id: Any, *, now: datetime, new: AgentSession | None
) -> tuple[Any, Any]:
    """The claim's row (a query set of at most one session) and the deadline
    it sets."""
    unpaused = Q()
    deadline_at: Any
    if new is not None:
        deadline_at = Coalesce(
            "deadline_at",
            Value(now + timedelta(seconds=new.deadline_seconds or 1)),
            output_field=DateTimeField(),
        )
        # not paused meanwhile (a pause clears deadline_at: this claim would
        # give the resumed run its whole deadline again)
        unpaused = Q(deadline_left_seconds__isnull=True, attempts=0)
    else:
        deadline_at = Case(
            When(
                deadline_left_seconds__isnull=True,
                then=Coalesce(
                    "deadline_at",
                    _seconds_after(now, Greatest("deadline_seconds", Value(1))),
                ),
            ),
            # resumed after a pause: the time left then, from now
            default=_seconds_after(now, F("deadline_left_seconds")),
            output_field=DateTimeField(),
        )
    claimable = AgentSession.objects.filter(
        Q(status=Status.QUEUED) | Q(status=Status.RUNNING, lease_expires_at__lt=now),
        unpaused,
        pk=session_id,
        cancel_requested_at__isnull=True,
        attempts__lt=settings.WINK_RUN_MAX_ATTEMPTS,
    )
    return claimable, deadline_at


def _seconds_after(now: datetime, seconds: Any) -> ExpressionWrapper:
    """``now`` plus a whole number of seconds (an integer expression), in SQL
    on either backend (an interval on PostgreSQL, microseconds on SQLite)."""
    # typed at each step: Django picks each backend's duration arithmetic
    # (SQLite: django_format_dtdelta) from the operands' field types
    count = ExpressionWrapper(seconds, output_field=IntegerField())
    span = ExpressionWrapper(
        Value(timedelta(seconds=1), DurationField()) * count,
        output_field=DurationField(),
    )
    return ExpressionWrapper(
        Value(now, DateTimeField()) + span, output_field=DateTimeField()
    )
