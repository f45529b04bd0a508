"""The audit trail of agent runs.

``AgentSession`` moves through its lifecycle (queued, running, then
succeeded, failed or cancelled, or awaiting_approval and queued again;
``sessions_app.runs.lifecycle`` makes every move with one conditional update).
Every row below it is append-only (``tooling.append_only``): recorders create
them, nothing updates or deletes them, and on PostgreSQL a trigger refuses it
too. The one sanctioned removal
is ``AgentSession.objects.purge()``, used by the retention command, which
records what it removed (``SessionPurge``).

``SessionStateEntry`` and ``VirtualFile`` are the session's working state
(what tools change), kept apart from the audit rows so a tool's rollback never
touches the record. ``ApprovalRequest`` is a workflow row, decided once
(``sessions_app.approvals``).

The models live in ``sessions.py``, ``audit.py``, ``approvals.py`` and
``state.py``, the record of each purge in ``retention.py``, the daily spend
roll-ups in ``spend.py``, the search text of a
session in ``search.py``, the fields audit rows share in ``fields.py``, and
datasets, graders and experiments in ``experiments.py``; import them from here.
"""

from sessions_app.models.approvals import ApprovalRequest, ApprovalRequestQuerySet
from sessions_app.models.audit import (
    Citation,
    CitationQuerySet,
    PolicyDenial,
    ProviderCall,
    QuotaDecision,
    StateChange,
    ToolInvocation,
    tool_search_text,
)
from sessions_app.models.experiments import (
    Dataset,
    DatasetCase,
    Experiment,
    ExperimentRun,
    Grader,
    validate_case_params,
)
from sessions_app.models.fields import cost_field, event_id_field, text_altered_field
from sessions_app.models.retention import SessionPurge
from sessions_app.models.search import SearchTextByTime, SessionSearchText
from sessions_app.models.sessions import (
    SESSION_BODY_FIELDS,
    AgentSession,
    AgentSessionQuerySet,
    AuditQuerySet,
    VisibleQuerySetMixin,
    count_of,
    session_duration,
    session_search_text,
    session_url,
)
from sessions_app.models.spend import DailySpend, DailySpendDay
from sessions_app.models.state import SessionStateEntry, VirtualFile

__all__ = [
    "SESSION_BODY_FIELDS",
    "AgentSession",
    "AgentSessionQuerySet",
    "ApprovalRequest",
    "ApprovalRequestQuerySet",
    "AuditQuerySet",
    "Citation",
    "CitationQuerySet",
    "DailySpend",
    "DailySpendDay",
    "Dataset",
    "DatasetCase",
    "Experiment",
    "ExperimentRun",
    "Grader",
    "PolicyDenial",
    "ProviderCall",
    "QuotaDecision",
    "SearchTextByTime",
    "SessionPurge",
    "SessionSearchText",
    "SessionStateEntry",
    "StateChange",
    "ToolInvocation",
    "VirtualFile",
    "VisibleQuerySetMixin",
    "cost_field",
    "count_of",
    "event_id_field",
    "session_duration",
    "session_search_text",
    "session_url",
    "text_altered_field",
    "tool_search_text",
    "validate_case_params",
]
