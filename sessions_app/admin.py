"""Read-only admin for the audit trail: nothing can be added, changed or deleted."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from sessions_app.models import (
    AgentSession,
    Citation,
    PolicyDenial,
    ProviderCall,
    ToolInvocation,
)


class ReadOnlyAdmin(admin.ModelAdmin):
    show_full_result_count = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(AgentSession)
class AgentSessionAdmin(ReadOnlyAdmin):
    list_display = [
        "id",
        "prompt_ref",
        "status",
        "model",
        "provider",
        "turns",
        "created_at",
    ]
    list_filter = ["status", "provider", "model"]
    search_fields = ["prompt_ref", "id"]
    date_hierarchy = "created_at"


@admin.register(ProviderCall)
class ProviderCallAdmin(ReadOnlyAdmin):
    list_display = [
        "session",
        "turn",
        "status",
        "input_tokens",
        "output_tokens",
        "latency_ms",
    ]
    list_select_related = ["session"]
    list_filter = ["status"]
    date_hierarchy = "created_at"


@admin.register(ToolInvocation)
class ToolInvocationAdmin(ReadOnlyAdmin):
    list_display = [
        "session",
        "sequence",
        "name",
        "kind",
        "native",
        "success",
        "created_at",
    ]
    list_select_related = ["session"]
    list_filter = ["native", "success", "kind"]
    search_fields = ["name", "call_id"]
    date_hierarchy = "created_at"


@admin.register(PolicyDenial)
class PolicyDenialAdmin(ReadOnlyAdmin):
    list_display = ["session", "policy_name", "tool_name", "reason", "created_at"]
    list_select_related = ["session"]
    list_filter = ["policy_name"]
    date_hierarchy = "created_at"


@admin.register(Citation)
class CitationAdmin(ReadOnlyAdmin):
    list_display = ["session", "kind", "domain", "title", "created_at"]
    list_select_related = ["session"]
    list_filter = ["kind"]
    search_fields = ["url", "title", "domain"]
    date_hierarchy = "created_at"
