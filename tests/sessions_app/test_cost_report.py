"""``sessions_app.costs.reports``: spend by prompt, tool, model, user, day and
month, against sums worked out by hand from factory rows (days in other time
zones too); the ``usd`` filter and the charts (no database for those)."""

from __future__ import annotations

import datetime
import zoneinfo
from decimal import Decimal

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone

from sessions_app.costs.ranges import DateRange
from sessions_app.costs.reports import spend_by
from sessions_app.costs.spend import (
    MODEL_TOKENS_KEY,
    MODEL_TOKENS_LABEL,
    NO_MODEL_LABEL,
    NO_USER_LABEL,
    TOP_GROUPS,
    InvalidGroup,
    Spend,
    SpendRow,
)
from sessions_app.templatetags.cost_charts import spend_chart
from sessions_app.templatetags.money import format_usd, usd
from tests.sessions_app.factories import (
    AgentSessionFactory,
    ProviderCallFactory,
    ToolInvocationFactory,
    UserFactory,
)

TODAY = datetime.date(2026, 3, 15)
D = Decimal


def at(day: datetime.date, hour: int = 12) -> datetime.datetime:
    return timezone.make_aware(
        datetime.datetime.combine(day, datetime.time(hour)),
        timezone.get_current_timezone(),
    )


def rows_of(spend: Spend) -> dict[str, tuple[Decimal, int, int]]:
    return {row.key: (row.cost, row.count, row.unpriced) for row in spend.rows}


# -- the usd filter ------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (D("0"), "$0.00"),
        (D("0.0123"), "$0.0123"),
        (D("0.01234567"), "$0.0123"),
        (D("0.5"), "$0.5000"),
        (D("0.0042"), "$0.0042"),
        (D("0.00042"), "$0.00042"),
        (D("0.000123"), "$0.00012"),
        (D("0.0001"), "$0.0001"),
        (D("0.00009999"), "< $0.0001"),
        (D("0.0000000001"), "< $0.0001"),
        (D("1"), "$1.00"),
        # rounded up to a dollar: cents, not $1.0000 (found by hostile QA)
        (D("0.99995"), "$1.00"),
        (D("-0.99999"), "-$1.00"),
        (D("0.99994"), "$0.9999"),
        (D("12.345"), "$12.35"),
        (D("1234567.891"), "$1,234,567.89"),
        (D("-0.0123"), "-$0.0123"),
        (3, "$3.00"),
        ("0.0100000000", "$0.0100"),
        # Past the default 28 digits of precision (a sum, not one cost).
        (D("123456789012345678901234567.5"), "$123,456,789,012,345,678,901,234,567.50"),
    ],
)
def test_usd_formats_amounts_with_enough_digits(value, shown):
    assert usd(value) == shown


@pytest.mark.parametrize(
    "value",
    [0.1, 1.0, None, True, "abc", "", D("NaN"), D("Infinity"), object(), "1e100"],
)
def test_usd_shows_nothing_for_what_is_not_an_amount(value):
    """A float is never money: it shows as nothing, not as a rounded figure;
    nor does a figure no column holds (not an error on the page)."""
    assert format_usd(value) == ""


# -- spend_by -----------------------------------------------------------------


@pytest.fixture
def people(db):
    alice = UserFactory.create(username="alice")
    bob = UserFactory.create(username="bob")
    auditor = UserFactory.create(username="auditor")
    auditor.groups.add(Group.objects.get(name="Auditors"))
    return alice, bob, auditor


