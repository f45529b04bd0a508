"""The admin of the model capabilities (the hosted tool kinds a model takes)."""

from __future__ import annotations

from django.contrib import admin

from tooling.forms import ModelCapabilityForm
from tooling.history.admin import HistoryAdminMixin
from tooling.models import ModelCapability


@admin.register(ModelCapability)
class ModelCapabilityAdmin(HistoryAdminMixin, admin.ModelAdmin):
    form = ModelCapabilityForm
    list_display = ["model", "hosted_kinds", "updated_at"]
    search_fields = ["model"]
