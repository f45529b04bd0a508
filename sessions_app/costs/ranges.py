"""The date range a cost report covers, from a request's ``from``/``to``.

A range is two local dates, both included; ``DateRange.bounds`` turns them
into the datetimes the ``created_at`` filters use, in the current time zone
(or naive, where ``USE_TZ`` is off, as the database then stores them). The
input is a query string anyone can type, so every refusal is an
``InvalidRange`` with a message a person can act on, never an exception a
view would turn into a 500: dates are ASCII ``YYYY-MM-DD`` between
``EARLIEST`` and ``LATEST`` (no datetime overflow at the edges), ``from`` on
or before ``to``, at most ``MAX_DAYS`` days.
"""

from __future__ import annotations

import dataclasses
import datetime
import re
from typing import Final

from django.conf import settings
from django.utils import timezone

#: The longest range a report covers (a year, leap day included).
MAX_DAYS: Final = 366
#: The default range: the last 30 days, today included.
DEFAULT_DAYS: Final = 30
#: Dates outside these are refused (no datetime overflow at the edges).
EARLIEST: Final = datetime.date(2000, 1, 1)
LATEST: Final = datetime.date(9000, 12, 31)

# ASCII digits only: ``\d`` would also match other scripts' digits (fullwidth,
# Arabic-Indic), which then fail as "not a date of the calendar".
_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


class InvalidRange(ValueError):
    """A ``from``/``to`` the report cannot use; the message says why and
    ``field`` names the parameter at fault ("from", "to", or "range")."""

    def __init__(self, message: str, *, field: str = "range") -> None:
        super().__init__(message)
        self.field = field


@dataclasses.dataclass(frozen=True, slots=True)
class DateRange:
    """Local dates, both included."""

    start: datetime.date
    end: datetime.date

    @property
    def days(self) -> int:
        return (self.end - self.start).days + 1

    def bounds(self) -> tuple[datetime.datetime, datetime.datetime]:
        """From the start of ``start`` to the start of the day after ``end``,
        aware in the current time zone (naive without ``USE_TZ``)."""
        low = datetime.datetime.combine(self.start, datetime.time.min)
        high = datetime.datetime.combine(
            self.end + datetime.timedelta(days=1), datetime.time.min
        )
        if not settings.USE_TZ:
            return low, high
        zone = timezone.get_current_timezone()
        return timezone.make_aware(low, zone), timezone.make_aware(high, zone)


def local_today() -> datetime.date:
    """Today in the current time zone (``localdate`` refuses naive time, which
    is all there is without ``USE_TZ``)."""
    return timezone.localdate() if settings.USE_TZ else datetime.date.today()


def default_range(today: datetime.date | None = None) -> DateRange:
    today = today or local_today()
    return DateRange(today - datetime.timedelta(days=DEFAULT_DAYS - 1), today)


def _date(name: str, raw: str) -> datetime.date:
    text = raw.strip()
    if not _ISO_DATE.fullmatch(text):
        raise InvalidRange(f"Enter '{name}' as a date, YYYY-MM-DD.", field=name)
    try:
        value = datetime.date.fromisoformat(text)
    except ValueError:
        raise InvalidRange(
            f"'{name}' is not a date of the calendar.", field=name
        ) from None
    if not EARLIEST <= value <= LATEST:
        raise InvalidRange(
            f"'{name}' must be between {EARLIEST.isoformat()} and "
            f"{LATEST.isoformat()}.",
            field=name,
        )
    return value


def date_range(
    *, start: str | None, end: str | None, today: datetime.date | None = None
) -> DateRange:
    """The range a request asks for (``from``/``to``, each optional).

    Neither: the last ``DEFAULT_DAYS`` days. Only ``to``: the ``DEFAULT_DAYS``
    days ending then (from ``EARLIEST`` at the earliest); only ``from``: from
    then to today (or ``MAX_DAYS`` later, if today is further). Raises
    ``InvalidRange`` with a message a person can act on.
    """
    default = default_range(today)
    low = _date("from", start) if start else None
    high = _date("to", end) if end else None
    if low is None and high is None:
        return default
    if low is None:
        assert high is not None
        low = max(EARLIEST, high - datetime.timedelta(days=DEFAULT_DAYS - 1))
    if high is None:
        high = min(max(default.end, low), low + datetime.timedelta(days=MAX_DAYS - 1))
    if low > high:
        raise InvalidRange("'from' must be on or before 'to'.")
    chosen = DateRange(low, high)
    if chosen.days > MAX_DAYS:
        raise InvalidRange(f"A report covers at most {MAX_DAYS} days.")
    return chosen
