"""The revision pages: the list, one revision, and the comparison of two.

Who may see them: holders of ``tooling.view_catalogrevision`` (catalog staff
given it, the Auditors group); other logged-in users get 403, anonymous users
the login page. A revision's runs are those the viewer may see
(``AgentSession.objects.visible_to``).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.mixins import LoginRequiredMixin
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.views.generic import ListView, TemplateView

from sessions_app import access
from sessions_app.audit.bidi import NeutraliseBidiMixin
from sessions_app.audit.filtered import FilteredListMixin
from sessions_app.audit.paging import KeysetListMixin
from tooling.models import CatalogRevision

from . import compare, queries
from .filters import RevisionFilterSet

RUNS_SHOWN = 10


class RevisionAccessMixin(LoginRequiredMixin):
    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        if request.user.is_authenticated and not access.may_view_revisions(
            request.user
        ):
            raise PermissionDenied(access.REVISIONS_DENIED)
        return super().dispatch(request, *args, **kwargs)


class RevisionListView(
    RevisionAccessMixin,
    NeutraliseBidiMixin,
    FilteredListMixin,
    KeysetListMixin,
    ListView,
):
    template_name = "sessions_app/revision_list.html"
    context_object_name = "revisions"

    filterset_class = RevisionFilterSet

    def get_queryset(self) -> QuerySet[CatalogRevision]:
        return self.filtered(CatalogRevision.objects.defer("data"))


def stored(digest: str) -> CatalogRevision:
    revision = queries.revision(digest)
    if revision is None:
        raise Http404("No catalog revision has this hash.")
    return revision


class RevisionDetailView(RevisionAccessMixin, NeutraliseBidiMixin, TemplateView):
    template_name = "sessions_app/revision_detail.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        revision = stored(kwargs["digest"])
        context.update(detail_context(revision, self.request.user))
        return context


def detail_context(revision: CatalogRevision, user: Any) -> dict[str, Any]:
    """What ``_revision.html`` shows of ``revision`` to ``user`` (this page
    and the admin's)."""
    shown = list(queries.runs(revision, user)[: RUNS_SHOWN + 1])
    return {
        "revision": revision,
        "view": queries.stored_side(revision).view,
        "first_run_at": queries.first_run_at(revision),
        "runs": shown[:RUNS_SHOWN],
        "more_runs": len(shown) > RUNS_SHOWN,
        "previous": queries.previous(revision),
        "following": queries.following(revision),
        "changes": list(queries.changes_behind(revision))
        if access.may_view_changes(user)
        else None,
    }


class RevisionCompareView(RevisionAccessMixin, NeutraliseBidiMixin, TemplateView):
    """``<digest>/compare/<other>/``: ``other`` a hash, or ``live`` for the
    prompt as the catalog holds it now."""

    template_name = "sessions_app/revision_compare.html"

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        revision = stored(kwargs["digest"])
        other = kwargs["other"]
        if other == queries.LIVE:
            after = queries.live_side(revision.prompt_ref)
        else:
            after = queries.stored_side(stored(other))
        context = self.get_context_data(revision=revision, **kwargs)
        before = queries.stored_side(revision)
        if isinstance(after, str):
            context["problem"] = after
        else:
            context.update(
                diff=compare.compare(before.view, after.view),
                after_side=after,
                changes=list(queries.changes_between(revision, after))
                if access.may_view_changes(self.request.user)
                else None,
            )
        return self.render_to_response(context)
