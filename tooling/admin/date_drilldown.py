"""``DateDrilldownGuard``: an admin change list's date drill-down
(``date_hierarchy``) refuses a year, month or day that is not a short run of
ASCII digits as the admin refuses any bad lookup (back to the list with
``?e=1``). Django's change list turns the values into a date and catches
``ValueError``, not the ``OverflowError`` of a value too large for a C long
(``?created_at__year=99999999999999999999`` was a 500), and ``int()`` also
takes "٢٠٢٦" or "2_026"."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect

# year, month, day: at most 4 digits each (a year past 9999 is no date)
PARTS = ("year", "month", "day")
MAX_DIGITS = 4


def _plain_number(value: str) -> bool:
    return value.isascii() and value.isdecimal() and len(value) <= MAX_DIGITS


class DateDrilldownGuard(admin.ModelAdmin):
    """A change list whose ``date_hierarchy`` values are refused politely."""

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        field = self.date_hierarchy
        if field:
            for part in PARTS:
                values = request.GET.getlist(f"{field}__{part}")
                if any(not _plain_number(value) for value in values):
                    # the admin's own answer to a bad lookup parameter
                    return HttpResponseRedirect(f"{request.path}?e=1")
        return super().changelist_view(request, extra_context)
