"""The cost page (tables, charts), its CSV export and ``GET /api/costs/``
(the session page, list and API: ``test_session_costs.py``).

The figures are the hand sums of factory rows; a user never sees another's
spend; bad input is a message or a 400, never a 500; the number of queries
does not grow with the rows."""

from __future__ import annotations

import csv
import datetime
import html
import importlib
import io
import re
from decimal import Decimal

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from sessions_app.costs import ranges, reports
from sessions_app.costs.pages import DAYS_BY_DAY, PAGE_GROUPS
from sessions_app.costs.spend import GROUPS, MODEL_TOKENS_KEY, TOP_GROUPS
from sessions_app.templatetags.money import usd
from tests.sessions_app.factories import (
    AgentSessionFactory,
    ProviderCallFactory,
    ToolInvocationFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

PAGE = "/audit/costs/"
CSV = "/audit/costs.csv"
API = "/api/costs/"
D = Decimal
SECRET_B = "prompt-of-bob-7f3a"


@pytest.fixture
def people():
    alice = UserFactory.create(username="alice")
    bob = UserFactory.create(username="bob")
    auditor = UserFactory.create(username="auditor", is_staff=True)
    auditor.groups.add(Group.objects.get(name="Auditors"))
    return {"alice": alice, "bob": bob, "auditor": auditor}


@pytest.fixture
def spent(people):
    """Today: alice ran demo/research twice (0.0123 + 0.5, 1 unpriced call) and
    one web search (fee 0.01) on the first; bob ran ``SECRET_B`` for 7.25."""
    first = AgentSessionFactory.create(created_by=people["alice"], cost=D("0.0123"))
    AgentSessionFactory.create(
        created_by=people["alice"], cost=D("0.5"), unpriced_calls=1
    )
    ToolInvocationFactory.create(session=first, web_search=True, cost=D("0.01"))
    ProviderCallFactory.create(session=first, cost=D("0.0023"))
    theirs = AgentSessionFactory.create(
        created_by=people["bob"], prompt_ref=f"{SECRET_B}/x", cost=D("7.25")
    )
    ToolInvocationFactory.create(session=theirs, name="bobs_tool", native=True)
    return first


def client_of(user):
    client = APIClient()
    client.force_login(user)
    return client


def text(response):
    return response.content.decode()


def read_csv(response):
    return list(csv.reader(io.StringIO(text(response))))


# -- the page -----------------------------------------------------------------


def test_cost_page_needs_a_login(client):
    response = client.get(PAGE)

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login") + "?next=/audit/costs/")


def test_cost_page_shows_the_users_spend_by_every_group(people, spent):
    page = text(client_of(people["alice"]).get(PAGE))

    # 0.0123 + 0.5
    assert "$0.5123 spent from" in page
    assert "by 2 sessions of yours" in page
    assert "plus 1 unpriced call" in page
    for group in (*PAGE_GROUPS, "day"):
        assert f'id="by-{group}"' in page
    assert 'id="by-month"' not in page  # 30 days: by day
    assert "demo/research" in page
    assert "Model tokens (provider calls, all tools)" in page
    assert "web_search (web_search)" in page
    assert f">Last {ranges.DEFAULT_DAYS} days</a>" in page


def test_cost_page_never_shows_another_users_spend(people, spent):
    page = text(client_of(people["alice"]).get(PAGE))

    assert SECRET_B not in page
    assert "bob" not in page
    assert "$7.25" not in page
    assert "bobs_tool" not in page


def test_cost_page_of_an_auditor_shows_everyone(people, spent):
    page = text(client_of(people["auditor"]).get(PAGE))

    # 0.0123 + 0.5 + 7.25
    assert "$7.76 spent from" in page
    assert SECRET_B in page
    assert ">bob<" in page and ">alice<" in page
    assert "of yours" not in page


def test_cost_page_draws_a_chart_per_breakdown_with_a_bar_per_row(people, spent):
    page = text(client_of(people["auditor"]).get(PAGE))

    charts = re.findall(r'<svg class="chart chart-(\w+)".*?</svg>', page, re.S)
    assert sorted(charts) == sorted((*PAGE_GROUPS, "day"))
    by_prompt = re.search(r'<svg class="chart chart-prompt".*?</svg>', page, re.S)
    assert by_prompt is not None
    assert by_prompt.group().count('class="bar ') == 2
    by_day = re.search(r'<svg class="chart chart-day".*?</svg>', page, re.S)
    assert by_day is not None
    assert by_day.group().count('class="bar ') == ranges.DEFAULT_DAYS
    assert "<script" not in page.split("<main>")[1]


def test_cost_page_escapes_prompt_names(people):
    AgentSessionFactory.create(
        created_by=people["alice"], prompt_ref="<img src=x onerror=alert(1)>/p"
    )

    page = text(client_of(people["alice"]).get(PAGE))

    assert "<img src=x" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;/p" in page


def test_cost_page_with_a_range_counts_only_the_sessions_created_in_it(people):
    old = timezone.now() - datetime.timedelta(days=40)
    AgentSessionFactory.create(created_by=people["alice"], cost=D("3"), created_at=old)
    AgentSessionFactory.create(created_by=people["alice"], cost=D("0.25"))
    day = timezone.localdate(old).isoformat()

    default = text(client_of(people["alice"]).get(PAGE))
    chosen = text(client_of(people["alice"]).get(PAGE, {"from": day, "to": day}))

    assert "$0.2500 spent from" in default
    assert f"$3.00 spent from {day} to {day}" in chosen


def links_of(page, section):
    part = re.search(
        rf'<section class="breakdown" id="by-{section}">.*?</section>', page, re.S
    )
    assert part is not None
    return [
        html.unescape(link)
        for link in re.findall(r'<a href="([^"]+)" title="Its sessions">', part.group())
    ]


def listed(client, link):
    page = text(client.get(link))
    return (
        len(re.findall(r"<tr>", page.split("<tbody>")[1])) if "<tbody>" in page else 0
    )


def test_cost_page_rows_lead_to_their_sessions(people, spent):
    old = timezone.now() - datetime.timedelta(days=60)
    AgentSessionFactory.create(created_by=people["alice"], created_at=old)
    AgentSessionFactory.create(created_by=None, cost=D("2"))
    client = client_of(people["auditor"])
    page = text(client.get(PAGE))

    by_prompt = links_of(page, "prompt")
    by_user = links_of(page, "user")
    by_day = links_of(page, "day")

    assert len(by_prompt) == 2 and all("prompt_ref=" in link for link in by_prompt)
    # demo/research: alice's two sessions of the range (not the older one),
    # and the one without a user.
    research = next(link for link in by_prompt if "demo%2Fresearch" in link)
    assert listed(client, research) == 3
    assert [listed(client, link) for link in by_user] == [1, 2]  # bob, alice
    assert len(by_day) == 1 and listed(client, by_day[0]) == 4
    assert links_of(page, "model") == [] and links_of(page, "tool") == []


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"from": "last week"}, "Enter &#x27;from&#x27; as a date, YYYY-MM-DD."),
        ({"to": "2026-02-30"}, "&#x27;to&#x27; is not a date of the calendar."),
        ({"from": "2026-03-02", "to": "2026-03-01"}, "must be on or before"),
        ({"from": "2020-01-01", "to": "2026-01-01"}, "at most 366 days"),
        ({"from": "2026-01-01\x00"}, "Enter &#x27;from&#x27; as a date"),
        ({"from": "9999-12-31", "to": "9999-12-31"}, "must be between"),
    ],
)
def test_cost_page_explains_bad_dates_and_shows_the_default_range(
    people, spent, query, message
):
    response = client_of(people["alice"]).get(PAGE, query)

    assert response.status_code == 200
    assert 'id="range-error"' in text(response)
    assert message in text(response)
    assert "Showing the last 30 days instead." in text(response)
    assert "$0.5123 spent from" in text(response)


