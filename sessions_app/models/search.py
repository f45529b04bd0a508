"""The text a search reads of a session (``SessionSearchText``, ADR 0028).

One row per session. Written with the session (``begun``: its parameters) and
written again in the transaction that ends it (``index_ended``: its
parameters, its output and the arguments of its tool calls), case-folded
(``str.casefold``: "Straße" is found by "STRASSE") in one text, with a copy of
the session's ``created_at``: a search tests one text per session, and on
PostgreSQL reads one trigram index of it and sorts its matches before it
reads a session (``sessions_app.audit.filters``). While a session is in flight
(``ended`` false) its tool calls are tested by their rows.

The row is derived: ``manage.py index_sessions`` writes any that are missing
(sessions older than migration 0025 get theirs from it; a database restored
from elsewhere, a bulk load), and it goes with its session.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from django.apps import apps
from django.db import models

from sessions_app.models.sessions import AgentSession
from tooling.runtime.text import storable_text

# The statuses of an ended session (``AgentSession.TERMINAL``, as values a
# migration's historical model can compare).
ENDED = tuple(str(status) for status in AgentSession.TERMINAL)

# Between the texts of one session: a search for text spanning two of them
# (one tool call's end and the next one's start) must not match. Its record
# separator is found nowhere else in the text nor in a search (``fold``).
RECORD_SEPARATOR = "\x1e"
SEPARATOR = f"\n{RECORD_SEPARATOR}\n"

# What ``index_ended`` writes over the text ``begun`` wrote.
REWRITTEN = ["text", "ended"]


def fold(text: str) -> str:
    """``text`` as a search compares it (the search's words too), its record
    separators read as spaces: only ``SEPARATOR`` holds one."""
    return text.casefold().replace(RECORD_SEPARATOR, " ")


def readable_json(value: Any) -> str:
    """``value`` as JSON text whose strings read as they are: not escaped, so
    ``said "hello"``, ``C:\\temp`` or a tab in a parameter is found by
    typing it (JSON writes ``said \\"hello\\"``). Only a search reads it:
    it need not parse. A NUL byte or a lone surrogate (which JSON escaped)
    is replaced: no database stores it."""
    try:
        return storable_text(_readable(value))[0]
    except RecursionError:  # deeper than any parameter the API takes
        return json.dumps(value, ensure_ascii=False)


def _readable(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, dict):
        members = (f'"{key}": {_readable(item)}' for key, item in value.items())
        return "{" + ", ".join(members) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_readable(item) for item in value) + "]"
    return json.dumps(value)


def tool_text(params: Any, raw_arguments: str) -> str:
    """A tool call's arguments as a search reads them: parsed, as JSON text
    with its characters as they are (``readable_json``); the text the model
    sent when it could not be parsed."""
    if params is None:
        return raw_arguments
    return readable_json(params)


def document(params: Any, output_text: str, tools: Iterable[str]) -> str:
    """The folded text of a session: its parameters, its output and its tool
    calls' arguments (``tool_text``)."""
    parts = [readable_json(params) if params else "", output_text]
    parts.extend(tools)
    return SEPARATOR.join(fold(part) for part in parts if part)


class SessionSearchText(models.Model):
    """The text a search reads of a session (the module's docstring).

    A view reads this table (``SearchTextByTime``, migration 0026): a
    migration that alters it must drop the view first and create it again
    after (``BY_TIME_VIEW``). SQLite rebuilds a table it alters and refuses
    while a view names it; PostgreSQL refuses to change the type of a column
    the view reads."""

    session = models.OneToOneField(
        AgentSession,
        primary_key=True,
        on_delete=models.CASCADE,
        related_name="search_text",
    )
    # The session's: a search sorts the matching texts by it, then reads
    # only the sessions of the page.
    created_at = models.DateTimeField()
    ended = models.BooleanField(
        default=False,
        help_text="The text holds the whole session (written when it ended); "
        "until then only its parameters, and its tool calls are read from "
        "their rows.",
    )
    text = models.TextField()

    class Meta:
        verbose_name = "session search text"
        indexes = [
            models.Index(
                fields=["session"],
                condition=models.Q(ended=False),
                name="search_text_in_flight",
            )
        ]

    def __str__(self) -> str:
        return f"search text of {self.session_id}"


# The view ``SearchTextByTime`` reads (migration 0026).
BY_TIME_VIEW = "sessions_app_search_text_by_time"


class SearchTextByTime(models.Model):
    """The search texts newest first: a view of ``SessionSearchText`` ordered
    by its ``created_at`` (migration 0026), which a search that reads the
    trigram index joins its sessions to (``sessions_app.audit.filters``).

    A view, not the table, because of its ``ORDER BY``: PostgreSQL keeps a
    subquery with one as a subquery (pushing the search's conditions into
    it), so the matching texts are read from the index and sorted before a
    session is read, and only the page's sessions are. Joined to the table
    itself, it reads every match's session (or every session's key) before
    it sorts: 26 ms against 8 ms for 9,400 matches (ADR 0028's second
    addendum). Read-only; nothing writes through it."""

    session = models.OneToOneField(
        AgentSession,
        primary_key=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="search_by_time",
    )
    created_at = models.DateTimeField()
    ended = models.BooleanField()
    text = models.TextField()

    class Meta:
        managed = False
        db_table = BY_TIME_VIEW
        verbose_name = "session search text (newest first)"

    def __str__(self) -> str:
        return f"search text of {self.session_id} (newest first)"


def begun(session: AgentSession) -> None:
    """Write the search text of a session being created (its parameters)."""
    SessionSearchText.objects.create(
        session=session,
        created_at=session.created_at,
        text=document(session.params, "", ()),
    )


def tool_texts(session_ids: list[Any], registry: Any = apps) -> dict[Any, list[str]]:
    """Each session's tool calls' arguments (``tool_text``), in the order they
    ran: one query."""
    calls = registry.get_model("sessions_app", "ToolInvocation")
    tools: dict[Any, list[str]] = {pk: [] for pk in session_ids}
    rows = (
        calls.objects.filter(session_id__in=session_ids)
        .order_by("session_id", "sequence")
        .values_list("session_id", "params", "raw_arguments")
    )
    for session_id, params, raw_arguments in rows:
        tools[session_id].append(tool_text(params, raw_arguments))
    return tools


def texts_of(session_ids: list[Any], registry: Any = apps) -> list[Any]:
    """The search texts of these sessions, built from their rows (two
    queries): whole for an ended session, its parameters for one in flight.
    ``registry``: where the models come from (a migration's ``apps``)."""
    sessions = registry.get_model("sessions_app", "AgentSession")
    texts = registry.get_model("sessions_app", "SessionSearchText")
    tools = tool_texts(session_ids, registry)
    rows = sessions.objects.filter(pk__in=session_ids).values_list(
        "pk", "created_at", "status", "params", "output_text"
    )
    return [
        texts(
            session_id=pk,
            created_at=created_at,
            ended=status in ENDED,
            text=(
                document(params, output, tools[pk])
                if status in ENDED
                else document(params, "", ())
            ),
        )
        for pk, created_at, status, params, output in rows
    ]


def index_ended(
    session_id: Any,
    session: AgentSession | None = None,
    output_text: str | None = None,
) -> None:
    """Write the whole search text of a session that ends (inside the
    transaction that ends it; over the one ``begun`` wrote). ``session``: the
    session as the caller holds it (the run's end), so only its tool calls
    are read; ``output_text``: its output, when the end sets it."""
    if session is None:
        session = AgentSession.objects.only("created_at", "params", "output_text").get(
            pk=session_id
        )
    output = session.output_text if output_text is None else output_text
    row = SessionSearchText(
        session_id=session_id,
        created_at=session.created_at,
        ended=True,
        text=document(session.params, output, tool_texts([session_id])[session_id]),
    )
    SessionSearchText.objects.bulk_create(
        [row],
        update_conflicts=True,
        unique_fields=["session"],
        update_fields=REWRITTEN,
    )


def index_missing(
    batch: int = 500, registry: Any = apps, *, rewrite: bool = False
) -> int:
    """Write the search text of every session without one, and the whole text
    of every ended session whose text holds only its parameters (ended by a
    process older than migration 0025); how many. ``rewrite``: every
    session's, as this version writes it (an older one escaped quotes,
    backslashes and tabs). Safe beside running workers: a text in flight
    never replaces one written meanwhile, and a whole one is what the
    session's end writes."""
    sessions = registry.get_model("sessions_app", "AgentSession")
    texts = registry.get_model("sessions_app", "SessionSearchText")
    written = 0
    due = sessions.objects.order_by("pk")
    if not rewrite:
        due = due.filter(
            models.Q(search_text__isnull=True)
            | models.Q(status__in=ENDED, search_text__ended=False)
        )
    while True:
        # in key order, each batch after the last: the table read once
        ids = list(due.values_list("pk", flat=True)[:batch])
        if not ids:
            break
        rows = texts_of(ids, registry)
        texts.objects.bulk_create(
            [row for row in rows if row.ended],
            update_conflicts=True,
            unique_fields=["session"],
            update_fields=REWRITTEN,
        )
        in_flight = [row for row in rows if not row.ended]
        texts.objects.bulk_create(in_flight, ignore_conflicts=True)
        if rewrite:  # over a text in flight; never over one its end wrote
            for row in in_flight:
                texts.objects.filter(session_id=row.session_id, ended=False).update(
                    text=row.text
                )
        written += len(ids)
        due = due.filter(pk__gt=ids[-1])
    return written
