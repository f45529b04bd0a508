"""``sessions_app.costs.ranges``: the date range a cost report covers, from
what a request typed; its bounds in the current time zone (or naive without
``USE_TZ``). No database."""

from __future__ import annotations

import datetime
import zoneinfo

import pytest

from sessions_app.costs.ranges import (
    EARLIEST,
    DateRange,
    InvalidRange,
    date_range,
    default_range,
)

TODAY = datetime.date(2026, 3, 15)


def test_date_range_defaults_to_the_last_thirty_days_today_included():
    period = date_range(start=None, end=None, today=TODAY)

    assert (period.start, period.end) == (datetime.date(2026, 2, 14), TODAY)
    assert period.days == 30


def test_date_range_with_only_to_is_the_thirty_days_ending_then():
    period = date_range(start=None, end="2026-01-31", today=TODAY)

    assert (period.start, period.end) == (
        datetime.date(2026, 1, 2),
        datetime.date(2026, 1, 31),
    )


def test_date_range_with_only_from_runs_to_today():
    period = date_range(start="2026-03-01", end=None, today=TODAY)

    assert (period.start, period.end) == (datetime.date(2026, 3, 1), TODAY)


@pytest.mark.parametrize(
    ("start", "end", "field", "message"),
    [
        ("yesterday", None, "from", "Enter 'from' as a date, YYYY-MM-DD."),
        ("2026-02-30", None, "from", "'from' is not a date of the calendar."),
        (None, "2026-1-5", "to", "Enter 'to' as a date, YYYY-MM-DD."),
        ("2026-03-01\x00", None, "from", "Enter 'from' as a date, YYYY-MM-DD."),
        ("\ud800", None, "from", "Enter 'from' as a date, YYYY-MM-DD."),
        ("0001-01-01", None, "from", "'from' must be between 2000-01-01 and "),
        (None, "9999-12-31", "to", "'to' must be between 2000-01-01 and "),
        ("2026-03-02", "2026-03-01", "range", "'from' must be on or before 'to'."),
        ("2024-01-01", "2025-12-31", "range", "A report covers at most 366 days."),
        ("9" * 5000, None, "from", "Enter 'from' as a date"),
        # Fullwidth and Arabic-Indic digits: not ASCII, so not "YYYY-MM-DD".
        (
            "\uff12\uff10\uff12\uff16-\uff10\uff13-\uff10\uff11",
            None,
            "from",
            "Enter 'from' as a date, YYYY-MM-DD.",
        ),
        (
            "\u0662\u0660\u0662\u0666-\u0660\u0663-\u0660\u0661",
            None,
            "from",
            "Enter 'from' as a date, YYYY-MM-DD.",
        ),
        (" ", None, "from", "Enter 'from' as a date, YYYY-MM-DD."),
    ],
)
def test_date_range_refuses_bad_input_with_a_message(start, end, field, message):
    with pytest.raises(InvalidRange) as raised:
        date_range(start=start, end=end, today=TODAY)

    assert str(raised.value).startswith(message)
    assert raised.value.field == field


def test_date_range_with_only_to_starts_no_earlier_than_the_earliest_date():
    period = date_range(start=None, end="2000-01-10", today=TODAY)

    assert (period.start, period.end) == (EARLIEST, datetime.date(2000, 1, 10))


def test_date_range_with_only_from_covers_at_most_a_year():
    period = date_range(start="2020-01-01", end=None, today=TODAY)

    assert (period.start, period.end) == (
        datetime.date(2020, 1, 1),
        datetime.date(2020, 12, 31),
    )
    assert period.days == 366


@pytest.mark.parametrize(
    ("zone", "offset"),
    [("America/New_York", -5), ("Asia/Tokyo", 9), ("Pacific/Kiritimati", 14)],
)
def test_date_range_bounds_are_the_local_days_edges(settings, zone, offset):
    settings.TIME_ZONE = zone
    period = DateRange(datetime.date(2026, 3, 1), datetime.date(2026, 3, 2))

    low, high = period.bounds()

    utc = datetime.UTC
    assert low.astimezone(utc) == datetime.datetime(2026, 3, 1, tzinfo=utc) - (
        datetime.timedelta(hours=offset)
    )
    assert high.astimezone(utc) == datetime.datetime(2026, 3, 3, tzinfo=utc) - (
        datetime.timedelta(hours=offset)
    )
    assert low.tzinfo == zoneinfo.ZoneInfo(zone)


def test_date_range_bounds_across_a_daylight_saving_change(settings):
    """The day clocks go forward has 23 hours: its edges are local midnights."""
    settings.TIME_ZONE = "Europe/Paris"

    low, high = DateRange(
        datetime.date(2026, 3, 29), datetime.date(2026, 3, 29)
    ).bounds()

    utc = datetime.UTC
    assert high.astimezone(utc) - low.astimezone(utc) == datetime.timedelta(hours=23)


def test_date_range_without_use_tz_is_naive_and_today_is_the_servers(settings):
    settings.USE_TZ = False

    low, high = DateRange(TODAY, TODAY).bounds()

    assert (low, high) == (
        datetime.datetime(2026, 3, 15),
        datetime.datetime(2026, 3, 16),
    )
    assert default_range().end == datetime.date.today()
