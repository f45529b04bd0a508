"""The approval inbox in the admin: a read-only changelist (pending first) with
"Approve selected" and "Deny selected", each asking for the reason first.

Who may use it: staff who may view approvals (``view_approvalrequest``,
``decide_any_approval`` or ``view_all_sessions``), each seeing only what the
inbox shows them (``inbox.visible_to``; anything else is a 404). Every
decision goes through ``decisions.decide``, one per approval; one that is
already decided, or that the user may not decide, is reported on its own line,
never as an error page (under four eyes, the run's author is told why; an
approval whose run was cancelled before the call ran says so).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from sessions_app import access
from sessions_app.admin_base import HiddenRowsAdmin
from sessions_app.approvals import decisions, inbox
from sessions_app.models import ApprovalRequest

VIEW_PERMISSIONS = (
    "sessions_app.view_approvalrequest",
    "sessions_app.decide_any_approval",
    access.VIEW_ALL,
)


class AdminDecisionForm(forms.Form):
    reason = forms.CharField(
        required=False,
        max_length=decisions.MAX_REASON,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        help_text="Recorded with each decision; the model reads it.",
    )

    def __init__(self, *args: Any, approve: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.approve = approve
        if not approve:
            self.fields["reason"].required = True
            self.fields[
                "reason"
            ].help_text = "Required to deny: the model reads it as the call's result."


# An action decides at most this many approvals (without a broker each one
# resumes its run inside the request); the rest are left for another round.
MAX_BATCH = 100
# Per-row lines an action reports; the rest are counted in its summary.
MAX_ROW_MESSAGES = 10


class ScopedValuesFilter(admin.SimpleListFilter):
    """Choices from the approvals the user sees, not from every row of the
    table: Django's own filter on a related field (``session__prompt_ref``)
    would list the prompts of every session, the user's or not, reading the
    whole sessions table on each page. At most ``limit`` choices."""

    field = ""
    limit = 100

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        values = (
            model_admin.get_queryset(request)
            .order_by(self.field)
            .values_list(self.field, flat=True)
            .distinct()[: self.limit]
        )
        return [(value, value) for value in values]

    def queryset(
        self, request: HttpRequest, queryset: QuerySet[ApprovalRequest]
    ) -> QuerySet[ApprovalRequest]:
        value = self.value()
        if not value:
            return queryset
        if "\x00" in value:  # PostgreSQL refuses it in a query: no such row
            return queryset.none()
        return queryset.filter(**{self.field: value})


class ToolFilter(ScopedValuesFilter):
    title = "tool"
    parameter_name = "tool"
    field = "tool_name"


class PromptFilter(ScopedValuesFilter):
    title = "prompt"
    parameter_name = "prompt"
    field = "session__prompt_ref"


@admin.register(ApprovalRequest)
class ApprovalRequestAdmin(HiddenRowsAdmin):
    list_display = [
        "requested_at",
        "tool_name",
        "prompt",
        "shown_status",
        "expires_at",
        "decided_by",
        "reason",
    ]
    list_select_related = ["session", "decided_by"]
    list_filter = ["status", "kind", ToolFilter, PromptFilter]
    search_fields = ["tool_name", "reason", "=session__id"]
    show_full_result_count = False
    actions = ["approve_selected", "deny_selected"]
    readonly_fields = [
        "id",
        "session_link",
        "inbox_link",
        "kind",
        "tool_name",
        "call_id",
        "sequence",
        "turn",
        "params",
        "raw_arguments",
        "server_label",
        "policy_name",
        "reason",
        "approvers",
        "four_eyes",
        "shown_status",
        "requested_at",
        "expires_at",
        "decided_by",
        "decided_at",
        "decision_reason",
        "text_altered",
    ]
    exclude = ["session", "event_id"]

    # -- who sees what -------------------------------------------------------

    def get_queryset(self, request: HttpRequest) -> QuerySet[ApprovalRequest]:
        return inbox.pending_first(inbox.visible_to(request.user).with_call_record())

    @admin.display(description="status", ordering="status")
    def shown_status(self, approval: ApprovalRequest) -> str:
        """The status as the inbox shows it (``inbox.shown_status``): an
        approved call that did not run, or may have, says so."""
        return inbox.shown_status(approval).label

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        user = request.user
        return any(user.has_perm(name) for name in VIEW_PERMISSIONS)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self.has_view_permission(request)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_decide_permission(self, request: HttpRequest) -> bool:
        """The actions are offered to those who may decide some approval;
        per approval, ``decisions.decide`` checks again (and says so)."""
        return bool(
            self.has_view_permission(request)
            and ApprovalRequest.objects.decidable_by(request.user).exists()
        )

    # -- columns ---------------------------------------------------------------

    @admin.display(description="Prompt", ordering="session__prompt_ref")
    def prompt(self, approval: ApprovalRequest) -> str:
        return approval.session.prompt_ref

    @admin.display(description="Session")
    def session_link(self, approval: ApprovalRequest) -> str:
        return format_html(
            '<a href="{}">{}</a>',
            approval.session.get_absolute_url(),
            approval.session.prompt_ref,
        )

    @admin.display(description="Inbox entry")
    def inbox_link(self, approval: ApprovalRequest) -> str:
        url = reverse("sessions_app:approval-detail", args=[approval.pk])
        return format_html('<a href="{}">Open (decide there or here)</a>', url)

    # -- actions ---------------------------------------------------------------

    @admin.action(description="Approve selected approvals", permissions=["decide"])
    def approve_selected(
        self, request: HttpRequest, queryset: QuerySet[ApprovalRequest]
    ) -> HttpResponse | None:
        return self._decide_selected(request, queryset, approve=True)

    @admin.action(description="Deny selected approvals", permissions=["decide"])
    def deny_selected(
        self, request: HttpRequest, queryset: QuerySet[ApprovalRequest]
    ) -> HttpResponse | None:
        return self._decide_selected(request, queryset, approve=False)

    def _decide_selected(
        self,
        request: HttpRequest,
        queryset: QuerySet[ApprovalRequest],
        *,
        approve: bool,
    ) -> HttpResponse | None:
        """First the confirmation page asking for the reason (like Django's
        delete confirmation), then one decision per approval."""
        selected = list(queryset.select_related("session")[: MAX_BATCH + 1])
        if len(selected) > MAX_BATCH:
            self.message_user(
                request,
                f"Select at most {MAX_BATCH} approvals at a time; nothing was decided.",
                messages.ERROR,
            )
            return None
        if request.POST.get("post") == "yes":
            form = AdminDecisionForm(request.POST, approve=approve)
            if form.is_valid():
                self._apply(request, selected, approve, form.cleaned_data["reason"])
                return None  # back to the changelist, with the messages
        else:
            form = AdminDecisionForm(approve=approve)
        pending = [a for a in selected if a.status == ApprovalRequest.Status.PENDING]
        context = {
            **self.admin_site.each_context(request),
            "title": "Approve the selected calls?"
            if approve
            else "Deny the selected calls?",
            "opts": self.model._meta,
            "approvals": pending,
            "closed_count": len(selected) - len(pending),
            "form": form,
            "approve": approve,
            "action": "approve_selected" if approve else "deny_selected",
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "selected": [str(approval.pk) for approval in selected],
        }
        return TemplateResponse(
            request, "sessions_app/approval_admin_decide.html", context
        )

    def _apply(
        self,
        request: HttpRequest,
        selected: list[ApprovalRequest],
        approve: bool,
        reason: str,
    ) -> None:
        outcomes: Counter[str] = Counter()
        lines: list[tuple[str, int]] = []
        for approval in selected:
            label = f"{approval.tool_name} in {approval.session.prompt_ref}"
            try:
                decisions.decide(
                    approval_id=approval.pk,
                    user=request.user,
                    approve=approve,
                    reason=reason,
                )
            except ApprovalRequest.DoesNotExist:
                outcomes["gone"] += 1
            except PermissionDenied as refused:
                outcomes["not allowed"] += 1
                why = (
                    access.OWN_RUN
                    if str(refused) == access.OWN_RUN
                    else "you may not decide this approval."
                )
                lines.append((f"{label}: {why}", messages.WARNING))
            except decisions.RunNotResumed as ended:
                outcomes["approved but not run"] += 1
                lines.append((f"{label}: {ended}", messages.WARNING))
            except decisions.ApprovalClosed as closed:
                outcomes["closed"] += 1
                # its own words: decided, expired, cancelled or a run that no
                # longer waits ("already decided (... cancelled)" read oddly)
                lines.append((f"{label}: not decided: {closed}", messages.WARNING))
            except ValidationError as error:
                outcomes["invalid"] += 1
                lines.append((f"{label}: {' '.join(error.messages)}", messages.ERROR))
            else:
                outcomes["approved" if approve else "denied"] += 1
        for text, level in lines[:MAX_ROW_MESSAGES]:
            self.message_user(request, text, level)
        if len(lines) > MAX_ROW_MESSAGES:
            self.message_user(
                request,
                f"... and {len(lines) - MAX_ROW_MESSAGES} more not decided.",
                messages.WARNING,
            )
        summary = ", ".join(
            f"{count} {outcome}" for outcome, count in sorted(outcomes.items())
        )
        self.message_user(request, f"Approvals: {summary}.", messages.INFO)