def test_cost_page_shows_bidi_controls_as_marks_in_tables_and_charts(people):
    AgentSessionFactory.create(created_by=people["alice"], prompt_ref="demo/\u202ep")

    page = text(client_of(people["alice"]).get(PAGE))

    chart = re.search(r'<svg class="chart chart-prompt".*?</svg>', page, re.S)
    assert chart is not None and "demo/[U+202E]p" in chart.group()
    assert "\u202e" not in page


@pytest.mark.parametrize(
    ("url", "status"), [(PAGE, 302), (f"{CSV}?group=user", 302), (API, 401)]
)
def test_cost_routes_refuse_a_deactivated_user(people, spent, url, status):
    """Logged in, then deactivated: the session no longer counts (an auditor
    would otherwise keep seeing everyone's spend)."""
    auditor = people["auditor"]
    client = client_of(auditor)
    auditor.is_active = False
    auditor.save()

    response = client.get(url)

    assert response.status_code == status
    assert SECRET_B not in text(response)


def test_api_costs_refuses_a_deactivated_users_token(people, spent):
    from rest_framework.authtoken.models import Token

    auditor = people["auditor"]
    token = Token.objects.create(user=auditor)
    auditor.is_active = False
    auditor.save()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")

    assert client.get(API, {"group": "user"}).status_code == 401


