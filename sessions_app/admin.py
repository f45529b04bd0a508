"""Admin for the audit trail (read-only), and running a prompt from its preview.

Who may see it: staff with the models' view permission, each only the sessions
``access.py`` lets them see (another user's row is a 404). Nothing in the audit
trail can be added, changed or deleted here; sessions can be cancelled (their
author, or ``cancel_any_session``); running a prompt needs ``start_session``.
Pages show bidi controls neutralised.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import path, reverse

from sessions_app import access, services
from sessions_app.admin_base import ReadOnlyAdmin
from sessions_app.approvals import admin as approvals_admin  # noqa: F401 (registers the inbox)
from sessions_app.costs import budgets
from sessions_app.costs.budgets import DailyBudgetExceeded
from sessions_app.experiments import admin as experiment_admin  # noqa: F401 (registers)
from sessions_app.models import (
    AgentSession,
    Citation,
    PolicyDenial,
    ProviderCall,
    SessionPurge,
    ToolInvocation,
)
from sessions_app.releases import admin as release_admin
from sessions_app.revisions import pages as revision_pages
from tooling import releases
from tooling.admin.prompts import PromptTemplateAdmin
from tooling.api.throttling import StartSlot, start_limit_message
from tooling.models import CatalogRevision, PromptLabel, PromptTemplate, Release
from tooling.param_size import too_large


@admin.register(AgentSession)
class AgentSessionAdmin(ReadOnlyAdmin):
    list_display = [
        "id",
        "prompt_ref",
        "status",
        "model",
        "provider",
        "turns",
        "attempts",
        "created_at",
    ]
    list_filter = ["status", "provider", "model"]
    search_fields = ["prompt_ref", "id"]
    date_hierarchy = "created_at"
    actions = ["cancel_sessions"]

    def has_cancel_permission(self, request: HttpRequest) -> bool:
        return self.has_view_permission(request)

    @admin.action(description="Cancel selected sessions", permissions=["cancel"])
    def cancel_sessions(
        self, request: HttpRequest, queryset: QuerySet[AgentSession]
    ) -> None:
        outcomes: Counter[str] = Counter()
        for session in queryset.only("pk", "status", "created_by"):
            if session.is_finished:
                outcomes["finished"] += 1
            elif not access.may_cancel(request.user, session):
                outcomes["not yours"] += 1
            else:
                outcomes[
                    services.cancel_session(session_id=session.pk, user=request.user)
                ] += 1
        labels = {
            "cancelled": "cancelled",
            "requested": "asked to stop at their next step",
            "finished": "already finished (left as they were)",
            "not yours": "not cancelled: only their author or a user with 'Can "
            "cancel any session' may",
        }
        summary = "; ".join(
            f"{count} {labels[outcome]}" for outcome, count in sorted(outcomes.items())
        )
        self.message_user(request, f"Sessions: {summary}.", messages.INFO)


@admin.register(ProviderCall)
class ProviderCallAdmin(ReadOnlyAdmin):
    list_display = [
        "session",
        "turn",
        "status",
        "attempt_count",
        "input_tokens",
        "output_tokens",
        "latency_ms",
    ]
    list_select_related = ["session"]
    list_filter = ["status"]
    date_hierarchy = "created_at"


@admin.register(ToolInvocation)
class ToolInvocationAdmin(ReadOnlyAdmin):
    list_display = [
        "session",
        "sequence",
        "name",
        "kind",
        "native",
        "success",
        "created_at",
    ]
    list_select_related = ["session"]
    list_filter = ["native", "success", "kind"]
    search_fields = ["name", "call_id"]
    date_hierarchy = "created_at"


@admin.register(PolicyDenial)
class PolicyDenialAdmin(ReadOnlyAdmin):
    list_display = ["session", "policy_name", "tool_name", "reason", "created_at"]
    list_select_related = ["session"]
    list_filter = ["policy_name"]
    date_hierarchy = "created_at"


@admin.register(Citation)
class CitationAdmin(ReadOnlyAdmin):
    list_display = ["session", "kind", "domain", "title", "created_at"]
    list_select_related = ["session"]
    list_filter = ["kind"]
    search_fields = ["url", "title", "domain"]
    date_hierarchy = "created_at"


@admin.register(SessionPurge)
class SessionPurgeAdmin(ReadOnlyAdmin):
    scoped_to_sessions = False
    list_display = ["created_at", "older_than", "session_count", "requested_by"]
    date_hierarchy = "created_at"


@admin.register(CatalogRevision)
class CatalogRevisionAdmin(ReadOnlyAdmin):
    """A revision's page shows it as the model sees it, with its changes,
    runs and comparisons (the audit page's content, ``_revision.html``)."""

    scoped_to_sessions = False
    list_display = ["hash", "prompt_ref", "created_at"]
    search_fields = ["hash", "prompt_ref"]
    date_hierarchy = "created_at"
    fields = ["hash", "prompt_ref", "created_at"]
    change_form_template = "admin/tooling/catalogrevision/change_form.html"

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        revision = self.get_object(request, object_id)
        if revision is not None and self.has_view_permission(request, revision):
            extra_context = {
                **(extra_context or {}),
                **revision_pages.detail_context(revision, request.user),
            }
        return super().change_view(request, object_id, form_url, extra_context)


admin.site.unregister(PromptTemplate)


admin.site.register(Release, release_admin.ReleaseAdmin)
admin.site.register(PromptLabel, release_admin.PromptLabelAdmin)


@admin.register(PromptTemplate)
class PromptTemplateRunAdmin(release_admin.ReleasePageMixin, PromptTemplateAdmin):
    """The catalog's prompt template admin, plus running a session from the
    preview page (a separate POST; the preview itself never runs anything),
    and links to the prompt's revisions: the list, and what changed since the
    revision its latest session ran."""

    change_form_template = "admin/sessions_app/prompttemplate_change_form.html"

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        template = self.get_object(request, object_id)
        if template is not None and access.may_view_revisions(request.user):
            latest = (
                AgentSession.objects.filter(
                    prompt_ref=template.ref, revision__isnull=False
                )
                .order_by("-created_at")
                .values_list("revision_id", flat=True)
                .first()
            )
            extra_context = {
                **(extra_context or {}),
                "revisions_ref": template.ref,
                "latest_revision": latest,
            }
        if template is not None and releases.may_view(request.user):
            extra_context = {**(extra_context or {}), "releases_page": True}
        return super().change_view(request, object_id, form_url, extra_context)

    def get_urls(self) -> list[Any]:
        urls = [
            path(
                "<int:pk>/run/",
                self.admin_site.admin_view(self.run_view),
                name="tooling_prompttemplate_run",
            )
        ]
        return urls + self.release_urls() + super().get_urls()

    def preview_extras(
        self, request: HttpRequest, template: PromptTemplate
    ) -> dict[str, Any]:
        """The user's daily budget: what a new run may still spend today
        (less what they spent and what their runs in flight may spend)."""
        limit = budgets.daily_limit(request.user)
        if limit is None:
            return {"daily_budget": None}
        return {
            "daily_budget": limit,
            "daily_budget_left": budgets.left_today(request.user, limit),
        }

    def run_url(self, request: HttpRequest, template: PromptTemplate) -> str | None:
        if not access.may_start(request.user):
            return None  # the button would only answer 403
        return reverse("admin:tooling_prompttemplate_run", args=[template.pk])

    def run_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        template = get_object_or_404(PromptTemplate.objects.with_catalog(), pk=pk)
        if not self.has_view_permission(request, template):
            raise PermissionDenied
        if request.method != "POST":
            preview = reverse("admin:tooling_prompttemplate_preview", args=[pk])
            return HttpResponseRedirect(preview)
        if not access.may_start(request.user):
            raise PermissionDenied
        form, parameters = self.preview_forms(request, template)
        submitted = self.previewed(form, parameters)
        if submitted is None:
            return self.render_preview(request, template, form, parameters)
        params, trust_level = submitted
        if not access.may_start_at(request.user, trust_level):
            errors = [f"You may not start sessions at trust level '{trust_level}'."]
            return self.render_preview(request, template, form, parameters, errors)
        oversized = too_large(params)  # the API's limit (a 413 there)
        if oversized is not None:
            errors = [f"The parameter {oversized}"]
            return self.render_preview(request, template, form, parameters, errors)
        slot = StartSlot.take(request.user)  # as the API counts its starts
        if slot.wait is not None:
            errors = [start_limit_message(slot.wait)]
            return self.render_preview(request, template, form, parameters, errors)
        try:
            # what was previewed: the catalog as it is now, whatever its
            # labels point at (a draft is tried here before it is released)
            session = services.start_session(
                prompt_ref=template.ref,
                params=params,
                user=request.user,
                trust_level=trust_level,
                revision=releases.DRAFT,
            )
        except ValidationError as error:
            slot.give_back()
            return self.render_preview(
                request, template, form, parameters, error.messages
            )
        except DailyBudgetExceeded as error:
            slot.give_back()
            return self.render_preview(
                request, template, form, parameters, [error.message]
            )
        messages.success(
            request, f"Session {session.pk} is {session.get_status_display().lower()}."
        )
        return HttpResponseRedirect(session.get_absolute_url())