@pytest.fixture
def spent(people):
    """Sessions of March 2026 (and one outside the range), by hand:

    alice: research 0.0123456789 (03-01) + 0.5 (03-02, 2 unpriced), notes 1.25
    (03-02, gpt-4.1); bob: research 0.0300000001 (03-03); February: 9.99."""
    alice, bob, _ = people
    march = datetime.date(2026, 3, 1)
    made = [
        AgentSessionFactory.create(
            created_by=alice, cost=D("0.0123456789"), created_at=at(march)
        ),
        AgentSessionFactory.create(
            created_by=alice,
            cost=D("0.5"),
            unpriced_calls=2,
            created_at=at(march + datetime.timedelta(days=1), 23),
        ),
        AgentSessionFactory.create(
            created_by=alice,
            prompt_ref="demo/notes",
            model="gpt-4.1",
            cost=D("1.25"),
            created_at=at(march + datetime.timedelta(days=1), 0),
        ),
        AgentSessionFactory.create(
            created_by=bob, cost=D("0.0300000001"), created_at=at(march.replace(day=3))
        ),
        AgentSessionFactory.create(
            created_by=alice, cost=D("9.99"), created_at=at(datetime.date(2026, 2, 28))
        ),
    ]
    return made


def march(group, user):
    return spend_by(
        group,
        user=user,
        start=datetime.date(2026, 3, 1),
        end=datetime.date(2026, 3, 31),
    )


def test_spend_by_prompt_sums_the_sessions_in_the_range(people, spent):
    alice, _, auditor = people

    mine = march("prompt", alice)
    everyone = march("prompt", auditor)

    assert rows_of(mine) == {
        "demo/notes": (D("1.25"), 1, 0),
        "demo/research": (D("0.5123456789"), 2, 2),
    }
    assert [row.key for row in mine.rows] == ["demo/notes", "demo/research"]
    assert (mine.total, mine.count, mine.unpriced) == (D("1.7623456789"), 3, 2)
    assert rows_of(everyone)["demo/research"] == (D("0.5423456790"), 3, 2)
    assert everyone.total == D("1.7923456790")


def test_spend_by_model_and_by_user(people, spent):
    alice, _, auditor = people

    assert rows_of(march("model", alice)) == {
        "gpt-4.1": (D("1.25"), 1, 0),
        "gpt-5.4": (D("0.5123456789"), 2, 2),
    }
    assert rows_of(march("user", auditor)) == {
        "alice": (D("1.7623456789"), 3, 2),
        "bob": (D("0.0300000001"), 1, 0),
    }


def test_spend_by_user_shows_only_themselves_to_a_user_who_sees_their_own(
    people, spent
):
    alice, bob, _ = people

    assert list(rows_of(march("user", alice))) == ["alice"]
    assert rows_of(march("user", bob)) == {"bob": (D("0.0300000001"), 1, 0)}


def test_spend_by_day_lists_every_day_of_the_range(people, spent):
    _, _, auditor = people

    spend = march("day", auditor)

    assert len(spend.rows) == 31
    assert rows_of(spend)["2026-03-01"] == (D("0.0123456789"), 1, 0)
    assert rows_of(spend)["2026-03-02"] == (D("1.75"), 2, 2)
    assert rows_of(spend)["2026-03-03"] == (D("0.0300000001"), 1, 0)
    assert rows_of(spend)["2026-03-04"] == (D(0), 0, 0)
    assert spend.total == D("1.7923456790")


def test_spend_by_month_lists_every_month_of_the_range_cut_by_it(people, spent):
    _, _, auditor = people
    AgentSessionFactory.create(
        created_by=bob_of(people),
        cost=D("0.125"),
        created_at=at(datetime.date(2026, 5, 31)),
    )
    AgentSessionFactory.create(
        created_by=auditor, cost=D("7"), created_at=at(datetime.date(2026, 6, 1))
    )

    spend = spend_by(
        "month",
        user=auditor,
        start=datetime.date(2026, 2, 28),
        end=datetime.date(2026, 5, 31),
    )

    assert [row.key for row in spend.rows] == [
        "2026-02",
        "2026-03",
        "2026-04",
        "2026-05",
    ]
    assert rows_of(spend) == {
        "2026-02": (D("9.99"), 1, 0),  # its last day only
        "2026-03": (D("1.7923456790"), 4, 2),
        "2026-04": (D(0), 0, 0),
        "2026-05": (D("0.125"), 1, 0),  # not June's
    }
    assert (spend.total, spend.count, spend.unpriced, spend.groups) == (
        D("11.9073456790"),
        6,
        2,
        3,
    )
    assert spend.count_label == "sessions" and spend.label == "Month"


