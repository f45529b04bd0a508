"""The cost page and its CSV export (``sessions_app.costs.reports`` computes them).

Who may see them: logged-in users (anonymous users go to the login page); the
CSV also takes the API's token (``Authorization: Token <key>``).
Each sees the spend of the sessions ``access.py`` lets them see: their own,
or every session with ``view_all_sessions``; so only the latter see other
users in the "by user" breakdown.

Input is a query string a person can type: a bad ``from``/``to`` shows a
message on the page (and the default range) or, for the CSV, a 400 with the
message; never a 500.
"""

from __future__ import annotations

import csv
import datetime
from typing import Any, Final, cast

from django.contrib.auth.mixins import LoginRequiredMixin
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode
from django.views import View
from django.views.generic import TemplateView
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request
from rest_framework.settings import api_settings

from sessions_app import access
from sessions_app.audit.bidi import NeutraliseBidiMixin
from sessions_app.costs import ranges, reports
from sessions_app.costs.spend import GROUPS, ONE_DAY, Spend, next_month
from tooling.spreadsheet import csv_cell


def requested_range(request: HttpRequest) -> ranges.DateRange:
    """``?from=&to=`` as a range; raises ``ranges.InvalidRange``."""
    return ranges.date_range(
        start=request.GET.get("from") or None, end=request.GET.get("to") or None
    )


# The session list's filter for a breakdown's key; by day the key narrows
# the list's dates instead; by model and by tool the list has no filter.
SESSION_FILTERS = {"prompt": "prompt_ref", "user": "user"}
#: The page's breakdowns, and then one by time: by day for a range of up to
#: ``DAYS_BY_DAY`` days, by month for a longer one (a year's 366 days were a
#: table and a chart few could read, and the page's slowest part: issue #28).
PAGE_GROUPS: Final = ("prompt", "tool", "model", "user")
DAYS_BY_DAY: Final = 62


def by_time(period: ranges.DateRange) -> str:
    """The page's breakdown by time for ``period``: "day" or "month"."""
    return "day" if period.days <= DAYS_BY_DAY else "month"


def month_links(spend: Spend) -> list[str]:
    """For each month of a breakdown by month, this page over its days in
    the range (by day)."""
    base = reverse("sessions_app:cost-report")
    links = []
    for row in spend.rows:
        first = datetime.date.fromisoformat(f"{row.key}-01")
        start = max(first, spend.range.start)
        end = min(next_month(first) - ONE_DAY, spend.range.end)
        query = {"from": start.isoformat(), "to": end.isoformat()}
        links.append(f"{base}?{urlencode(query)}")
    return links


def session_links(spend: Spend) -> list[str]:
    """For each row, the session list filtered to its sessions ("" when the
    list has no such filter, or the row is not one group); by month, the
    month's page by day."""
    if spend.group == "month":
        return month_links(spend)
    if spend.group not in SESSION_FILTERS and spend.group != "day":
        return ["" for _ in spend.rows]
    base = reverse("sessions_app:session-list")
    links = []
    for row in spend.rows:
        if row.kind != "group" or not row.key or not row.count:
            links.append("")
            continue
        query: dict[str, str] = {}
        period = spend.range
        if spend.group == "day":
            day = datetime.date.fromisoformat(row.key)
            period = ranges.DateRange(day, day)
        else:
            query[SESSION_FILTERS[spend.group]] = row.key
        low, high = period.bounds()
        # The list's range is inclusive: up to the last microsecond.
        last = high - datetime.timedelta(microseconds=1)
        query.update(
            created_at_after=low.isoformat(), created_at_before=last.isoformat()
        )
        links.append(f"{base}?{urlencode(query)}")
    return links


