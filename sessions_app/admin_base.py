"""What every audit admin page shares: rows a user may not see answer 404
(no "perhaps it was deleted" redirect), and pages show bidi controls
neutralised; ``ReadOnlyAdmin`` for rows nothing adds, changes or deletes here."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse

from tooling.admin.date_drilldown import DateDrilldownGuard
from tooling.bidi import NeutralisedAdminPages


class HiddenRowsAdmin(NeutralisedAdminPages, DateDrilldownGuard, admin.ModelAdmin):
    def _get_obj_does_not_exist_redirect(
        self, request: HttpRequest, opts: Any, object_id: str
    ) -> HttpResponse:
        raise Http404  # hidden and missing rows look the same: no redirect hint


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
