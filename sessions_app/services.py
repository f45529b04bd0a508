"""The run services every interface calls (API, admin, tasks, commands): one
import for the run's package, ``sessions_app.runs`` (docs/write-path.md)."""

from sessions_app.runs.lifecycle import cancel_session
from sessions_app.runs.running import (
    MAX_RECONNECTS,
    run_session,
    run_session_status,
)
from sessions_app.runs.starting import run_deadline, start_session
from sessions_app.runs.sweeping import SweepReport, sweep_stale_sessions

__all__ = [
    "MAX_RECONNECTS",
    "SweepReport",
    "cancel_session",
    "run_deadline",
    "run_session",
    "run_session_status",
    "start_session",
    "sweep_stale_sessions",
]