def test_spend_by_month_of_one_day_is_its_month(people, spent):
    alice, _, _ = people
    day = datetime.date(2026, 3, 2)

    spend = spend_by("month", user=alice, start=day, end=day)

    assert rows_of(spend) == {"2026-03": (D("1.75"), 2, 2)}


def bob_of(people):
    return people[1]


def test_every_breakdown_of_the_sessions_has_the_same_total(people, spent):
    _, _, auditor = people

    totals = {march(group, auditor).total for group in ("prompt", "model", "user")}

    assert totals == {march("day", auditor).total, march("month", auditor).total}


def test_spend_by_tool_sums_native_fees_plus_a_model_tokens_row(people):
    alice, bob, _ = people
    session = AgentSessionFactory.create(created_by=alice, created_at=at(TODAY))
    for fee in ("0.01", "0.01", None):
        ToolInvocationFactory.create(
            session=session, web_search=True, cost=None if fee is None else D(fee)
        )
    ToolInvocationFactory.create(
        session=session,
        name="run_code",
        native=True,
        kind="code_interpreter",
        cost=D("0.03"),
    )
    ToolInvocationFactory.create(session=session, name="read_file")  # local
    ProviderCallFactory.create(session=session, cost=D("0.0021"))
    ProviderCallFactory.create(session=session, cost=D("0.0030000005"))
    ProviderCallFactory.create(session=session, cost=None)
    # a failed request: no usage, nothing to price (as the session counts it;
    # found by a hostile review)
    ProviderCallFactory.create(session=session, cost=None, response=None)
    theirs = AgentSessionFactory.create(created_by=bob, created_at=at(TODAY))
    ToolInvocationFactory.create(session=theirs, web_search=True, cost=D("5"))
    ProviderCallFactory.create(session=theirs, cost=D("7"))

    spend = spend_by("tool", user=alice, start=TODAY, end=TODAY)

    assert rows_of(spend) == {
        MODEL_TOKENS_KEY: (D("0.0051000005"), 4, 1),
        "run_code": (D("0.03"), 1, 0),
        "web_search": (D("0.02"), 3, 1),
    }
    assert spend.rows[0].kind == "tokens"
    assert spend.rows[0].label == MODEL_TOKENS_LABEL
    assert (spend.total, spend.count, spend.unpriced) == (D("0.0551000005"), 8, 2)
    assert spend.count_label == "calls"


def test_spend_by_tool_counts_a_row_recorded_a_little_before_its_session(people):
    """A worker whose clock is behind may date a call before its session: the
    session's range decides, not the row's own date."""
    alice = people[0]
    session = AgentSessionFactory.create(created_by=alice, created_at=at(TODAY, 0))
    early = at(TODAY, 0) - datetime.timedelta(minutes=5)
    ToolInvocationFactory.create(
        session=session, web_search=True, cost=D("0.01"), created_at=early
    )
    ProviderCallFactory.create(session=session, cost=D("0.002"), created_at=early)

    spend = spend_by("tool", user=alice, start=TODAY, end=TODAY)

    assert spend.total == D("0.012")


