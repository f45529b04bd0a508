"""The audit pages: sessions, one session's timeline, citations.

Who may see them: logged-in users (anonymous users go to the login page), each
only the sessions ``access.py`` lets them see: another user's session is a 404.
Cancelling a session needs to be its author or hold ``cancel_any_session``.
Every page shows bidirectional control characters neutralised (``bidi.py``).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from django.contrib import messages
from django.contrib.auth.mixins import LoginRequiredMixin
from django.core.exceptions import PermissionDenied
from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404
from django.views import View
from django.views.generic import DetailView, ListView

from sessions_app import access, services
from sessions_app.bidi import NeutraliseBidiMixin
from sessions_app.filters import AgentSessionFilterSet, CitationFilterSet
from sessions_app.models import (
    AgentSession,
    Citation,
    PolicyDenial,
    ProviderCall,
    StateChange,
    ToolInvocation,
)
from tooling.runtime import source_key


@dataclasses.dataclass(frozen=True, slots=True)
class TimelineEntry:
    kind: str
    item: Any

    @property
    def template(self) -> str:
        return f"sessions_app/_{self.kind}.html"


def build_timeline(
    *,
    provider_calls: Iterable[ProviderCall],
    tool_invocations: Iterable[ToolInvocation],
    policy_denials: Iterable[PolicyDenial],
    state_changes: Iterable[StateChange],
) -> list[TimelineEntry]:
    """One ordered timeline of a session's audit rows.

    Provider call N comes before the tool calls of turn N (in sequence order).
    A policy denial goes right before the tool call with its ``call_id`` and
    a state change right after it; rows without a matching call are placed
    by turn (denials) or by time (state changes).
    """
    invocations = list(tool_invocations)
    call_ids = {inv.call_id for inv in invocations if inv.call_id}
    denials_before: defaultdict[str, list[PolicyDenial]] = defaultdict(list)
    changes_after: defaultdict[str, list[StateChange]] = defaultdict(list)
    loose_denials: list[PolicyDenial] = []
    loose_changes: list[StateChange] = []
    for denial in policy_denials:
        if denial.call_id in call_ids:
            denials_before[denial.call_id].append(denial)
        else:
            loose_denials.append(denial)
    for change in state_changes:
        if change.call_id in call_ids:
            changes_after[change.call_id].append(change)
        else:
            loose_changes.append(change)

    keyed: list[tuple[tuple[int, int, int], TimelineEntry]] = [
        ((call.turn, 0, 0), TimelineEntry("provider_call", call))
        for call in provider_calls
    ]
    keyed += [
        ((inv.turn, 1, inv.sequence), TimelineEntry("tool_invocation", inv))
        for inv in invocations
    ]
    keyed += [
        ((denial.turn, 2, index), TimelineEntry("policy_denial", denial))
        for index, denial in enumerate(loose_denials)
    ]
    keyed.sort(key=lambda pair: pair[0])

    timeline: list[TimelineEntry] = []
    for _, entry in keyed:
        call_id = entry.item.call_id if entry.kind == "tool_invocation" else None
        if call_id:
            timeline += [
                TimelineEntry("policy_denial", d) for d in denials_before[call_id]
            ]
            timeline.append(entry)
            timeline += [
                TimelineEntry("state_change", c) for c in changes_after[call_id]
            ]
        else:
            timeline.append(entry)

    for change in loose_changes:
        # After the last entry not later than the change.
        position = 0
        for index, entry in enumerate(timeline):
            if entry.item.created_at <= change.created_at:
                position = index + 1
        timeline.insert(position, TimelineEntry("state_change", change))
    return timeline


def consulted_sources(
    tool_invocations: Iterable[ToolInvocation], citations: Iterable[Citation]
) -> list[str]:
    """Source URLs native web searches returned that no citation cites.

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


def link_search_calls(
    citations: Iterable[Citation], tool_invocations: Iterable[ToolInvocation]
) -> None:
    """Give each citation ``search_call``: the native web search invocation it
    came from (or ``None``), for the sources list to show and link."""
    searches = {
        invocation.call_id: invocation
        for invocation in tool_invocations
        if invocation.native and invocation.call_id
    }
    for citation in citations:
        citation.search_call = searches.get(citation.search_call_id)


class SessionListView(LoginRequiredMixin, NeutraliseBidiMixin, ListView):
    paginate_by = 25
    template_name = "sessions_app/agentsession_list.html"
    context_object_name = "sessions"

    def get_queryset(self) -> QuerySet[AgentSession]:
        queryset = (
            AgentSession.objects.visible_to(self.request.user)
            .summaries()
            .order_by("-created_at")
        )
        self.filterset = AgentSessionFilterSet(self.request.GET, queryset=queryset)
        if not self.filterset.is_valid():
            return queryset.none()
        return self.filterset.qs

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["filter"] = self.filterset
        context["query_string"] = _without_page(self.request.GET)
        return context


class SessionDetailView(LoginRequiredMixin, NeutraliseBidiMixin, DetailView):
    template_name = "sessions_app/agentsession_detail.html"
    context_object_name = "session"

    def get_queryset(self) -> QuerySet[AgentSession]:
        return AgentSession.objects.visible_to(self.request.user).with_audit_trail()

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        session: AgentSession = self.object
        invocations = list(session.tool_invocations.all())
        citations = list(session.citations.all())
        link_search_calls(citations, invocations)
        context.update(
            timeline=build_timeline(
                provider_calls=session.provider_calls.all(),
                tool_invocations=invocations,
                policy_denials=session.policy_denials.all(),
                state_changes=session.state_changes.all(),
            ),
            citations=citations,
            consulted_sources=consulted_sources(invocations, citations),
            files=list(session.files.all()),
            may_cancel=not session.is_finished
            and access.may_cancel(self.request.user, session),
            progress_version=(
                ""
                if session.is_finished
                else progress_version(session.pk, self.request.user)
            ),
        )
        return context


def _count(model: Any) -> Any:
    return Coalesce(
        Subquery(
            model.objects.filter(session=OuterRef("pk"))
            .order_by()
            .values("session")
            .annotate(n=Count("pk"))
            .values("n")
        ),
        0,
    )


def progress(session_id: Any, user: Any) -> dict[str, Any] | None:
    """A running session's progress in one query: status and row counts
    (``None`` when ``user`` may not see it)."""
    row = (
        AgentSession.objects.visible_to(user)
        .filter(pk=session_id)
        .annotate(
            calls=_count(ProviderCall),
            tools=_count(ToolInvocation),
            denials=_count(PolicyDenial),
            changes=_count(StateChange),
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


class CitationListView(LoginRequiredMixin, NeutraliseBidiMixin, ListView):
    paginate_by = 50
    template_name = "sessions_app/citation_list.html"
    context_object_name = "citations"

    def get_queryset(self) -> QuerySet[Citation]:
        queryset = Citation.objects.visible_to(self.request.user).listing()
        self.filterset = CitationFilterSet(self.request.GET, queryset=queryset)
        if not self.filterset.is_valid():
            return queryset.none()
        return self.filterset.qs

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["filter"] = self.filterset
        context["query_string"] = _without_page(self.request.GET)
        return context


def _without_page(query: Any) -> str:
    query = query.copy()
    query.pop("page", None)
    return query.urlencode()