@pytest.mark.parametrize(
    ("url", "query"),
    [
        (PAGE, {}),
        (CSV, {"group": "day"}),
        (API, {"group": "day"}),
        (CSV, {"group": "month"}),
        (API, {"group": "month"}),
    ],
)
def test_cost_routes_work_without_use_tz(settings, people, url, query):
    """Naive datetimes (``USE_TZ = False``): the range and the days are the
    server's, not a 500."""
    settings.USE_TZ = False
    AgentSessionFactory.create(
        created_by=people["alice"],
        cost=D("0.25"),
        created_at=datetime.datetime.now() - datetime.timedelta(hours=1),
    )

    response = client_of(people["alice"]).get(url, query)

    assert response.status_code == 200
    if url == API:
        assert response.json()["total"] == "0.2500000000"
    elif url == CSV:
        assert ["0.2500000000", "1"] in [row[2:4] for row in read_csv(response)]
    else:
        assert "$0.2500 spent from" in text(response)


def test_cost_routes_show_a_total_past_a_single_costs_digits(people):
    """Two sessions at a single cost's largest amount: their sum has more
    digits than the column, and still shows (no rounding error, no 500)."""
    for _ in range(2):
        AgentSessionFactory.create(created_by=people["alice"], cost=D("99999999.99"))
    client = client_of(people["alice"])

    assert client.get(API).json()["total"] == "199999999.9800000000"
    assert read_csv(client.get(CSV))[1][2] == "199999999.9800000000"
    assert "$199,999,999.98 spent from" in text(client.get(PAGE))


# -- CSV ------------------------------------------------------------------------


def test_csv_is_an_attachment_with_the_page_figures(people, spent):
    response = client_of(people["alice"]).get(CSV, {"group": "prompt"})

    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith(
        'attachment; filename="costs-prompt-'
    )
    assert read_csv(response) == [
        ["prompt", "label", "cost_usd", "sessions", "unpriced_calls", "row"],
        ["demo/research", "demo/research", "0.5123000000", "2", "1", "group"],
    ]


def test_csv_by_tool_has_the_model_tokens_row(people, spent):
    rows = read_csv(client_of(people["alice"]).get(CSV, {"group": "tool"}))

    assert rows[1:] == [
        [
            "(model tokens)",
            "Model tokens (provider calls, all tools)",
            "0.0023000000",
            "1",
            "0",
            "tokens",
        ],
        ["web_search", "web_search (web_search)", "0.0100000000", "1", "0", "group"],
    ]


def test_csv_by_user_of_a_user_holds_only_themselves(people, spent):
    rows = read_csv(client_of(people["alice"]).get(CSV, {"group": "user"}))

    assert [row[0] for row in rows[1:]] == ["alice"]
    assert "bob" not in str(rows)


@pytest.mark.parametrize(
    "name", ['=HYPERLINK("http://evil")', "+1+1", "-2+3", "@SUM(A1)", "\t=1"]
)
def test_csv_cells_never_start_a_formula(people, name):
    evil = UserFactory.create(username=name.replace('"', "").replace("\t", "t"))
    evil.groups.add(Group.objects.get(name="Auditors"))
    AgentSessionFactory.create(created_by=evil, prompt_ref=f"{name}/p", cost=D(1))

    prompt_rows = read_csv(client_of(evil).get(CSV, {"group": "prompt"}))

    assert prompt_rows[1][0] == f"'{name}/p"
    assert prompt_rows[1][1] == f"'{name}/p"


def test_csv_cell_helper_leaves_plain_text_and_numbers_alone():
    from tooling.spreadsheet import csv_cell

    assert csv_cell("demo/research") == "demo/research"
    assert csv_cell(D("0.0100000000")) == "0.0100000000"
    assert csv_cell(3) == "3"
    assert csv_cell("-1") == "'-1"
    assert csv_cell(" leading space") == " leading space"
    assert (
        csv_cell("\u200e\u05e9\u05dc\u05d5\u05dd") == "\u200e\u05e9\u05dc\u05d5\u05dd"
    )


