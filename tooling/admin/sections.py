"""The admin of the sections, with their function and hosted tools inline."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from tooling import assembly
from tooling.forms import (
    SectionDefinitionForm,
    SectionHostedToolFormSet,
    SectionToolFormSet,
)
from tooling.history.admin import HistoryAdminMixin
from tooling.models import SectionDefinition, SectionHostedTool, SectionTool

from .autocomplete import SafeAutocomplete
from .guarded_delete import GuardedDeleteMixin


class SectionToolInline(SafeAutocomplete, admin.TabularInline):
    model = SectionTool
    formset = SectionToolFormSet
    extra = 0
    autocomplete_fields = ["tool"]


class SectionHostedToolInline(SafeAutocomplete, admin.TabularInline):
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
