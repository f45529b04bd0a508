"""The admin's release page of a prompt (``<prompt>/releases/``), and the
read-only release and label lists.

Who may see the page: whoever may view the prompt template and holds
``view_release``. Requesting needs ``add_release``; approving and rejecting
``approve_release`` and not being the requester; withdrawing, being it
(``tooling.releases``). Every decision is a POST with the CSRF token.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.formats import date_format

from sessions_app import access
from sessions_app.admin_base import ReadOnlyAdmin
from tooling import releases
from tooling.bidi import neutralised
from tooling.forms.validation import errors_in_words
from tooling.models import (
    LABEL_RULE,
    CatalogRevision,
    PromptLabel,
    PromptTemplate,
    Release,
)

HISTORY_SHOWN = 50
REVISIONS_OFFERED = 50


class ReleaseForm(forms.Form):
    label = forms.CharField(
        max_length=32,
        initial="production",
        validators=[LABEL_RULE],
        help_text="The label to move (production, staging ...).",
    )
    revision = forms.ChoiceField(
        initial=releases.DRAFT,
        help_text="The draft (the catalog as it is now), or one of the prompt's "
        "revisions (a rollback picks an earlier one).",
    )
    reason = forms.CharField(
        required=False,
        max_length=1000,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Why: shown to the approver and kept with the release.",
    )

    def __init__(self, *args: Any, template: PromptTemplate, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        stored = CatalogRevision.objects.filter(prompt_ref=template.ref).values_list(
            "hash", "created_at"
        )[:REVISIONS_OFFERED]
        self.fields["revision"].choices = [  # type: ignore[attr-defined]
            (releases.DRAFT, "The draft: the catalog as it is now"),
            *(
                (
                    digest,
                    f"{digest[:12]}, first run {date_format(at, 'DATETIME_FORMAT')}",
                )
                for digest, at in stored
            ),
        ]


class DecisionForm(forms.Form):
    release = forms.IntegerField(widget=forms.HiddenInput)
    decision = forms.ChoiceField(
        choices=[("approve", "Approve"), ("reject", "Reject"), ("withdraw", "Withdraw")]
    )
    note = forms.CharField(required=False, max_length=1000, label="Note")


class ReleasePageMixin:
    """Adds ``<pk>/releases/`` to the prompt template admin."""

    admin_site: admin.AdminSite

    def release_urls(self) -> list[Any]:
        return [
            path(
                "<int:pk>/releases/",
                self.admin_site.admin_view(self.releases_view),
                name="tooling_prompttemplate_releases",
            )
        ]

    def releases_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        template = get_object_or_404(PromptTemplate, pk=pk)
        if not (
            self.has_view_permission(request, template)  # type: ignore[attr-defined]
            and releases.may_view(request.user)
        ):
            raise PermissionDenied
        form = ReleaseForm(template=template)
        if request.method == "POST":
            if "decision" in request.POST:
                return self._decide(request, template)
            if not releases.may_request(request.user):  # (the page shows no form)
                raise PermissionDenied
            form = ReleaseForm(request.POST, template=template)
            if form.is_valid() and self._request(request, template, form):
                return HttpResponseRedirect(request.path)
        return self._render(request, template, form)

    def _request(
        self, request: HttpRequest, template: PromptTemplate, form: ReleaseForm
    ) -> bool:
        data = form.cleaned_data
        try:
            revision = releases.revision_for(
                template, data["revision"].strip(), user=request.user
            )
            release = releases.request_release(
                template=template,
                label=data["label"],
                revision=revision,
                user=request.user,
                reason=data["reason"],
            )
        except ValidationError as error:
            for message in error.messages:
                form.add_error(None, message)
            return False
        except PermissionDenied as error:
            form.add_error(None, str(error))
            return False
        if release.is_pending:
            messages.info(
                request,
                f"Release of {release.label} to {revision.hash[:12]} requested: a "
                "second person who may approve releases must approve it.",
            )
        else:
            messages.success(
                request, f"{release.label} now points at {revision.hash[:12]}."
            )
        return True

    def _decide(self, request: HttpRequest, template: PromptTemplate) -> HttpResponse:
        form = DecisionForm(request.POST)
        if not form.is_valid():
            # the field and why (a note over 1,000 characters, a NUL in it)
            messages.error(request, f"Not decided. {errors_in_words(form)}")
            return HttpResponseRedirect(request.path)
        release = get_object_or_404(
            Release, pk=form.cleaned_data["release"], prompt=template
        )
        decide = {
            "approve": releases.approve,
            "reject": releases.reject,
            "withdraw": releases.withdraw,
        }[form.cleaned_data["decision"]]
        try:
            release = decide(release, user=request.user, note=form.cleaned_data["note"])
        except ValidationError as error:
            messages.error(request, " ".join(error.messages))
        except PermissionDenied as error:
            messages.error(request, str(error))
        else:
            messages.success(
                request,
                f"Release of {release.label}: {release.get_status_display().lower()}.",
            )
        return HttpResponseRedirect(request.path)

    def _render(
        self, request: HttpRequest, template: PromptTemplate, form: ReleaseForm
    ) -> HttpResponse:
        history = list(
            Release.objects.filter(prompt_ref=template.ref).select_related(
                "to_revision", "from_revision"
            )[:HISTORY_SHOWN]
        )
        for release in history:
            release.may_approve = release.is_pending and releases.may_approve(  # type: ignore[attr-defined]
                request.user, release
            )
            release.may_withdraw = (  # type: ignore[attr-defined]
                release.is_pending and release.requested_by_id == request.user.pk
            )
        context = {
            **self.admin_site.each_context(request),
            "title": f"Releases of {template.ref}",
            "opts": PromptTemplate._meta,
            "original": template,
            "labels": PromptLabel.objects.filter(prompt=template).select_related(
                "revision"
            ),
            "protected": releases.protected_labels(),
            "default_label": settings.WINK_DEFAULT_LABEL,
            "history": history,
            "form": form,
            "may_request": releases.may_request(request.user),
            "may_view_revisions": access.may_view_revisions(request.user),
            "draft_url": reverse(
                "admin:tooling_prompttemplate_preview", args=[template.pk]
            ),
        }
        # Reasons and notes may hold bidi controls: shown as marks.
        return neutralised(
            TemplateResponse(
                request, "admin/sessions_app/prompttemplate_releases.html", context
            )
        )


class ReleaseAdmin(ReadOnlyAdmin):
    """Every release, read-only; decisions are on the prompt's release page."""

    scoped_to_sessions = False
    list_display = [
        "requested_at",
        "prompt_ref",
        "label",
        "status",
        "rollback",
        "requested_by_name",
        "decided_by_name",
    ]
    list_filter = ["status", "label", "rollback"]
    search_fields = ["prompt_ref", "requested_by_name", "decided_by_name", "reason"]
    date_hierarchy = "requested_at"
    readonly_fields = [f.name for f in Release._meta.fields]


class PromptLabelAdmin(ReadOnlyAdmin):
    """Where each label points, read-only: labels move by releases."""

    scoped_to_sessions = False
    list_display = ["prompt", "name", "revision", "moved_at"]
    list_select_related = ["prompt", "revision"]
    list_filter = ["name"]
    readonly_fields = ["prompt", "name", "revision", "moved_at"]
