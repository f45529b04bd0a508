"""One lease renewal per worker process, not one per run (ADR 0022).

In a worker (``WINK_RUN_BATCHED_LEASES``, on with ``WINK_PROCESS=worker``) a
claim registers with the process's ``Renewer``: one daemon thread that, every
``WINK_RUN_HEARTBEAT_SECONDS``, renews the lease of every run in flight in one
``UPDATE`` (``claim_token IN (...)``, still running, not cancelled) on the
``CONTROL_DATABASE`` alias (a pooled worker: a small pool of its own, so that a
busy runs' pool never delays a lease). A claim the update did not renew
(cancelled, taken over, ended) is marked ``stopped``; the run's own heartbeat
(``Claim.beat``) then reads why and stops, and makes no query otherwise.

A thread cannot be killed, and no Celery pool but prefork enforces a task's
time limit: a run still busy past its deadline plus
``WINK_RUN_TIME_LIMIT_GRACE`` (a tool that does not return) is ended here
instead (``failed``, phase ``deadline``, under its claim) and its lease is no
longer renewed. Its thread stays busy until the handler returns; whatever it
writes after that is refused (``Claim.stopped`` fences every commit:
``LeaseLost``). The ending is written on a thread of its own: it needs a
connection of the runs' pool, which may be busy (or held by the very threads
that hang), and no other run's lease may wait for it.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, connections
from django.utils import timezone

from sessions_app.models import AgentSession

from .claims import Claim, LeaseLost
from .commits import release
from .store import finish

logger = logging.getLogger(__name__)

Status = AgentSession.Status

OVERDUE_MESSAGE = (
    "The run was still busy past its time limit (a tool that did not return) "
    "and was stopped."
)


def enabled() -> bool:
    """Whether this process renews its runs' leases in one batch."""
    return bool(getattr(settings, "WINK_RUN_BATCHED_LEASES", False))


class Renewer:
    """The leases of this process's runs in flight, renewed together."""

    def __init__(self) -> None:
        self._claims: dict[uuid.UUID, Claim] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        #: runs this process ended past their deadline whose thread was busy
        self.overdue = 0
        #: the thread that ends the last round's overdue runs (``renew``)
        self.ending: threading.Thread | None = None

    def add(self, claim: Claim) -> None:
        """Renew the claim's lease from now on (the thread starts with the
        first claim)."""
        self.track(claim)
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._loop, name="wink-leases", daemon=True
                )
                self._thread.start()

    def track(self, claim: Claim) -> None:
        """Renew the claim's lease in each round (``renew``)."""
        with self._lock:
            self._claims[claim.token] = claim

    def remove(self, claim: Claim) -> None:
        with self._lock:
            self._claims.pop(claim.token, None)

    def __len__(self) -> int:
        return len(self._claims)

    def _loop(self) -> None:
        every = float(settings.WINK_RUN_HEARTBEAT_SECONDS)
        while True:
            began = time.monotonic()
            try:
                self.renew()
            except Exception:  # never let the thread die: leases depend on it
                logger.exception("Renewing the runs' leases failed; trying again")
            time.sleep(max(0.05, every - (time.monotonic() - began)))

    def renew(self) -> int:
        """One round: renew every lease in one statement; mark the claims it
        did not renew; end the runs past their deadline and grace. The number
        of leases renewed."""
        with self._lock:
            claims = list(self._claims.values())
        if not claims:
            return 0
        now = timezone.now()
        grace = timedelta(seconds=int(settings.WINK_RUN_TIME_LIMIT_GRACE))
        overdue = [c for c in claims if _overdue(c, now - grace)]
        live = [c for c in claims if c not in overdue and not c.stopped]
        renewed = self._renew(live) if live else 0
        if overdue:
            for claim in overdue:
                self.remove(claim)
                claim.stopped = True  # its thread's later commits are refused
            # not on this thread: an ending waits for a connection of the
            # runs' pool, and every other lease would wait behind it
            self.ending = threading.Thread(
                target=self._end_all, args=(overdue,), name="wink-overdue", daemon=True
            )
            self.ending.start()
        return renewed

    def _renew(self, claims: list[Claim]) -> int:
        alias = settings.CONTROL_DATABASE
        at = Claim.stamp()
        try:
            running = AgentSession.objects.using(alias).filter(
                claim_token__in=[c.token for c in claims],
                status=Status.RUNNING,
                cancel_requested_at__isnull=True,
            )
            renewed = running.update(
                lease_expires_at=timezone.now()
                + timedelta(seconds=float(settings.WINK_RUN_LEASE_SECONDS))
            )
            alive = (
                {c.token for c in claims}
                if renewed == len(claims)
                else {t for t in running.values_list("claim_token", flat=True) if t}
            )
        except DatabaseError:
            logger.warning(
                "Could not renew the leases of %d run(s); trying again",
                len(claims),
                exc_info=True,
            )
            return 0
        finally:
            release(alias)  # back to the control pool
        for claim in claims:
            if claim.token in alive:
                claim.renewed(at)
            else:
                claim.stopped = True  # cancelled, taken over or ended
        return renewed

    def _end_all(self, claims: list[Claim]) -> None:
        try:
            for claim in claims:
                self._end_overdue(claim)
        finally:
            connections.close_all()  # this thread's: back to the pool, or closed

    def _end_overdue(self, claim: Claim) -> None:
        try:
            finish(
                claim, status=Status.FAILED, phase="deadline", message=OVERDUE_MESSAGE
            )
        except LeaseLost:
            logger.info("Session %s: overdue, but it ended meanwhile", claim.session_id)
            return
        except DatabaseError:
            # not ended: its lease expires, and the sweeper ends it
            logger.warning(
                "Session %s: could not end it past its deadline",
                claim.session_id,
                exc_info=True,
            )
            return
        finally:
            release()
        with self._lock:
            self.overdue += 1
        logger.error(
            "Session %s: ended past its deadline; its thread is still busy "
            "(%d such thread(s) in this process so far)",
            claim.session_id,
            self.overdue,
        )


def _overdue(claim: Claim, before: datetime) -> bool:
    deadline_at = claim.session.deadline_at
    return deadline_at is not None and deadline_at < before


renewer = Renewer()


def register(claim: Claim) -> None:
    """Renew the claim's lease with the process's others (a worker); its own
    heartbeat then only checks what the renewal found."""
    if enabled():
        claim.batched = True
        renewer.add(claim)


def unregister(claim: Claim) -> None:
    """The run is over in this process: no more renewals."""
    renewer.remove(claim)