@pytest.mark.parametrize(
    "text",
    ["\x00=1+1", "\n=1+1", " =1+1", "\u200e=1+1", "\uff1d1+1", " \t\uff20SUM(A1)"],
)
def test_csv_cells_never_start_a_formula_after_what_a_spreadsheet_skips(text):
    """Some spreadsheets skip leading spaces, line breaks, control and
    format characters, or read full-width signs as the ASCII ones."""
    from tooling.spreadsheet import csv_cell

    assert csv_cell(text) == "'" + text


def month_links_of(page):
    part = re.search(
        r'<section class="breakdown" id="by-month">.*?</section>', page, re.S
    )
    assert part is not None
    return [
        html.unescape(link)
        for link in re.findall(r'<a href="([^"]+)" title="Its days">', part.group())
    ]


def test_cost_page_over_more_than_two_months_is_by_month(people):
    """Past ``DAYS_BY_DAY`` days the page breaks the range down by month: a bar
    and a row per month, each month leading to its days of the range."""
    today = timezone.localdate()
    start = today - datetime.timedelta(days=150)
    for back, cost in ((120, "3"), (45, "0.5"), (0, "0.25")):
        AgentSessionFactory.create(
            created_by=people["alice"],
            cost=D(cost),
            created_at=timezone.now() - datetime.timedelta(days=back),
        )
    client = client_of(people["alice"])
    query = {"from": start.isoformat(), "to": today.isoformat()}

    page = text(client.get(PAGE, query))

    assert 'id="by-month"' in page and 'id="by-day"' not in page
    months = 1 + (today.year - start.year) * 12 + today.month - start.month
    chart = re.search(r'<svg class="chart chart-month".*?</svg>', page, re.S)
    assert chart is not None
    assert chart.group().count('class="bar ') == months
    links = month_links_of(page)
    assert len(links) == 3  # the months with sessions
    # The last month ends with the range, today; a month's page is by day.
    last = text(client.get(links[-1]))
    assert f"to {today.isoformat()}" in last
    assert "$0.2500 spent" in last
    assert 'id="by-day"' in last and 'id="by-month"' not in last
    middle = text(client.get(links[1]))
    assert "$0.5000 spent" in middle


def test_a_month_link_covers_the_month_cut_by_the_range(people):
    AgentSessionFactory.create(
        created_by=people["alice"],
        cost=D("1"),
        created_at=timezone.make_aware(datetime.datetime(2026, 1, 25, 12)),
    )
    AgentSessionFactory.create(
        created_by=people["alice"],
        cost=D("2"),
        created_at=timezone.make_aware(datetime.datetime(2026, 3, 10, 12)),
    )
    page = text(
        client_of(people["alice"]).get(PAGE, {"from": "2026-01-20", "to": "2026-03-31"})
    )

    assert month_links_of(page) == [
        "/audit/costs/?from=2026-01-20&to=2026-01-31",
        "/audit/costs/?from=2026-03-01&to=2026-03-31",
    ]
    assert ">2026-01</a>" in page and ">2026-03</a>" in page


def test_cost_page_of_two_months_is_still_by_day(people):
    today = timezone.localdate()
    start = today - datetime.timedelta(days=DAYS_BY_DAY - 1)
    AgentSessionFactory.create(created_by=people["alice"], cost=D("1"))

    page = text(
        client_of(people["alice"]).get(
            PAGE, {"from": start.isoformat(), "to": today.isoformat()}
        )
    )

    assert 'id="by-day"' in page and 'id="by-month"' not in page
    chart = re.search(r'<svg class="chart chart-day".*?</svg>', page, re.S)
    assert chart is not None
    assert chart.group().count('class="bar ') == DAYS_BY_DAY


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"group": "colour"}, "Choose a group: prompt, tool, model, user, day, month."),
        ({"group": "day", "from": "x"}, "Enter 'from' as a date, YYYY-MM-DD."),
        ({"to": "2026-13-01"}, "'to' is not a date of the calendar."),
    ],
)
def test_csv_refuses_bad_input_with_a_400_and_the_reason(people, query, message):
    response = client_of(people["alice"]).get(CSV, query)

    assert response.status_code == 400
    assert text(response) == message


def test_csv_needs_a_login(client):
    response = client.get(CSV)

    assert response.status_code == 302
    assert "login" in response["Location"]


# -- API ------------------------------------------------------------------------