def test_spend_by_folds_the_groups_past_the_largest_into_other(people):
    alice = people[0]
    for index in range(TOP_GROUPS + 3):
        AgentSessionFactory.create(
            created_by=alice,
            prompt_ref=f"p/{index:02d}",
            cost=D(index + 1) / 100,
            unpriced_calls=1,
            created_at=at(TODAY),
        )

    spend = spend_by("prompt", user=alice, start=TODAY, end=TODAY)

    assert len(spend.rows) == TOP_GROUPS + 1
    assert spend.rows[0].key == f"p/{TOP_GROUPS + 2:02d}"
    other = spend.rows[-1]
    # The three smallest: 0.01 + 0.02 + 0.03.
    assert (other.kind, other.folded, other.cost) == ("other", 3, D("0.06"))
    assert (other.count, other.unpriced) == (3, 3)
    assert other.label == "Other (3 more)"
    assert spend.groups == TOP_GROUPS + 3
    assert spend.total == sum(D(i + 1) / 100 for i in range(TOP_GROUPS + 3))


def test_spend_by_refuses_an_unknown_group(people):
    with pytest.raises(InvalidGroup):
        spend_by("colour", user=people[0], start=TODAY, end=TODAY)


def test_spend_by_an_anonymous_user_is_nothing(people, spent):
    from django.contrib.auth.models import AnonymousUser

    spend = march("prompt", AnonymousUser())

    assert (spend.rows, spend.total, spend.count) == ((), D(0), 0)


def test_sessions_without_a_user_or_model_are_labelled(people):
    AgentSessionFactory.create(created_by=None, model="", created_at=at(TODAY))

    by_user = spend_by("user", user=people[2], start=TODAY, end=TODAY)
    by_model = spend_by("model", user=people[2], start=TODAY, end=TODAY)

    assert [(r.key, r.label) for r in by_user.rows] == [("", NO_USER_LABEL)]
    assert [(r.key, r.label) for r in by_model.rows] == [("", NO_MODEL_LABEL)]


def test_a_deleted_users_sessions_are_not_said_to_be_a_commands(people):
    """A user deleted leaves their sessions without one: the label said "a
    command or a task" (found by hostile QA)."""
    gone = UserFactory.create(username="doomed")
    AgentSessionFactory.create(created_by=gone, created_at=at(TODAY))
    gone.delete()

    by_user = spend_by("user", user=people[2], start=TODAY, end=TODAY)

    assert [r.label for r in by_user.rows] == [NO_USER_LABEL]
    assert "deleted user" in NO_USER_LABEL


# -- charts --------------------------------------------------------------------


def _spend(group, rows):
    return Spend(
        group=group,
        range=DateRange(TODAY, TODAY),
        rows=tuple(rows),
        total=sum((row.cost for row in rows), D(0)),
        count=len(rows),
        unpriced=0,
        groups=len(rows),
        count_label="sessions",
    )


def test_chart_draws_one_bar_per_row_scaled_to_the_largest():
    chart = spend_chart(
        _spend(
            "prompt",
            [
                SpendRow("a/big", "a/big", D("2"), 1, 0),
                SpendRow("a/half", "a/half", D("1"), 1, 0),
                SpendRow("a/none", "a/none", D("0"), 1, 0),
            ],
        )
    )

    assert chart.count('class="bar ') == 3
    assert 'width="380.0"' in chart  # the largest fills the bar area
    assert 'width="190.0"' in chart
    assert 'width="0.0"' in chart
    assert "<script" not in chart and "style=" not in chart


def test_chart_escapes_labels():
    chart = spend_chart(
        _spend(
            "prompt",
            [SpendRow('<script>"x"', "<script>alert(1)</script>", D(1), 1, 0)],
        )
    )

    assert "<script>" not in chart
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in chart


def test_day_chart_has_a_bar_per_day():
    days = [
        SpendRow(f"2026-03-{day:02d}", f"2026-03-{day:02d}", D(day), day, 0)
        for day in range(1, 31)
    ]

    chart = spend_chart(_spend("day", days))

    assert chart.count('class="bar ') == 30
    assert 'class="chart chart-day"' in chart


