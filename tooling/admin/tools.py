"""The admins of the function tools and the hosted tools."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.utils.html import format_html

from tooling.forms import (
    HostedToolDefinitionForm,
    ToolDefinitionForm,
    handler_parameters_panel,
    pretty,
)
from tooling.forms.hosted import hosted_tool_form
from tooling.handlers import registry
from tooling.history.admin import HistoryAdminMixin, with_change_record
from tooling.models import HostedToolDefinition, ToolDefinition
from tooling.runtime.hosted.spec import hosted_kinds

from .guarded_delete import GuardedDeleteMixin


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
