"""The catalog admin, with a preview page per prompt template.

Running a previewed prompt is the audit app's: ``sessions_app.admin`` extends
the prompt template admin with a run view (the catalog never imports the
audit app); ``run_url`` is the hook the preview page uses for its Run button.
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

import tooling.admin_pricing  # noqa: F401  (registers the price list's admin)
from tooling import assembly, services
from tooling.assembly.edits import describe
from tooling.forms import (
    HostedToolDefinitionForm,
    ModelCapabilityForm,
    PolicyDefinitionForm,
    PreviewForm,
    PromptSectionFormSet,
    PromptTemplateForm,
    SectionDefinitionForm,
    SectionHostedToolFormSet,
    SectionToolFormSet,
    ToolDefinitionForm,
    handler_parameters_panel,
    model_warnings,
    policy_fieldsets,
    pretty,
)
from tooling.forms.hosted import hosted_tool_form
from tooling.forms.preview import ParameterForm, boxed_names
from tooling.governance import governance_of
from tooling.handlers import registry
from tooling.history.admin import HistoryAdminMixin, with_change_record
from tooling.models import (
    HostedToolDefinition,
    ModelCapability,
    PolicyDefinition,
    PromptSection,
    PromptTemplate,
    SectionDefinition,
    SectionHostedTool,
    SectionTool,
    ToolDefinition,
    TrustLevel,
)
from tooling.runtime import PromptError
from tooling.runtime.hosted.spec import hosted_kinds


class GuardedDeleteMixin:
    """Deleting rows that saved prompts depend on is refused, naming each
    prompt: the admin lists them as protected, as it does for protected
    foreign keys, and deletes nothing."""

    def rows_deleted_with(self, objs: Any) -> list[Any]:
        return list(objs)

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        deleted, counts, perms_needed, protected = super().get_deleted_objects(  # type: ignore[misc]
            objs, request
        )
        edit = assembly.CatalogEdit.deleting(self.rows_deleted_with(objs))
        problems = assembly.prompts_broken_by(edit)
        if problems:
            protected = [*protected, *describe(problems, "Deleting it")]
        return deleted, counts, perms_needed, protected


@admin.register(ToolDefinition)
class ToolDefinitionAdmin(GuardedDeleteMixin, HistoryAdminMixin, admin.ModelAdmin):
    form = ToolDefinitionForm
    list_display = [
        "name",
        "handler_key",
        "accepts_overrides",
        "read_only",
        "enabled",
        "updated_at",
    ]
    list_filter = ["enabled"]
    search_fields = ["name", "handler_key", "description"]
    readonly_fields = ["handler_parameters"]
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "name",
                    "handler_key",
                    "handler_parameters",
                    "description",
                    "param_descriptions",
                    "examples",
                    "enabled",
                ]
            },
        )
    ]

    class Media:
        js = ["tooling/handler_params.js", "tooling/rows_editor.js"]
        css = {"all": ["tooling/catalog_forms.css"]}

    @admin.display(description="Parameters")
    def handler_parameters(self, obj: ToolDefinition | None) -> str:
        """What the chosen handler takes (the panel follows the handler
        select): the names to describe in the parameter descriptions and to
        give in the examples' inputs."""
        return handler_parameters_panel(obj.handler_key if obj else "")

    @admin.display(boolean=True)
    def accepts_overrides(self, obj: ToolDefinition) -> bool:
        return (
            obj.handler_key in registry
            and registry.get(obj.handler_key).accepts_overrides
        )

    @admin.display(boolean=True, description="read-only")
    def read_only(self, obj: ToolDefinition) -> bool:
        """Whether its handler declares that it changes nothing outside the
        run (``Tool.read_only``): information for whoever decides which tools
        need an approval policy."""
        return obj.handler_key in registry and registry.get(obj.handler_key).read_only


