"""Daily spend roll-ups (``sessions_app.costs.rollup``, ADR 0027): the cost
reports read the rolled-up days from their sums and the others from the rows,
and every figure equals the rows' answer (``from_rows.spend_from_rows``) and the
rows' sums worked out in Python, exactly: on random data, for every group,
every kind of user and ranges across rolled-up and open days, in several time
zones, with a session whose rows straddle midnight, a user deleted and
sessions purged after the roll-up."""

from __future__ import annotations

import datetime
import random
import threading
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser, Group
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import DatabaseError, connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from sessions_app.costs import from_rows, reports, rolled_up, rollup, rollup_thread
from sessions_app.costs.ranges import DateRange, local_today
from sessions_app.costs.spend import GROUPS, PLACES
from sessions_app.models import (
    AgentSession,
    DailySpend,
    DailySpendDay,
    ProviderCall,
    ToolInvocation,
)
from sessions_app.runs import worker
from sessions_app.tasks import roll_up_spend_task
from tests.sessions_app.factories import (
    AgentSessionFactory,
    ProviderCallFactory,
    ToolInvocationFactory,
    UserFactory,
)
from wink_project import celery as celery_app

D = Decimal
S = AgentSession.Status
STATUSES = [S.SUCCEEDED, S.FAILED, S.CANCELLED, S.RUNNING, S.AWAITING_APPROVAL]
STATUS_WEIGHTS = [80, 8, 4, 4, 4]
ONE_DAY = datetime.timedelta(days=1)
DAYS = 12  # of history before today
PAGE = "/audit/costs/"


def at(day: datetime.date, hour: int, minute: int = 0) -> datetime.datetime:
    return timezone.make_aware(
        datetime.datetime.combine(day, datetime.time(hour, minute)),
        timezone.get_current_timezone(),
    )


def amount(rng: random.Random) -> Decimal:
    """Ten decimal places, never zero (no ties in the rankings)."""
    return D(rng.randint(1, 10**10)) / D(10**10)


@pytest.fixture
def people(db):
    alice = UserFactory.create(username="alice")
    bob = UserFactory.create(username="bob")
    carol = UserFactory.create(username="carol")
    auditor = UserFactory.create(username="auditor")
    auditor.groups.add(Group.objects.get(name="Auditors"))
    return {"alice": alice, "bob": bob, "carol": carol, "auditor": auditor}


def make_history(people, seed: int, days: int = DAYS, most: int = 6) -> None:
    """Sessions of the last ``DAYS`` days and today, by three users and by
    none, 14 prompts (more than ``TOP_GROUPS``), three models, native tools
    priced and not, provider calls priced and not; one session's rows are
    recorded after its day's midnight."""
    rng = random.Random(seed)
    today = local_today()
    owners = [people["alice"], people["bob"], people["carol"], None]
    prompts = [f"team{n % 3}/prompt-{n:02d}" for n in range(14)]
    for back in range(days, -1, -1):
        day = today - datetime.timedelta(days=back)
        for _ in range(rng.randint(0, most)):
            created = at(day, rng.randint(0, 23), rng.randint(0, 59))
            if back == 0 and created > timezone.now():
                created = timezone.now() - datetime.timedelta(seconds=1)
            session = AgentSessionFactory.create(
                status=rng.choices(STATUSES, STATUS_WEIGHTS)[0],
                created_by=rng.choice(owners),
                prompt_ref=rng.choice(prompts),
                model=rng.choice(["gpt-5.4", "gpt-4.1", ""]),
                cost=amount(rng),
                unpriced_calls=rng.randint(0, 3),
                created_at=created,
            )
            add_rows(session, rng, created)
    # A session at 23:50 whose rows are recorded after midnight: its day is
    # the session's, as the rows path counts it.
    late = today - datetime.timedelta(days=3)
    session = AgentSessionFactory.create(
        created_by=people["alice"],
        prompt_ref="team0/late",
        cost=D("0.3333333333"),
        created_at=at(late, 23, 50),
    )
    add_rows(session, rng, at(late + datetime.timedelta(days=1), 0, 20))


def end_all() -> None:
    """Every session not ended ends (as the lifecycle allows)."""
    AgentSession.objects.filter(status=S.AWAITING_APPROVAL).update(status=S.QUEUED)
    AgentSession.objects.filter(status=S.QUEUED).update(status=S.RUNNING)
    AgentSession.objects.filter(status=S.RUNNING).update(status=S.SUCCEEDED)


