"""The one door to the database for a run (docs/write-path.md)."""

from . import leases
from .claims import (
    Claim,
    LeaseLost,
    RunCancelled,
    StoreUnavailable,
    claim,
    lease_seconds,
    worker_name,
)
from .commits import RECOMMIT_DELAYS, reconnect, release
from .ended import announce, session_ended
from .store import RunStore, create, finish, pause
from .units import Unit

__all__ = [
    "RECOMMIT_DELAYS",
    "Claim",
    "LeaseLost",
    "RunCancelled",
    "RunStore",
    "StoreUnavailable",
    "Unit",
    "announce",
    "claim",
    "create",
    "finish",
    "lease_seconds",
    "leases",
    "pause",
    "reconnect",
    "release",
    "session_ended",
    "worker_name",
]