class CostReportView(LoginRequiredMixin, NeutraliseBidiMixin, TemplateView):
    """``GET /audit/costs/?from=&to=``: spend by prompt, tool, model, user and
    day (by month over more than ``DAYS_BY_DAY`` days), each as a table and a
    chart, with its CSV link."""

    template_name = "sessions_app/cost_report.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        error = ""
        try:
            period = requested_range(self.request)
        except ranges.InvalidRange as invalid:
            error = f"{invalid} Showing the last {ranges.DEFAULT_DAYS} days instead."
            period = ranges.default_range()
        user = self.request.user
        breakdowns = reports.spend_report(
            (*PAGE_GROUPS, by_time(period)),
            user=user,
            start=period.start,
            end=period.end,
        )
        dates = {"from": period.start.isoformat(), "to": period.end.isoformat()}
        context.update(
            range=period,
            range_error=error,
            breakdowns=[
                (
                    spend,
                    "?" + urlencode({"group": spend.group, **dates}),
                    list(zip(spend.rows, session_links(spend), strict=True)),
                )
                for spend in breakdowns
            ],
            total=breakdowns[0],
            sees_all=access.sees_all(user),
            max_days=ranges.MAX_DAYS,
            days_by_day=DAYS_BY_DAY,
            default_days=ranges.DEFAULT_DAYS,
            time_zone=timezone.get_current_timezone_name(),
        )
        return context


class ApiCredentialsMixin:
    """Also signs in with the API's credentials (``Authorization: Token ...``,
    ``REST_FRAMEWORK["DEFAULT_AUTHENTICATION_CLASSES"]``), so a script that
    holds a token reads the same rows as the API; bad or inactive
    credentials are a 401. Without credentials, the browser's session as
    before (anonymous: the login page)."""

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        if "Authorization" in request.headers and not request.user.is_authenticated:
            api_request = Request(
                request,
                authenticators=[
                    authentication()
                    for authentication in cast(
                        "list[type[BaseAuthentication]]",
                        api_settings.DEFAULT_AUTHENTICATION_CLASSES,
                    )
                ],
            )
            try:
                user = api_request.user
            except exceptions.AuthenticationFailed as failed:
                return HttpResponse(
                    str(failed.detail),
                    status=401,
                    content_type="text/plain; charset=utf-8",
                    headers={"WWW-Authenticate": "Token"},
                )
            if access.is_user(user):
                request.user = user
            elif not _basic(request):
                # credentials of another scheme (Bearer): refused, as the API
                # refuses them; a proxy's Basic login goes on to the login page
                return HttpResponse(
                    "Send the API's token: Authorization: Token <key>.",
                    status=401,
                    content_type="text/plain; charset=utf-8",
                    headers={"WWW-Authenticate": "Token"},
                )
        return super().dispatch(request, *args, **kwargs)  # type: ignore[misc]


def _basic(request: HttpRequest) -> bool:
    scheme = request.headers.get("Authorization", "").split(" ", 1)[0]
    return scheme.lower() == "basic"


class CostCsvView(ApiCredentialsMixin, LoginRequiredMixin, View):
    """``GET /audit/costs.csv?group=&from=&to=``: one breakdown as CSV (an
    attachment), every row the page shows; with a browser's session or an
    API token."""

    def get(self, request: HttpRequest) -> HttpResponse:
        group = request.GET.get("group") or "prompt"
        if group not in GROUPS:
            return HttpResponseBadRequest(
                f"Choose a group: {', '.join(GROUPS)}.",
                content_type="text/plain; charset=utf-8",
            )
        try:
            period = requested_range(request)
        except ranges.InvalidRange as invalid:
            return HttpResponseBadRequest(
                str(invalid), content_type="text/plain; charset=utf-8"
            )
        spend = reports.spend_by(
            group, user=request.user, start=period.start, end=period.end
        )
        name = f"costs-{group}-{period.start.isoformat()}-{period.end.isoformat()}.csv"
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        response["Cache-Control"] = "no-store"
        writer = csv.writer(response)
        writer.writerow(
            [group, "label", "cost_usd", spend.count_label, "unpriced_calls", "row"]
        )
        for row in spend.rows:
            writer.writerow(
                [
                    csv_cell(cell)
                    for cell in (
                        row.key,
                        row.label,
                        row.cost,
                        row.count,
                        row.unpriced,
                        row.kind,
                    )
                ]
            )
        return response