def add_rows(session: AgentSession, rng: random.Random, when: datetime.datetime):
    for _ in range(rng.randint(0, 3)):
        failed = rng.random() < 0.1  # no response: no cost, not unpriced
        ProviderCallFactory.create(
            session=session,
            cost=None if failed or rng.random() < 0.2 else amount(rng),
            response=None if failed else {"id": "resp_1", "output": []},
            created_at=when,
        )
    for _ in range(rng.randint(0, 3)):
        name = rng.choice(["web_search", "file_search", "image_generation"])
        ToolInvocationFactory.create(
            session=session,
            web_search=True,
            name=name,
            kind=name if rng.random() < 0.8 else "mcp",
            cost=None if rng.random() < 0.25 else amount(rng),
            created_at=when,
        )
    if rng.random() < 0.3:
        ToolInvocationFactory.create(session=session, created_at=when)  # local


def viewers(people):
    return [
        people["auditor"],
        people["alice"],
        people["bob"],
        people["carol"],
        AnonymousUser(),
    ]


def ranges_of(
    rng: random.Random, days: int = DAYS
) -> list[tuple[datetime.date, datetime.date]]:
    today = local_today()
    first = today - datetime.timedelta(days=days + 2)
    chosen = [
        (first, today),  # every day, rolled up and open
        (today, today),  # only the open day
        (today - datetime.timedelta(days=1), today - datetime.timedelta(days=1)),
        (first, today - datetime.timedelta(days=1)),  # only rolled-up days
    ]
    for _ in range(4):
        a, b = sorted(
            first + datetime.timedelta(days=rng.randint(0, days + 2)) for _ in range(2)
        )
        chosen.append((a, b))
    return chosen


def assert_same_as_rows(people, seed: int, days: int = DAYS) -> None:
    rng = random.Random(seed)
    for user in viewers(people):
        for start, end in ranges_of(rng, days):
            for group in GROUPS:
                expected = from_rows.spend_from_rows(
                    group, user=user, start=start, end=end
                )
                got = reports.spend_by(group, user=user, start=start, end=end)
                assert got == expected, (group, user, start, end)
            together = reports.spend_report(GROUPS, user=user, start=start, end=end)
            assert together == [
                from_rows.spend_from_rows(group, user=user, start=start, end=end)
                for group in GROUPS
            ]


def python_sums(user, start, end) -> tuple[Decimal, int, int, Decimal]:
    """The sessions' total, count and unpriced calls, and the calls' and
    native fees' total, summed in Python from the rows."""
    low, high = DateRange(start, end).bounds()
    sessions = AgentSession.objects.visible_to(user).filter(
        created_at__gte=low, created_at__lt=high
    )
    total = sum((s.cost for s in sessions), D(0))
    unpriced = sum(s.unpriced_calls for s in sessions)
    calls = ProviderCall.objects.filter(session__in=sessions)
    tools = ToolInvocation.objects.filter(session__in=sessions, native=True)
    fees = sum((r.cost or D(0) for r in [*calls, *tools]), D(0))
    return total, sessions.count(), unpriced, fees


@pytest.mark.parametrize(
    ("zone", "seed"), [("UTC", 1), ("America/New_York", 2), ("Asia/Kolkata", 3)]
)
def test_roll_ups_answer_exactly_what_the_rows_do(settings, people, zone, seed):
    settings.TIME_ZONE = zone
    timezone.activate(zone)
    try:
        make_history(people, seed)
        report = rollup.roll_up()
        first = AgentSession.objects.order_by("created_at").first()
        assert first is not None
        closed = (rollup.last_closed_day() - rollup.local_date(first.created_at)).days
        assert len(report.rolled_up) == closed + 1  # every closed day
        assert DailySpend.objects.exists()
        assert not DailySpendDay.objects.filter(day=local_today()).exists()
        assert_same_as_rows(people, seed)

        # The sessions not ended go on: more rows, a new cost, some end. The
        # rolled-up days left them out; the reports read them from the rows.
        rng = random.Random(seed)
        for session in AgentSession.objects.filter(status__in=rollup.OPEN_STATUSES):
            add_rows(session, rng, timezone.now())
            if session.status == S.AWAITING_APPROVAL:
                AgentSession.objects.filter(pk=session.pk).update(status=S.QUEUED)
                AgentSession.objects.filter(pk=session.pk).update(status=S.RUNNING)
            ended = rng.random() < 0.5
            AgentSession.objects.filter(pk=session.pk).update(
                cost=session.cost + amount(rng),
                status=S.SUCCEEDED if ended else S.RUNNING,
            )
        assert_same_as_rows(people, seed)
        rollup.roll_up()  # the days with pending sessions again
        assert_same_as_rows(people, seed)
        today = local_today()
        start = today - datetime.timedelta(days=DAYS)
        for user in viewers(people):
            total, count, unpriced, fees = python_sums(user, start, today)
            by_prompt = reports.spend_by("prompt", user=user, start=start, end=today)
            by_tool = reports.spend_by("tool", user=user, start=start, end=today)
            assert (by_prompt.total, by_prompt.count, by_prompt.unpriced) == (
                total.quantize(PLACES),
                count,
                unpriced,
            )
            assert by_tool.total == fees.quantize(PLACES)
    finally:
        timezone.deactivate()


