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

    def get_formsets_with_inlines(self, request: HttpRequest, obj: Any = None) -> Any:
        """The link formsets the user may see, the last of them checking the
        whole section (Django leaves out an inline the user has no permission
        on: the hosted tools' one checked alone, and a user without it was
        never checked)."""
        found = list(super().get_formsets_with_inlines(request, obj))
        for index, (formset, inline) in enumerate(found):
            last = index == len(found) - 1
            if formset.checks_section != last:
                formset = type(formset.__name__, (formset,), {"checks_section": last})
            yield formset, inline

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        form = super().get_form(request, obj, change, **kwargs)
        if not self.get_inline_instances(request, obj):
            # no link formset to check the whole section: the form does
            form = type(form.__name__, (form,), {"checks_whole_section": True})
        return form

    def rows_deleted_with(self, objs: Any) -> list[Any]:
        objs = list(objs)
        # Only the chosen sections and the sections under them (the cascade).
        sections = assembly.reached_sections(section.pk for section in objs)
        rows: dict[int, Any] = {}
        for section in objs:
            for row in assembly.with_descendants(section, sections):
                rows[row.pk] = row
        return list(rows.values())