def test_month_chart_has_a_bar_per_month_and_names_each_month():
    months = [
        SpendRow(f"2026-{month:02d}", f"2026-{month:02d}", D(month), month, 0)
        for month in range(1, 13)
    ]

    chart = spend_chart(_spend("month", months))

    assert chart.count('class="bar ') == 12
    assert 'class="chart chart-month"' in chart
    assert 'aria-label="Spend by month, bar chart"' in chart
    assert ">2026-01</text>" in chart and ">2026-12</text>" in chart


def test_chart_of_no_rows_is_empty():
    assert spend_chart(_spend("prompt", [])) == ""


# -- days in the current time zone, and exact sums -----------------------------


@pytest.mark.parametrize(
    "zone", ["America/New_York", "Asia/Tokyo", "Pacific/Kiritimati", "Etc/GMT+12"]
)
def test_spend_by_day_buckets_a_session_on_its_local_day(settings, people, zone):
    """23:30 and 00:30 local are the next or previous day in UTC (by zone):
    each counts on its local day, in the day and the range alike."""
    settings.TIME_ZONE = zone
    alice = people[0]
    local = zoneinfo.ZoneInfo(zone)
    march_1 = datetime.date(2026, 3, 1)
    AgentSessionFactory.create(
        created_by=alice,
        cost=D("1"),
        created_at=datetime.datetime(2026, 3, 1, 23, 30, tzinfo=local),
    )
    AgentSessionFactory.create(
        created_by=alice,
        cost=D("2"),
        created_at=datetime.datetime(2026, 3, 2, 0, 30, tzinfo=local),
    )
    AgentSessionFactory.create(
        created_by=alice,
        cost=D("4"),
        created_at=datetime.datetime(2026, 2, 28, 23, 59, tzinfo=local),
    )

    by_day = spend_by("day", user=alice, start=march_1, end=march_1.replace(day=2))
    first_day = spend_by("prompt", user=alice, start=march_1, end=march_1)

    assert rows_of(by_day) == {
        "2026-03-01": (D("1"), 1, 0),
        "2026-03-02": (D("2"), 1, 0),
    }
    assert (first_day.total, first_day.count) == (D("1"), 1)


def test_spend_sums_are_exact_to_ten_places(people):
    """Ten sessions of 0.1 and three of a ten-billionth: binary floating point
    would make 0.9999999999999999 and 3.0000000000000004e-10."""
    alice = people[0]
    for _ in range(10):
        AgentSessionFactory.create(
            created_by=alice, prompt_ref="a/tenths", cost=D("0.1"), created_at=at(TODAY)
        )
    for _ in range(3):
        AgentSessionFactory.create(
            created_by=alice,
            prompt_ref="a/tiny",
            cost=D("0.0000000001"),
            created_at=at(TODAY),
        )

    spend = spend_by("prompt", user=alice, start=TODAY, end=TODAY)

    assert rows_of(spend) == {
        "a/tenths": (D("1.0000000000"), 10, 0),
        "a/tiny": (D("0.0000000003"), 3, 0),
    }
    assert spend.total == D("1.0000000003")
    assert {row.cost.as_tuple().exponent for row in spend.rows} == {-10}
    assert spend_by("day", user=alice, start=TODAY, end=TODAY).total == spend.total


def test_other_row_of_a_user_folds_only_their_own_groups(people):
    """Bob's many prompts are not in alice's window sums: no "other" row,
    one group, her total."""
    alice, bob, _ = people
    AgentSessionFactory.create(created_by=alice, cost=D("0.5"), created_at=at(TODAY))
    for index in range(TOP_GROUPS + 5):
        AgentSessionFactory.create(
            created_by=bob,
            prompt_ref=f"bob/{index}",
            cost=D("3"),
            created_at=at(TODAY),
        )

    for group in ("prompt", "model", "user"):
        spend = spend_by(group, user=alice, start=TODAY, end=TODAY)
        assert [row.kind for row in spend.rows] == ["group"], group
        assert (spend.groups, spend.total, spend.count) == (1, D("0.5"), 1), group
