"""Roll the closed days' spend up (``sessions_app.costs.rollup``)."""

from __future__ import annotations

import datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from sessions_app.costs import rollup
from sessions_app.costs.ranges import EARLIEST, LATEST


def _day(text: str) -> datetime.date:
    try:
        day = datetime.date.fromisoformat(text)
    except ValueError:
        raise CommandError(f"Not a date (YYYY-MM-DD): {text!r}.") from None
    # The days cost reports cover; at the calendar's ends a day's bounds
    # (and the rows' slack before them) overflow datetime.
    if not EARLIEST <= day <= LATEST:
        raise CommandError(
            f"{text} is outside the days cost reports cover: from "
            f"{EARLIEST.isoformat()} to {LATEST.isoformat()}."
        )
    return day


class Command(BaseCommand):
    help = (
        "Roll up the spend of every closed day (in TIME_ZONE) not rolled up yet, "
        "from the first session on, and every month whose days all are, so the "
        "cost page and /api/costs/ read a few sums per day or month. A session "
        "not ended yet is left out (reports read it from the rows) and its day "
        "rolled up again at the next run. --day recomputes the given days whole "
        "(idempotent). Celery beat runs the same every WINK_SPEND_ROLLUP_INTERVAL "
        "seconds."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--day",
            action="append",
            default=[],
            help=(
                "A day (YYYY-MM-DD, from "
                f"{EARLIEST.isoformat()} to {LATEST.isoformat()}) to roll up "
                "again; repeat for more."
            ),
        )
        parser.add_argument(
            "--limit",
            type=int,
            default=rollup.MAX_DAYS_PER_RUN,
            help="At most this many days (the oldest first).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["limit"] < 1:
            raise CommandError("--limit must be at least 1.")
        days = [_day(text) for text in options["day"]] or None
        report = rollup.roll_up(days, limit=options["limit"])
        for day in report.skipped:
            self.stdout.write(f"{day.isoformat()}: not over yet; read from the rows")
        for day in report.pending:
            self.stdout.write(
                f"{day.isoformat()}: sessions not ended, read from the rows"
            )
        self.stdout.write(self.style.SUCCESS(str(report)))