def test_reports_read_the_roll_ups_not_the_sessions(people):
    """A rolled-up day is answered from its sums: proven by changing them."""
    make_history(people, 4)
    rollup.roll_up()
    day = local_today() - datetime.timedelta(days=3)  # the late session's
    rows = DailySpend.objects.filter(day=day, scope=rollup.EVERYONE, dimension="model")
    assert rows.exists()
    rows.update(cost=D("1000"))
    spend = reports.spend_by("model", user=people["auditor"], start=day, end=day)
    pending = AgentSession.objects.filter(
        pk__in=DailySpendDay.objects.get(period="day", day=day).pending
    )
    live = sum((session.cost for session in pending), D(0))  # not ended
    assert spend.total == D(1000) * rows.count() + live


def test_a_session_still_running_is_left_out_and_read_from_the_rows(people):
    day = local_today() - datetime.timedelta(days=2)
    running = AgentSessionFactory.create(
        created_by=people["alice"],
        status=AgentSession.Status.AWAITING_APPROVAL,
        cost=D("0.25"),
        created_at=at(day, 10),
    )
    AgentSessionFactory.create(
        created_by=people["bob"], cost=D("0.5"), created_at=at(day, 11)
    )
    assert rollup.roll_up_day(day) is True
    mark = DailySpendDay.objects.get(day=day)
    assert (mark.pending, mark.pending_count) == ([str(running.pk)], 1)
    assert rollup.roll_up([day]).pending == (day,)
    assert day in rollup.days_to_roll_up()  # again at every run
    spend = reports.spend_by("user", user=people["auditor"], start=day, end=day)
    assert spend.total == D("0.75")  # bob's rolled up, alice's from the rows

    # It goes on after the day and spends more; then ends: the day rolls up.
    AgentSession.objects.filter(pk=running.pk).update(status=AgentSession.Status.QUEUED)
    AgentSession.objects.filter(pk=running.pk).update(
        status=AgentSession.Status.RUNNING
    )
    AgentSession.objects.filter(pk=running.pk).update(
        status=AgentSession.Status.SUCCEEDED, cost=D("0.75")
    )
    spend = reports.spend_by("user", user=people["auditor"], start=day, end=day)
    assert spend.total == D("1.25")
    assert rollup.roll_up_day(day) is True
    assert DailySpendDay.objects.get(day=day).pending == []
    assert day not in rollup.days_to_roll_up()
    spend = reports.spend_by("user", user=people["auditor"], start=day, end=day)
    assert spend.total == D("1.25")
    assert {row.key: row.cost for row in spend.rows} == {
        "alice": D("0.75"),
        "bob": D("0.5"),
    }


def test_a_rolled_up_day_with_a_session_not_ended_is_read_from_the_rows(people):
    """A guard: a rolled-up day's sessions had all ended, and an ended session
    never runs again (the database refuses the move); should one not have
    ended all the same (loaded into the past), the rows answer for its day."""
    day = local_today() - datetime.timedelta(days=2)
    AgentSessionFactory.create(
        created_by=people["alice"], cost=D("0.25"), created_at=at(day, 10)
    )
    rollup.roll_up_day(day)
    AgentSessionFactory.create(
        created_by=people["alice"],
        status=AgentSession.Status.RUNNING,
        cost=D("0.5"),
        created_at=at(day, 11),
    )
    spend = reports.spend_by("prompt", user=people["alice"], start=day, end=day)
    assert (spend.total, spend.count) == (D("0.75"), 2)


