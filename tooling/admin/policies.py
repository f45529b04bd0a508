"""The admin of the policies."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from tooling.forms import PolicyDefinitionForm, policy_fieldsets
from tooling.history.admin import HistoryAdminMixin, with_change_record
from tooling.models import PolicyDefinition, PromptTemplate, SectionDefinition

from .guarded_delete import GuardedDeleteMixin


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

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        """A policy attached to a prompt or a section is not deleted (ADR
        0031): the page names where it is attached, to be removed there first,
        an edit of that prompt or section in its own history."""
        deleted, counts, perms_needed, protected = super().get_deleted_objects(
            objs, request
        )
        return deleted, counts, perms_needed, [*protected, *attachments(list(objs))]


def attachments(policies: list[PolicyDefinition]) -> list[str]:
    """One message per policy in ``policies`` attached to a prompt or a
    section, naming them (two queries)."""
    where: dict[int, list[str]] = {}
    prompts = PromptTemplate.policies.through.objects.filter(
        policydefinition__in=policies
    ).values_list(
        "policydefinition_id", "prompttemplate__namespace", "prompttemplate__key"
    )
    for pk, namespace, key in prompts.order_by(
        "prompttemplate__namespace", "prompttemplate__key"
    ):
        where.setdefault(pk, []).append(f"prompt '{namespace}/{key}'")
    sections = SectionDefinition.policies.through.objects.filter(
        policydefinition__in=policies
    ).values_list("policydefinition_id", "sectiondefinition__key")
    for pk, key in sections.order_by("sectiondefinition__key"):
        where.setdefault(pk, []).append(f"section '{key}'")
    return [
        f"Policy '{policy.name}' is attached to {', '.join(where[policy.pk])}: "
        "remove it there first (an edit of that prompt or section, recorded in "
        "its history), then delete it."
        for policy in policies
        if policy.pk in where
    ]
