"""The admin of the policies."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from tooling.forms import PolicyDefinitionForm, policy_fieldsets
from tooling.history.admin import HistoryAdminMixin, with_change_record
from tooling.models import PolicyDefinition

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
