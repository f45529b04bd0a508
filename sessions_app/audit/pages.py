"""The audit pages: sessions, one session's timeline, citations.

Who may see them: logged-in users (anonymous users go to the login page), each
only the sessions ``access.py`` lets them see: another user's session is a 404.
Cancelling a session needs to be its author or hold ``cancel_any_session``.
Every page shows bidirectional control characters neutralised (``bidi.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from django.contrib import messages
from django.contrib.auth.mixins import LoginRequiredMixin
from django.core.exceptions import PermissionDenied
from django.db.models import F, OuterRef, QuerySet, Subquery
from django.db.models.fields.json import KT
from django.db.models.functions import Coalesce
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseRedirect,
    JsonResponse,
)
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django.views import View
from django.views.generic import DetailView, ListView

from sessions_app import access, services
from sessions_app.approvals import inbox
from sessions_app.audit import paging, timeline, waterfall
from sessions_app.audit.bidi import NeutraliseBidiMixin
from sessions_app.audit.filtered import FilteredListMixin
from sessions_app.audit.filters import AgentSessionFilterSet, CitationFilterSet
from sessions_app.experiments import pages as experiment_pages
from sessions_app.models import (
    AgentSession,
    Citation,
    PolicyDenial,
    ProviderCall,
    SessionStateEntry,
    StateChange,
    ToolInvocation,
    count_of,
)
from sessions_app.replays import pages as replay_pages
from tooling.runtime import source_key

# How much of a session one page shows: about what an ordinary session holds
# (20 events), so a session of 10,000 events opens as fast as one of 20.
TIMELINE_PAGE = 20
SOURCES_SHOWN = 20
FILES_SHOWN = 100
# The timeline shows citations under Sources, not between its entries
# (unless they are asked for by kind).
TIMELINE_KINDS = tuple(kind for kind in timeline.KINDS if kind != "citation")
KIND_LABELS = {
    "provider": "Provider calls",
    "tool": "Tool calls",
    "native": "Native calls",
    "denial": "Denials",
    "approval": "Approvals",
    "state": "State changes",
    "citation": "Citations",
}


@dataclasses.dataclass(frozen=True, slots=True)
class TimelineEntry:
    kind: str
    item: Any

    @property
    def template(self) -> str:
        return f"sessions_app/_{self.kind}.html"


def consulted_sources(
    tool_invocations: Iterable[ToolInvocation], citations: Iterable[Citation]
) -> list[str]:
    """Source URLs native web searches returned that none of ``citations``
    cites.

    URLs are compared by ``source_key``: a citation of ``...?utm_source=openai``
    cites the source the search listed without it.
    """
    seen = {source_key(citation.url) for citation in citations}
    sources: list[str] = []
    for invocation in tool_invocations:
        value = invocation.value
        if not invocation.native or not isinstance(value, dict):
            continue
        for source in value.get("sources") or ():
            url = source.get("url") if isinstance(source, dict) else source
            if isinstance(url, str) and url and source_key(url) not in seen:
                seen.add(source_key(url))
                sources.append(url)
    return sources


def consulted_api_sources(tool_invocations: Iterable[ToolInvocation]) -> list[str]:
    """The names of the sources without a URL (real-time feeds such as
    ``oai-weather``) native web searches read, each once: shown as text,
    never as links."""
    names: list[str] = []
    for invocation in tool_invocations:
        value = invocation.value
        if not invocation.native or not isinstance(value, dict):
            continue
        for name in value.get("api_sources") or ():
            if isinstance(name, str) and name and name not in names:
                names.append(name)
    return names


def search_call_fields() -> dict[str, Any]:
    """A citation's call (a web search, file search or code run), for the
    sources list to name and link: its tool name and query
    (``search_call_name``, ``search_call_query``: a file search's first),
    read with the citation, whether or not the call is on this page."""
    search = ToolInvocation.objects.filter(
        session=OuterRef("session_id"), native=True, call_id=OuterRef("search_call_id")
    ).order_by()
    query = Coalesce(KT("params__query"), KT("params__queries__0"))
    return {
        "search_call_name": Subquery(search.values("name")[:1]),
        "search_call_query": Subquery(search.annotate(query=query).values("query")[:1]),
    }


class SessionListView(
    LoginRequiredMixin,
    NeutraliseBidiMixin,
    FilteredListMixin,
    paging.KeysetListMixin,
    ListView,
):
    template_name = "sessions_app/agentsession_list.html"
    context_object_name = "sessions"
    filterset_class = AgentSessionFilterSet

    def get_queryset(self) -> QuerySet[AgentSession]:
        return self.filtered(
            AgentSession.objects.visible_to(self.request.user).summaries()
        )


def _first(queryset: QuerySet[Any], limit: int) -> tuple[list[Any], bool]:
    """The first ``limit`` rows of ``queryset``, and whether there are more."""
    rows = list(queryset[: limit + 1])
    return rows[:limit], len(rows) > limit


class SessionDetailView(LoginRequiredMixin, NeutraliseBidiMixin, DetailView):
    """A session: its facts and prompt, one page of its timeline (``?after=``
    the next), its output and sources. Every part is read with a bound, so a
    session of 10,000 events opens as fast as one of 20."""

    template_name = "sessions_app/agentsession_detail.html"
    context_object_name = "session"

    def get_queryset(self) -> QuerySet[AgentSession]:
        return AgentSession.objects.visible_to(self.request.user).select_related(
            "created_by", "cancelled_by"
        )

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        session: AgentSession = self.object
        after = None
        cursor = self.request.GET.get("after")
        if cursor:
            try:
                after = timeline.decode_cursor(cursor)
            except timeline.InvalidCursor as error:
                raise Http404(str(error)) from error
        asked = [name for name in self.request.GET.getlist("kind") if name]
        shown = [name for name in asked if name in timeline.FILTERS]
        kinds, native = timeline.filtered_kinds(shown)
        events, next_position = timeline.events_page(
            session,
            after=after,
            limit=TIMELINE_PAGE,
            kinds=kinds if shown else TIMELINE_KINDS,
            native=native,
        )
        invocations = [e.row for e in events if e.kind == "tool_invocation"]
        citations, more_citations = _first(
            # Through the session: each citation's session is this one (the
            # allowed-domains flag reads it) without a query per citation.
            session.citations.annotate(
                turn=F("provider_call__turn"), **search_call_fields()
            ).order_by("turn", "id"),
            SOURCES_SHOWN,
        )
        files, more_files = _first(session.files.order_by("path"), FILES_SHOWN)
        now = timezone.now()
        context.update(
            timeline=[TimelineEntry(event.kind, event.row) for event in events],
            timeline_next=timeline.encode_cursor(next_position)
            if next_position
            else None,
            timeline_is_first=after is None,
            timeline_page=TIMELINE_PAGE,
            timeline_filters=[
                (name, label, name in shown) for name, label in KIND_LABELS.items()
            ],
            timeline_query="".join(f"&kind={name}" for name in shown),
            timeline_filter_error=(
                "Unknown kinds were left out of the filter; choose from the boxes."
                if len(shown) != len(asked)
                else ""
            ),
            waterfall=waterfall.build(
                session,
                now=now,
                # the whole timeline on its first page, unfiltered: its rows
                everything=events
                if after is None and next_position is None and not shown
                else None,
            ),
            **durations(session, now),
            final_plan=final_plan(session),
            citations=citations,
            more_citations=more_citations,
            consulted_sources=consulted_sources(invocations, citations),
            consulted_api_sources=consulted_api_sources(invocations),
            files=files,
            more_files=more_files,
            may_cancel=not session.is_finished
            and access.may_cancel(self.request.user, session),
            pending_approval=inbox.pending_for(session)
            if session.status == AgentSession.Status.AWAITING_APPROVAL
            else None,
            progress_version=(
                ""
                if session.is_finished
                else progress_version(session.pk, self.request.user)
            ),
            **replay_pages.detail_context(session, self.request.user),
            datasets=experiment_pages.datasets_for(self.request.user),
        )
        return context


def durations(session: AgentSession, now: Any) -> dict[str, float | None]:
    """How long the run ran (so far) and waited for a worker before, in ms."""
    started = session.started_at
    if started is None:
        return {"run_ms": None, "queued_ms": None}
    ended = session.finished_at or now
    return {
        "run_ms": max(0.0, (ended - started).total_seconds() * 1000),
        "queued_ms": max(0.0, (started - session.created_at).total_seconds() * 1000),
    }


def final_plan(session: AgentSession) -> Any:
    """The plan as the run left it (its working state: one row by the
    ``(session, key)`` unique index), or ``None``; not read for a run that
    was not offered the planning tools."""
    tools = session.tools_payload if isinstance(session.tools_payload, list) else []
    if not any(
        isinstance(tool, dict) and str(tool.get("name", "")).startswith("planning_")
        for tool in tools
    ):
        return None
    entry = (
        SessionStateEntry.objects.filter(session=session, key="plan")
        .only("value")
        .first()
    )
    value = entry.value if entry is not None else None
    return value if isinstance(value, dict) and value.get("steps") else None


def progress(session_id: Any, user: Any) -> dict[str, Any] | None:
    """A running session's progress in one query: status and row counts
    (``None`` when ``user`` may not see it)."""
    row = (
        AgentSession.objects.visible_to(user)
        .filter(pk=session_id)
        .annotate(
            calls=count_of(ProviderCall),
            tools=count_of(ToolInvocation),
            denials=count_of(PolicyDenial),
            changes=count_of(StateChange),
        )
        .values("status", "calls", "tools", "denials", "changes", "cancel_requested_at")
        .first()
    )
    if row is None:
        return None
    status = row["status"]
    return {
        "status": status,
        "status_label": AgentSession.Status(status).label,
        "finished": status in AgentSession.TERMINAL,
        "cancel_requested": row["cancel_requested_at"] is not None,
        "provider_calls": row["calls"],
        "tool_invocations": row["tools"],
        "version": ":".join(
            str(row[key]) for key in ("status", "calls", "tools", "denials", "changes")
        )
        + (":cancelling" if row["cancel_requested_at"] else ""),
    }


def progress_version(session_id: Any, user: Any) -> str:
    data = progress(session_id, user)
    return data["version"] if data else ""


class SessionProgressView(LoginRequiredMixin, View):
    """``GET``: a small JSON document the session page polls while the run is
    live; the page refreshes its content when ``version`` changes."""

    def get(self, request: HttpRequest, pk: Any) -> HttpResponse:
        data = progress(pk, request.user)
        if data is None:
            return JsonResponse({"detail": "Not found."}, status=404)
        response = JsonResponse(data)
        response["Cache-Control"] = "no-store"
        return response


class SessionCancelView(LoginRequiredMixin, View):
    """``POST``: cancel the session (its author, or ``cancel_any_session``)."""

    def post(self, request: HttpRequest, pk: Any) -> HttpResponse:
        session = get_object_or_404(
            AgentSession.objects.visible_to(request.user).only(
                "pk", "status", "created_by"
            ),
            pk=pk,
        )
        if not access.may_cancel(request.user, session):
            raise PermissionDenied("You may cancel only your own sessions.")
        outcome = services.cancel_session(session_id=session.pk, user=request.user)
        text = {
            "cancelled": "The session was cancelled.",
            "requested": "Cancel requested: the run stops at its next step.",
            "finished": "The session had already ended.",
        }[outcome]
        messages.info(request, text)
        return HttpResponseRedirect(session.get_absolute_url())


class CitationListView(
    LoginRequiredMixin,
    NeutraliseBidiMixin,
    FilteredListMixin,
    paging.KeysetListMixin,
    ListView,
):
    page_size = 50
    template_name = "sessions_app/citation_list.html"
    context_object_name = "citations"
    filterset_class = CitationFilterSet

    def get_queryset(self) -> QuerySet[Citation]:
        return self.filtered(Citation.objects.visible_to(self.request.user).listing())