def test_api_costs_by_prompt(people, spent):
    data = client_of(people["alice"]).get(API, {"group": "prompt"}).json()

    today = timezone.localdate()
    assert data == {
        "group": "prompt",
        "from": (today - datetime.timedelta(days=29)).isoformat(),
        "to": today.isoformat(),
        "total": "0.5123000000",
        "count": 2,
        "count_label": "sessions",
        "unpriced_calls": 1,
        "groups": 1,
        "rows": [
            {
                "key": "demo/research",
                "label": "demo/research",
                "cost": "0.5123000000",
                "count": 2,
                "unpriced_calls": 1,
                "kind": "group",
            }
        ],
    }


def test_api_and_csv_costs_by_month_list_every_month_of_the_range(people, spent):
    today = timezone.localdate()
    start = today - datetime.timedelta(days=100)
    query = {"group": "month", "from": start.isoformat(), "to": today.isoformat()}
    client = client_of(people["alice"])

    data = client.get(API, query).json()
    rows = read_csv(client.get(CSV, query))

    months = 1 + (today.year - start.year) * 12 + today.month - start.month
    this_month = today.isoformat()[:7]
    assert data["rows"][0]["key"] == start.isoformat()[:7]
    assert len(data["rows"]) == months
    assert data["rows"][-1] == {
        "key": this_month,
        "label": this_month,
        "cost": "0.5123000000",
        "count": 2,
        "unpriced_calls": 1,
        "kind": "group",
    }
    assert (data["total"], data["count"], data["groups"]) == ("0.5123000000", 2, 1)
    assert rows[0] == [
        "month",
        "label",
        "cost_usd",
        "sessions",
        "unpriced_calls",
        "row",
    ]
    assert rows[-1][:4] == [this_month, this_month, "0.5123000000", "2"]
    assert len(rows) == months + 1


def test_api_costs_by_user_of_an_auditor_lists_everyone(people, spent):
    data = client_of(people["auditor"]).get(API, {"group": "user"}).json()

    assert {row["key"]: row["cost"] for row in data["rows"]} == {
        "bob": "7.2500000000",
        "alice": "0.5123000000",
    }
    assert data["total"] == "7.7623000000"


def test_api_costs_never_show_another_users_spend(people, spent):
    for group in GROUPS:
        response = client_of(people["alice"]).get(API, {"group": group})
        assert response.status_code == 200
        assert SECRET_B not in text(response) and "bob" not in text(response)


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"group": "colour"}, "group"),
        ({"from": "yesterday"}, "from"),
        ({"to": "2026-02-30"}, "to"),
        ({"from": "2026-03-02", "to": "2026-03-01"}, "range"),
        ("from=%ED%A0%80", "from"),  # a lone surrogate, as UTF-8 bytes
        ("from=2026-01-01%00", "from"),
    ],
)
def test_api_costs_refuses_bad_input_with_a_400_naming_the_parameter(
    people, query, field
):
    client = client_of(people["alice"])
    if isinstance(query, str):
        response = client.get(f"{API}?{query}")
    else:
        response = client.get(API, query)

    assert response.status_code == 400
    assert field in response.json()["errors"]


def test_api_costs_needs_credentials():
    assert APIClient().get(API).status_code == 401


def test_csv_shows_bidi_controls_as_marks(people):
    """A right-to-left override would reorder the text in a spreadsheet; the
    CSV shows it as the page does, and a formula behind it stays text."""
    AgentSessionFactory.create(
        created_by=people["alice"], prompt_ref="demo/\u202eexe.txt", model="\u2066=1+1"
    )
    client = client_of(people["alice"])

    by_prompt = read_csv(client.get(CSV, {"group": "prompt"}))
    by_model = read_csv(client.get(CSV, {"group": "model"}))

    assert by_prompt[1][:2] == ["demo/[U+202E]exe.txt"] * 2
    assert by_model[1][:2] == ["[U+2066]=1+1"] * 2
    assert "\u202e" not in str(by_prompt) and "\u2066" not in str(by_model)


def test_api_costs_refuses_digits_of_other_scripts(people):
    fullwidth = "".join(
        chr(0xFF10 + int(c)) if c.isdigit() else c for c in "2026-03-01"
    )

    response = client_of(people["alice"]).get(API, {"from": fullwidth})

    assert response.status_code == 400
    assert response.json()["errors"] == {
        "from": ["Enter 'from' as a date, YYYY-MM-DD."]
    }


# -- query counts --------------------------------------------------------------


