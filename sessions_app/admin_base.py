"""What every audit admin page shares: rows a user may not see answer 404
(no "perhaps it was deleted" redirect), and pages show bidi controls
neutralised; ``ReadOnlyAdmin`` for rows nothing adds, changes or deletes here."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse

from tooling.bidi import neutralised


class HiddenRowsAdmin(admin.ModelAdmin):
    def _get_obj_does_not_exist_redirect(
        self, request: HttpRequest, opts: Any, object_id: str
    ) -> HttpResponse:
        raise Http404  # hidden and missing rows look the same: no redirect hint

    def changelist_view(
        self, request: HttpRequest, extra_context: Any = None
    ) -> HttpResponse:
        return neutralised(super().changelist_view(request, extra_context))

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: Any = None,
    ) -> HttpResponse:
        response = super().change_view(request, object_id, form_url, extra_context)
        context = getattr(response, "context_data", None) or {}
        if context.get("has_change_permission"):
            # an editable form: a mark in its values would be saved back
            return response
        return neutralised(response)


class ReadOnlyAdmin(HiddenRowsAdmin):
    show_full_result_count = False
    # The audit rows of sessions the user may not see do not exist for them.
    scoped_to_sessions = True

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset = super().get_queryset(request)
        if self.scoped_to_sessions:
            return queryset.visible_to(request.user)  # type: ignore[attr-defined]
        return queryset

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