@admin.register(HostedToolDefinition)
class HostedToolDefinitionAdmin(
    GuardedDeleteMixin, HistoryAdminMixin, admin.ModelAdmin
):
    """One fieldset per registered kind (``tooling.runtime.hosted.spec``): its
    options, shown by ``hosted_kind.js`` only while that kind is chosen."""

    form = HostedToolDefinitionForm
    list_display = ["name", "kind", "min_trust_level", "enabled", "updated_at"]
    list_filter = ["kind", "min_trust_level", "enabled"]
    search_fields = ["name", "description"]
    readonly_fields = ["stored_config"]

    class Media:
        js = ["tooling/hosted_kind.js"]

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        kwargs.setdefault("form", hosted_tool_form())
        return super().get_form(request, obj, change, **kwargs)

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        form = hosted_tool_form()
        kinds = [
            (
                spec.label,
                {
                    "classes": ["hosted-kind", f"kind-{spec.kind}"],
                    "fields": list(form.kind_fields[spec.kind]),
                    "description": spec.description,
                },
            )
            for spec in hosted_kinds()
        ]
        return with_change_record(
            [
                (
                    None,
                    {
                        "fields": [
                            "name",
                            "kind",
                            "description",
                            "min_trust_level",
                            "enabled",
                        ]
                    },
                ),
                *kinds,
                (
                    "Stored configuration",
                    {
                        "fields": ["stored_config"],
                        "classes": ["collapse"],
                        "description": "The JSON the typed fields above are saved as "
                        "(read-only; it never holds a secret).",
                    },
                ),
            ]
        )

    @admin.display(description="Config")
    def stored_config(self, obj: HostedToolDefinition) -> str:
        if obj.pk is None:
            return "-"
        return format_html("<pre>{}</pre>", pretty(obj.config))


@admin.register(PolicyDefinition)
class PolicyDefinitionAdmin(GuardedDeleteMixin, HistoryAdminMixin, admin.ModelAdmin):
    """One fieldset per kind (its config as typed fields, shown by
    ``policy_kind.js`` only while that kind is chosen), and the config as
    JSON for what the fields cannot show (``tooling/forms/policies.py``)."""

    form = PolicyDefinitionForm
    list_display = ["name", "kind", "updated_at"]
    list_filter = ["kind"]
    search_fields = ["name", "description"]

    class Media:
        js = ["tooling/policy_kind.js", "tooling/rows_editor.js"]
        css = {"all": ["tooling/catalog_forms.css"]}

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        return with_change_record(policy_fieldsets())


class SectionToolInline(admin.TabularInline):
    model = SectionTool
    formset = SectionToolFormSet
    extra = 0
    autocomplete_fields = ["tool"]


class SectionHostedToolInline(admin.TabularInline):
    model = SectionHostedTool
    formset = SectionHostedToolFormSet  # the last: it checks the whole section
    extra = 0
    autocomplete_fields = ["hosted_tool"]


@admin.register(SectionDefinition)
class SectionDefinitionAdmin(GuardedDeleteMixin, HistoryAdminMixin, admin.ModelAdmin):
    form = SectionDefinitionForm
    list_display = ["key", "title", "parent", "position", "enabled"]
    list_filter = ["enabled"]
    list_select_related = ["parent"]
    search_fields = ["key", "title", "template"]
    filter_horizontal = ["policies"]
    inlines = [SectionToolInline, SectionHostedToolInline]

    def save_form(self, request: HttpRequest, form: Any, change: bool) -> Any:
        instance = super().save_form(request, form, change)
        # The link formsets check the whole section, policies included.
        instance._pending_policies = list(form.cleaned_data.get("policies") or [])
        return instance

    def rows_deleted_with(self, objs: Any) -> list[Any]:
        objs = list(objs)
        # Only the chosen sections and the sections under them (the cascade).
        sections = assembly.reached_sections(section.pk for section in objs)
        rows: dict[int, Any] = {}
        for section in objs:
            for row in assembly.with_descendants(section, sections):
                rows[row.pk] = row
        return list(rows.values())


class PromptSectionInline(admin.TabularInline):
    model = PromptSection
    formset = PromptSectionFormSet
    extra = 0
    min_num = 1
    autocomplete_fields = ["section"]


@admin.register(PromptTemplate)
class PromptTemplateAdmin(HistoryAdminMixin, admin.ModelAdmin):
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


@admin.register(ModelCapability)
class ModelCapabilityAdmin(HistoryAdminMixin, admin.ModelAdmin):
    form = ModelCapabilityForm
    list_display = ["model", "hosted_kinds", "updated_at"]
    search_fields = ["model"]