def _queries(client, url, query=None):
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, query or {})
    assert response.status_code == 200
    return len(captured)


def _many(user, count):
    for index in range(count):
        session = AgentSessionFactory.create(
            created_by=user,
            prompt_ref=f"bulk/p{index}",
            model=f"model-{index}",
            cost=D("0.001"),
        )
        ProviderCallFactory.create(session=session, cost=D("0.0005"))
        ToolInvocationFactory.create(
            session=session, web_search=True, name=f"search_{index}"
        )


@pytest.mark.parametrize("url", [PAGE, CSV, API])
def test_cost_reads_are_a_constant_number_of_queries(people, url):
    auditor = people["auditor"]
    client = client_of(auditor)
    _many(auditor, 2)
    query = {"group": "tool"} if url != PAGE else None
    few = _queries(client, url, query)

    _many(people["alice"], 3 * TOP_GROUPS)

    assert _queries(client, url, query) == few


def test_cost_page_reads_one_query_per_breakdown(people, spent):
    client = client_of(people["auditor"])
    client.get(PAGE)  # warm: the session and user are read once per request

    with CaptureQueriesContext(connection) as captured:
        client.get(PAGE)

    spend_queries = [
        query["sql"]
        for query in captured.captured_queries
        if "sessions_app_" in query["sql"]
    ]
    # The days rolled up (none here); today's sessions by prompt, model,
    # user and day at once; tool: native fees + provider calls
    # (tests/sessions_app/test_spend_rollup.py: with days rolled up, a guard
    # and two more, whatever the range).
    assert len(spend_queries) == 4, spend_queries


# -- a real run ------------------------------------------------------------------


def test_a_priced_runs_spend_is_the_same_in_every_breakdown(people):
    """A run of the offline provider, priced from the seeded price list by the
    recording: the page, CSV and API show its cost, and its provider calls
    plus native fees (by tool) add up to its cost (by prompt)."""
    from django.apps import apps

    from sessions_app import services
    from tests.sessions_app.clients import CountingProvider
    from tests.tooling.factories import (
        HostedToolDefinitionFactory,
        PromptTemplateFactory,
        SectionDefinitionFactory,
        add_sections,
    )
    from tooling.assembly import pricing as sheets
    from tooling.models import HostedToolDefinition, SectionHostedTool

    # The seeded price list (the test database was flushed of it).
    importlib.import_module("tooling.migrations.0011_seed_prices").seed(apps, None)
    sheets.clear_cache()
    section = SectionDefinitionFactory.create(template="Research the tides.")
    search = HostedToolDefinitionFactory.create(
        name="search", kind=HostedToolDefinition.Kind.WEB_SEARCH, config={}
    )
    SectionHostedTool.objects.create(section=section, hosted_tool=search)
    prompt = PromptTemplateFactory.create(key="priced", max_turns=8)
    add_sections(prompt, section)
    alice = people["alice"]

    session = services.start_session(
        prompt_ref=prompt.ref, params={}, client=CountingProvider().client, user=alice
    )
    sheets.clear_cache()

    session.refresh_from_db()
    assert session.cost > 0 and session.unpriced_calls == 0, session.error_message
    today = timezone.localdate()
    by_prompt = reports.spend_by("prompt", user=alice, start=today, end=today)
    by_tool = reports.spend_by("tool", user=alice, start=today, end=today)
    assert by_prompt.total == by_tool.total == session.cost
    assert {row.key for row in by_tool.rows} == {MODEL_TOKENS_KEY, "search"}
    client = client_of(alice)
    assert client.get(API).json()["total"] == f"{session.cost:f}"
    assert f"{usd(session.cost)} spent from" in text(client.get(PAGE))
    assert read_csv(client.get(CSV))[1][2] == f"{session.cost:f}"
    detail = text(client.get(session.get_absolute_url()))
    assert re.search(rf'id="session-cost">\s*{re.escape(usd(session.cost))}', detail)


def test_csv_cells_keep_the_marks_of_right_to_left_writing():
    """Overrides and isolates reorder what follows: shown as marks. The
    marks Arabic and Hebrew text needs (U+200E, U+200F, U+061C) stay."""
    from tooling.spreadsheet import csv_cell

    assert csv_cell("ab\u202ecd\u2066") == "ab[U+202E]cd[U+2066]"
    assert (
        csv_cell("\u05e9\u05dc\u05d5\u05dd\u200f 5")
        == "\u05e9\u05dc\u05d5\u05dd\u200f 5"
    )
