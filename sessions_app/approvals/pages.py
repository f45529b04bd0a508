"""The approval inbox pages: the list, and one approval with its decision form.

Who may see them (``inbox.py``): logged-in users, each only the approvals they
may decide or whose session they may see; anything else is a 404. Only a user
who may decide an approval gets the form; a decision from anyone else is a
403. Deciding goes through ``decisions.decide`` (one winner: a second decision
is reported as "already decided", not as an error; an approval whose run was
cancelled before the call ran says so). Under four eyes the run's author sees
the request read-only, with a note saying why. Untrusted text (the call's
arguments, reasons) is escaped, and bidi controls are shown neutralised.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.mixins import LoginRequiredMixin
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views import View
from django.views.generic import ListView

from sessions_app import access
from sessions_app.approvals import decisions, inbox
from sessions_app.approvals.filters import ApprovalRequestFilterSet
from sessions_app.audit.bidi import NeutraliseBidiMixin
from sessions_app.audit.filtered import FilteredListMixin
from sessions_app.models import AgentSession, ApprovalRequest
from tooling.runtime.number_text import whole_number


class DecisionForm(forms.Form):
    decision = forms.ChoiceField(
        choices=[("approve", "Approve"), ("deny", "Deny")],
        widget=forms.HiddenInput,
        # the buttons send it: only a forged post lacks it (the page shows
        # its message, as a hidden field shows none of its own)
        error_messages={
            "required": "Choose Approve or Deny.",
            "invalid_choice": "Choose Approve or Deny.",
        },
    )
    confirm = forms.BooleanField(
        label="I have read the call and its arguments",
        error_messages={
            "required": 'Tick "I have read the call and its arguments" first.'
        },
    )
    reason = forms.CharField(
        required=False,
        max_length=decisions.MAX_REASON,
        strip=True,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        help_text="Required to deny; the model reads it.",
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        # (a reason refused as written has its own error, not this one)
        if (
            data.get("decision") == "deny"
            and not data.get("reason")
            and "reason" not in self.errors
        ):
            self.add_error("reason", decisions.DENY_WITHOUT_REASON)
        return data


def approval_url(approval_id: Any) -> str:
    return reverse("sessions_app:approval-detail", args=[approval_id])


def described(approval: ApprovalRequest) -> ApprovalRequest:
    """``approval`` with what the templates show of it beside its fields
    (``inbox.with_context`` read the rest): its status as a person reads it,
    the step before it, its call and its run's parameters on one line each.

    Whoever sees a request sees this context: its run's author may see the
    run, and an approver decides the call knowing what the run was asked
    and did just before, even without the right to open the run's whole
    record (docs/approvals.md, "Who sees what")."""
    approval.shown = inbox.shown_status(approval)  # type: ignore[attr-defined]
    approval.before = inbox.step_before(approval)  # type: ignore[attr-defined]
    call = (
        inbox.compact(approval.params)
        if approval.params is not None
        else inbox.compact(approval.raw_arguments)
    )
    approval.call_line = call  # type: ignore[attr-defined]
    approval.run_params = inbox.compact(approval.session.params)  # type: ignore[attr-defined]
    return approval


class ApprovalListView(
    LoginRequiredMixin, NeutraliseBidiMixin, FilteredListMixin, ListView
):
    """The inbox: pending approvals first (soonest deadline first), then the
    decided ones, newest first; 50 a page, read from the index of that order
    (``approval_inbox_order``) without counting every request: a page is its
    50 rows and one more, which says whether a next page exists."""

    template_name = "sessions_app/approval_list.html"
    context_object_name = "approvals"
    page_size = 50
    # ?page= beyond this is refused (an offset read that far is the cost a
    # page must not have; filter instead)
    max_page = 200
    filterset_class = ApprovalRequestFilterSet

    def paginate_queryset(
        self, queryset: Any, page_size: int
    ) -> tuple[Any, Any, list[ApprovalRequest], bool]:
        # ASCII digits ("²" passed isdigit() and failed int(): a 500)
        number = whole_number(self.request.GET.get("page") or "1")
        if number is None or not 1 <= number <= self.max_page:
            raise Http404(f"Pages run from 1 to {self.max_page}; filter to go further.")
        start = (number - 1) * page_size
        rows = list(queryset[start : start + page_size + 1])
        self.page_number, self.has_next = number, len(rows) > page_size
        return None, None, rows[:page_size], False

    def get_queryset(self) -> QuerySet[ApprovalRequest]:
        queryset = inbox.listed(inbox.with_context(inbox.visible_to(self.request.user)))
        return inbox.pending_first(self.filtered(queryset))

    def get_paginate_by(self, queryset: Any) -> int:
        return self.page_size

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        page = list(context["approvals"])
        inbox.attach_call_records(page)
        rows = [described(approval) for approval in page]
        context.update(approvals=rows, object_list=rows)
        query = self.request.GET.copy()
        query.pop("page", None)
        context.update(
            filter=self.filterset,
            query_string=query.urlencode(),
            filtered=any(
                value not in (None, "", [])
                for value in getattr(self.filterset.form, "cleaned_data", {}).values()
            ),
            page_number=self.page_number,
            previous_page=self.page_number - 1 if self.page_number > 1 else None,
            next_page=self.page_number + 1 if self.has_next else None,
        )
        return context


class ApprovalDetailView(LoginRequiredMixin, NeutraliseBidiMixin, View):
    """``GET``: one approval; ``POST``: approve or deny it (POST, redirect,
    GET)."""

    def _approval(self, request: HttpRequest, pk: Any) -> ApprovalRequest:
        visible = inbox.with_context(inbox.visible_to(request.user).with_call_record())
        approval = inbox.with_run_visible(visible, request.user).filter(pk=pk).first()
        if approval is None:
            raise Http404("No such approval.")
        return described(approval)

    def _render(
        self,
        request: HttpRequest,
        approval: ApprovalRequest,
        form: DecisionForm,
        *,
        status: int = 200,
    ) -> HttpResponse:
        may_decide = access.may_decide(request.user, approval)
        sees_session = approval.run_visible  # type: ignore[attr-defined]
        return render(
            request,
            "sessions_app/approval_detail.html",
            {
                "approval": approval,
                "form": form,
                "may_decide": may_decide,
                "own_run": access.is_own_run(request.user, approval),
                "own_run_note": access.OWN_RUN,
                "is_pending": approval.shown.value  # type: ignore[attr-defined]
                == ApprovalRequest.Status.PENDING,
                "sees_session": sees_session,
            },
            status=status,
        )

    def get(self, request: HttpRequest, pk: Any) -> HttpResponse:
        return self._render(request, self._approval(request, pk), DecisionForm())

    def post(self, request: HttpRequest, pk: Any) -> HttpResponse:
        approval = self._approval(request, pk)
        if access.is_own_run(request.user, approval):
            raise PermissionDenied(access.OWN_RUN)
        if not access.may_decide(request.user, approval):
            raise PermissionDenied("You may not decide this approval.")
        form = DecisionForm(request.POST)
        if not form.is_valid():
            return self._render(request, approval, form, status=400)
        approve = form.cleaned_data["decision"] == "approve"
        try:
            decisions.decide(
                approval_id=approval.pk,
                user=request.user,
                approve=approve,
                reason=form.cleaned_data["reason"],
            )
        except ApprovalRequest.DoesNotExist:
            raise Http404("No such approval.") from None
        except decisions.RunNotResumed as ended:
            messages.warning(request, str(ended))
            return HttpResponseRedirect(approval_url(approval.pk))
        except decisions.ApprovalClosed as closed:
            messages.info(request, str(closed))
            return HttpResponseRedirect(approval_url(approval.pk))
        except ValidationError as error:
            for text in error.messages:
                form.add_error("reason", text)
            return self._render(request, approval, form, status=400)
        verb = "Approved" if approve else "Denied"
        status = AgentSession.objects.values_list("status", flat=True).get(
            pk=approval.session_id
        )
        messages.success(
            request,
            f"{verb}. The run goes on (its session is now "
            f"{AgentSession.Status(status).label.lower()}).",
        )
        return HttpResponseRedirect(approval_url(approval.pk))