def test_today_and_future_days_are_never_rolled_up(people):
    today = local_today()
    AgentSessionFactory.create(created_by=people["alice"], cost=D("0.1"))
    assert rollup.roll_up_day(today) is False
    assert rollup.roll_up_day(today + datetime.timedelta(days=3)) is False
    assert rollup.days_to_roll_up() == []
    assert not DailySpendDay.objects.exists()


def test_rolling_up_again_is_idempotent(people):
    make_history(people, 5)
    end_all()
    rollup.roll_up()
    before = sorted(
        DailySpend.objects.values_list(
            "day", "scope", "dimension", "key", "kind", "cost", "count", "unpriced"
        )
    )
    again = rollup.roll_up(sorted(DailySpendDay.objects.values_list("day", flat=True)))
    assert not again.skipped
    after = sorted(
        DailySpend.objects.values_list(
            "day", "scope", "dimension", "key", "kind", "cost", "count", "unpriced"
        )
    )
    assert after == before
    assert rollup.roll_up().rolled_up == ()  # nothing left to do


def test_a_day_that_fails_is_left_to_the_rows_and_the_others_roll_up(
    people, monkeypatch, caplog
):
    make_history(people, 5)
    end_all()
    days = rollup.days_to_roll_up()
    assert len(days) >= 3
    broken = days[1]
    real = rollup.roll_up_day

    def failing(day):
        if day == broken:
            raise DatabaseError("too many SQL variables")
        return real(day)

    monkeypatch.setattr(rollup, "roll_up_day", failing)
    report = rollup.roll_up()
    assert broken in report.skipped
    assert set(report.rolled_up) == set(days) - {broken}
    assert f"Rolling up the spend of {broken} failed" in caplog.text
    # the day stays to be rolled up, and its spend is read from the rows
    monkeypatch.setattr(rollup, "roll_up_day", real)
    assert rollup.days_to_roll_up() == [broken]


def test_a_user_deleted_after_the_roll_up_counts_as_no_user(people):
    make_history(people, 6)
    rollup.roll_up()
    people["bob"].delete()
    assert_same_as_rows(people | {"bob": AnonymousUser()}, 6)
    spend = reports.spend_by(
        "user",
        user=people["auditor"],
        start=local_today() - datetime.timedelta(days=DAYS),
        end=local_today(),
    )
    assert "bob" not in {row.key for row in spend.rows}


def test_a_purge_forgets_the_days_it_touches(people):
    make_history(people, 7)
    rollup.roll_up()
    day = local_today() - datetime.timedelta(days=5)
    AgentSessionFactory.create(
        created_by=people["alice"], cost=D("0.7"), created_at=at(day, 9)
    )
    rollup.roll_up_day(day)
    low, high = DateRange(day, day).bounds()
    AgentSession.objects.filter(created_at__gte=low, created_at__lt=high).purge()

    assert not DailySpendDay.objects.filter(day=day).exists()
    assert not DailySpend.objects.filter(day=day).exists()
    assert DailySpendDay.objects.filter(
        day__lt=day - datetime.timedelta(days=1)
    ).exists()
    assert_same_as_rows(people, 7)
    spend = reports.spend_by("day", user=people["auditor"], start=day, end=day)
    assert (spend.total, spend.count) == (D(0), 0)


def test_a_roll_up_of_another_time_zone_is_not_read(settings, people):
    make_history(people, 8)
    rollup.roll_up()  # UTC, the test settings' zone
    assert set(DailySpendDay.objects.values_list("zone", flat=True)) == {"UTC"}
    settings.TIME_ZONE = "Pacific/Auckland"
    timezone.activate("Pacific/Auckland")
    try:
        assert_same_as_rows(people, 8)
    finally:
        timezone.deactivate()


def test_the_command_and_the_task_roll_up_the_closed_days(people, capsys):
    make_history(people, 9)
    end_all()
    call_command("roll_up_spend", "--limit", "3")
    assert DailySpendDay.objects.count() == 3
    assert "Rolled up 3 day(s)" in capsys.readouterr().out
    result = roll_up_spend_task()
    assert result["rolled_up"]
    assert rollup.days_to_roll_up() == []
    day = DailySpendDay.objects.order_by("day").first()
    assert day is not None
    call_command("roll_up_spend", "--day", day.day.isoformat())
    assert "Rolled up 1 day(s)" in capsys.readouterr().out
    assert_same_as_rows(people, 9)


