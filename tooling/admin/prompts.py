"""The admin of the prompt templates, with their sections inline and a
preview page per template.

Running a previewed prompt is the audit app's: ``sessions_app.admin`` extends
``PromptTemplateAdmin`` with a run view (the catalog never imports the audit
app); ``run_url`` is the hook the preview page uses for its Run button.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from tooling import assembly, services
from tooling.forms import (
    PreviewForm,
    PromptSectionFormSet,
    PromptTemplateForm,
    model_warnings,
    pretty,
)
from tooling.forms.fields import PLAIN_AMOUNTS
from tooling.forms.preview import ParameterForm, boxed_names
from tooling.governance import governance_of
from tooling.history.admin import HistoryAdminMixin
from tooling.models import PromptLabel, PromptSection, PromptTemplate, TrustLevel
from tooling.param_size import too_large
from tooling.runtime import PromptError

from .autocomplete import SafeAutocomplete


class PromptSectionInline(SafeAutocomplete, admin.TabularInline):
    model = PromptSection
    formset = PromptSectionFormSet
    extra = 0
    min_num = 1
    autocomplete_fields = ["section"]


@admin.register(PromptTemplate)
class PromptTemplateAdmin(HistoryAdminMixin, admin.ModelAdmin):
    formfield_overrides = PLAIN_AMOUNTS  # the per-session budget
    form = PromptTemplateForm
    list_display = [
        "ref_display",
        "name",
        "model",
        "enabled",
        "preview_link",
        "updated_at",
    ]
    list_filter = ["enabled", "model", "namespace"]
    search_fields = ["namespace", "key", "name"]
    filter_horizontal = ["policies"]
    inlines = [PromptSectionInline]
    fieldsets = [
        (
            None,
            {"fields": ["namespace", "key", "name", "description", "model", "enabled"]},
        ),
        ("Tools and output", {"fields": ["policies", "output_schema", "tool_choice"]}),
        (
            "Limits",
            {
                "description": "What one run may use (docs/quotas.md, "
                "docs/costs.md). Calls per function tool: a call limit policy.",
                "fields": [
                    "deadline_seconds",
                    "max_turns",
                    "max_total_tokens",
                    "max_cost_per_session",
                    "hosted_tool_limits",
                ],
            },
        ),
    ]

    @admin.display(description="Prompt", ordering="namespace")
    def ref_display(self, obj: PromptTemplate) -> str:
        return obj.ref

    @admin.display(description="Preview")
    def preview_link(self, obj: PromptTemplate) -> str:
        url = reverse("admin:tooling_prompttemplate_preview", args=[obj.pk])
        return format_html('<a href="{}">Preview / run</a>', url)

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        """A released prompt is not deleted: its labels are the record of
        what ran. Django would say the account may not delete
        prompt labels (their admin is read-only), blaming permissions, for
        a superuser too; the page names the labels and says to disable it."""
        deleted, counts, perms_needed, protected = super().get_deleted_objects(
            objs, request
        )
        labels: dict[str, list[str]] = {}
        for label in PromptLabel.objects.filter(prompt__in=list(objs)).select_related(
            "prompt"
        ):
            labels.setdefault(label.prompt.ref, []).append(label.name)
        if labels:
            perms_needed = set(perms_needed) - {str(PromptLabel._meta.verbose_name)}
            protected = [
                *protected,
                *(
                    f"Prompt '{ref}' has been released (label"
                    f"{'s' if len(names) > 1 else ''} {', '.join(names)}): its "
                    "labels record what ran. Leave it disabled instead."
                    for ref, names in labels.items()
                ),
            ]
        return deleted, counts, perms_needed, protected

    def save_form(self, request: HttpRequest, form: Any, change: bool) -> Any:
        instance = super().save_form(request, form, change)
        # The inline formset validates the whole prompt, policies included.
        instance._pending_policies = list(form.cleaned_data.get("policies") or [])
        return instance

    def save_related(
        self, request: HttpRequest, form: Any, formsets: Any, change: bool
    ) -> None:
        super().save_related(request, form, formsets, change)
        prompt = form.instance
        for warning in model_warnings(
            prompt.model, getattr(prompt, "_hosted_kinds", ())
        ):
            messages.warning(request, warning)

    def get_urls(self) -> list[Any]:
        urls = [
            path(
                "<int:pk>/preview/",
                self.admin_site.admin_view(self.preview_view),
                name="tooling_prompttemplate_preview",
            )
        ]
        return urls + super().get_urls()

    def preview_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        """A safe page: renders ``template`` for the posted sample parameters
        and shows the exact first request; never calls the provider."""
        template = get_object_or_404(PromptTemplate.objects.with_catalog(), pk=pk)
        if not self.has_view_permission(request, template):
            raise PermissionDenied
        return self.render_preview(
            request, template, *self.preview_forms(request, template)
        )

    def preview_forms(
        self, request: HttpRequest, template: PromptTemplate
    ) -> tuple[PreviewForm, ParameterForm | None]:
        """The page's forms: trust level and parameters as JSON, and a typed
        field per parameter the prompt declares (``None``: it declares none,
        or its catalog entry cannot be built: the preview says why)."""
        data = request.POST or None
        form = PreviewForm(data, initial={"params": {}})
        try:
            specs = assembly.prompt_parameters(assembly.freeze_template(template))
        except PromptError:
            specs = []
        if not specs:
            return form, None
        return form, ParameterForm(specs, data, boxed=boxed_names(data))

    @staticmethod
    def previewed(
        form: PreviewForm, parameters: ParameterForm | None
    ) -> tuple[dict[str, Any], str] | None:
        """The parameters and trust level of a valid submission, or ``None``
        while a form has errors: the typed fields as shown, then the JSON
        box, then the typed fields changed (``forms/preview.py``)."""
        if not form.is_valid() or (
            parameters is not None and not parameters.is_valid()
        ):
            return None
        box = form.cleaned_data["params"]
        if parameters is None:
            return dict(box), form.cleaned_data["trust_level"]
        shown, changed = parameters.values()
        return {**shown, **box, **changed}, form.cleaned_data["trust_level"]

    def run_url(self, request: HttpRequest, template: PromptTemplate) -> str | None:
        """Where the preview page posts to run a session (``None``: no button)."""
        return None

    def preview_extras(
        self, request: HttpRequest, template: PromptTemplate
    ) -> dict[str, Any]:
        """More of what governs a run, for the preview page (the audit app's
        admin adds the user's daily budget)."""
        return {}

    def render_preview(
        self,
        request: HttpRequest,
        template: PromptTemplate,
        form: PreviewForm,
        parameters: ParameterForm | None = None,
        errors: list[str] | None = None,
    ) -> HttpResponse:
        errors = list(errors or [])
        preview = None
        submitted: tuple[dict[str, Any], str] | None = ({}, TrustLevel.STANDARD)
        if form.is_bound:
            submitted = self.previewed(form, parameters)
        if submitted is not None:
            params, trust_level = submitted
            oversized = too_large(params)  # what Run and the API refuse
            if oversized is not None:
                errors = [*errors, f"The parameter {oversized}"]
            else:
                try:
                    preview = services.preview_prompt(
                        template=template, params=params, trust_level=trust_level
                    )
                except ValidationError as error:
                    errors = [*errors, *error.messages]
        errors = list(dict.fromkeys(errors))  # a refused run repeats the preview's
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "original": template,
            "title": f"Preview {template.ref}",
            "form": form,
            "parameters": parameters,
            "errors": errors,
            "preview": preview,
            "run_url": self.run_url(request, template),
            "request_json": pretty(preview.safe_request) if preview else "",
            "governance": (
                governance_of(
                    preview.revision,
                    rendered=preview.rendered,
                    max_cost_per_session=template.max_cost_per_session,
                )
                if preview
                else None
            ),
            "labels": list(template.labels.all()),
            **self.preview_extras(request, template),
        }
        return TemplateResponse(
            request, "admin/tooling/prompttemplate/preview.html", context
        )