def test_the_command_refuses_a_bad_day(db):
    with pytest.raises(CommandError, match="Not a date"):
        call_command("roll_up_spend", "--day", "yesterday")


@pytest.mark.parametrize(
    "day", ["0001-01-01", "0001-01-02", "1999-12-31", "9001-01-01", "9999-12-31"]
)
def test_the_command_refuses_a_day_outside_the_reports_range(
    db: None, day: str
) -> None:
    with pytest.raises(
        CommandError,
        match=f"{day} is outside the days cost reports cover: "
        "from 2000-01-01 to 9000-12-31",
    ):
        call_command("roll_up_spend", "--day", day)
    assert not DailySpendDay.objects.exists()


def test_the_command_rolls_up_the_first_day_reports_cover(people: Any) -> None:
    AgentSessionFactory.create(
        created_by=people["alice"],
        cost=D("0.5"),
        created_at=at(datetime.date(2000, 1, 1), 0, 5),
    )
    call_command("roll_up_spend", "--day", "2000-01-01")
    mark = DailySpendDay.objects.get(day=datetime.date(2000, 1, 1))
    assert mark.sessions == 1


def test_days_before_the_reports_range_are_not_rolled_up(people: Any) -> None:
    AgentSessionFactory.create(
        created_by=people["alice"],
        cost=D("0.5"),
        created_at=at(datetime.date(1999, 12, 30), 12),
    )
    days = rollup.days_to_roll_up(limit=2)
    assert days == [datetime.date(2000, 1, 1), datetime.date(2000, 1, 2)]


def _page_queries(client, start, end) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(PAGE, {"from": start.isoformat(), "to": end.isoformat()})
    assert response.status_code == 200
    return len(captured.captured_queries)


def test_the_cost_page_reads_no_more_queries_over_a_year_than_over_a_month(people):
    """The rolled-up days cost their marks, a guard and one query for every
    breakdown (by day one more; by month, past two months, none), whatever
    their number; the open days' rows (here, today) one query for the
    sessions, two for the calls."""
    make_history(people, 10)
    rollup.roll_up()
    client = Client()
    client.force_login(people["auditor"])
    today = local_today()
    client.get(PAGE)  # warm: the session and user are read once per request
    one_day = _page_queries(client, today, today)
    month = _page_queries(client, today - datetime.timedelta(days=30), today)
    year = _page_queries(client, today - datetime.timedelta(days=365), today)
    assert year == month - 1  # by month: no read by day
    assert month <= one_day + 4  # the guard, two roll-up reads, the usernames


def test_a_worker_thread_rolls_up_at_once_and_a_failure_is_logged(monkeypatch, caplog):
    ran = threading.Event()

    def roll_up() -> rollup.RollUpReport:
        ran.set()
        return rollup.RollUpReport(rolled_up=(), skipped=())

    monkeypatch.setattr(rollup, "roll_up", roll_up)
    thread = rollup_thread.start_thread(3600)
    assert thread.daemon and thread.name == "wink-spend-rollup"
    assert ran.wait(30)  # the first run at once: the days since the last

    def broken() -> rollup.RollUpReport:
        raise RuntimeError("the database went away")

    monkeypatch.setattr(rollup, "roll_up", broken)
    assert rollup_thread.roll_up_once() is None  # no exception
    assert "Rolling up the spend failed; trying again at the next run" in caplog.text


def test_whole_months_are_summed_from_their_days_and_read_as_months(people):
    """Months whose days are all rolled up are summed (exactly) and read as
    one row per group; a day rolled up again, or purged, forgets its month."""
    make_history(people, 11, days=75, most=2)
    end_all()
    report = rollup.roll_up()
    assert report.months  # 75 days hold at least one whole month
    assert_same_as_rows(people, 11, days=75)
    month = report.months[0]
    last = rollup.month_days(month)[-1]
    auditor = people["auditor"]
    before = reports.spend_by("prompt", user=auditor, start=month, end=last)
    summed = DailySpend.objects.filter(
        period="month", day=month, scope=rollup.EVERYONE, dimension="prompt"
    )
    assert sum(row.cost for row in summed) == before.total
    # Read from the month's rows: proven by changing them.
    summed.update(cost=D(0))
    assert reports.spend_by("prompt", user=auditor, start=month, end=last).total == 0
    # Not for a range that holds only part of the month.
    part = reports.spend_by("prompt", user=auditor, start=month, end=last - ONE_DAY)
    assert part == from_rows.spend_from_rows(
        "prompt", user=auditor, start=month, end=last - ONE_DAY
    )

    assert rollup.roll_up_day(month + ONE_DAY)  # again: the month is forgotten
    assert not DailySpendDay.objects.filter(period="month", day=month).exists()
    assert reports.spend_by("prompt", user=auditor, start=month, end=last) == before
    assert rollup.roll_up().months == (month,)

    # A session of the month still running: left out of the day and the
    # month, read from the rows.
    AgentSessionFactory.create(
        created_by=people["bob"],
        status=S.RUNNING,
        cost=D("0.4444444444"),
        created_at=at(month + ONE_DAY, 8),
    )
    rollup.roll_up([month + ONE_DAY])
    assert rollup.roll_up().months == (month,)
    assert DailySpendDay.objects.filter(period="month", day=month).exists()
    total = reports.spend_by("prompt", user=auditor, start=month, end=last).total
    assert total == before.total + D("0.4444444444")
    assert_same_as_rows(people, 11, days=75)

    low, high = DateRange(last, last).bounds()
    AgentSession.objects.filter(created_at__gte=low, created_at__lt=high).purge()
    assert not DailySpendDay.objects.filter(period="month", day=month).exists()
    assert not DailySpend.objects.filter(period="month", day=month).exists()
    assert_same_as_rows(people, 11, days=75)


def test_a_year_of_months_and_days_answers_exactly_what_the_rows_do(people):
    """Over a year the reports read whole months, the days at the range's
    edges and the open ones; by month too (the page's breakdown past two
    months), in any range."""
    make_history(people, 12, days=400, most=1)
    report = rollup.roll_up()
    assert len(report.months) >= 11
    assert_same_as_rows(people, 12, days=400)
    today = local_today()
    year = (today - datetime.timedelta(days=365), today)
    for user in viewers(people):
        by_month = reports.spend_by("month", user=user, start=year[0], end=year[1])
        by_day = reports.spend_by("day", user=user, start=year[0], end=year[1])
        assert len(by_month.rows) in (12, 13)
        assert (by_month.total, by_month.count, by_month.unpriced) == (
            by_day.total,
            by_day.count,
            by_day.unpriced,
        )
        for row in by_month.rows:
            days = [day for day in by_day.rows if day.key.startswith(row.key)]
            assert row.cost == sum((day.cost for day in days), D(0))
            assert row.count == sum(day.count for day in days)


def test_days_left_to_the_rows_here_and_there_answer_exactly(people):
    """Sessions loaded into the past, not ended and not named by their day's
    mark, leave those days to the rows (the guard): the sealed days then come
    in many runs, read by their list."""
    make_history(people, 13, days=40, most=2)
    end_all()
    rollup.roll_up()
    today = local_today()
    scattered = [
        today - datetime.timedelta(days=back) for back in (3, 7, 12, 20, 26, 33)
    ]
    for day in scattered:
        AgentSessionFactory.create(
            created_by=people["carol"],
            status=S.RUNNING,
            cost=D("0.0101010101"),
            created_at=at(day, 12),
        )
    start = today - datetime.timedelta(days=40)
    sealed = rolled_up.sealed_days(DateRange(start, today))
    assert not sealed.days & set(scattered)
    assert "day__in" in str(rolled_up.days_filter(sealed.days, rolled_up.next_day))
    assert_same_as_rows(people, 13, days=40)
    for group in GROUPS:
        assert reports.spend_by(
            group, user=people["carol"], start=start, end=today
        ) == from_rows.spend_from_rows(
            group, user=people["carol"], start=start, end=today
        )


@pytest.mark.parametrize("sweeps", [True, False])
def test_a_worker_that_sweeps_on_a_thread_rolls_up_beside_it(
    settings, monkeypatch, sweeps
):
    settings.WINK_SPEND_ROLLUP_INTERVAL = 1234
    started: list[float] = []
    monkeypatch.setattr(
        worker, "start_sweeper", lambda pool: threading.Thread() if sweeps else None
    )
    monkeypatch.setattr(rollup_thread, "start_thread", started.append)

    class Pool:
        pass

    class Worker:
        pool = Pool()

    celery_app._start_sweeper(sender=Worker())
    assert started == ([1234.0] if sweeps else [])
