"""The retention command: the one sanctioned way to remove audit data."""

from __future__ import annotations

import getpass
import re
import uuid
from datetime import datetime, timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from sessions_app.costs.budgets import day_start
from sessions_app.models import AgentSession, SessionPurge

_DURATION = re.compile(r"^(?P<number>\d+)(?P<unit>[smhdw])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def cutoff_from(value: str, now: datetime) -> datetime:
    """``90d`` (s, m, h, d or w) before ``now``, or an ISO 8601 date-time."""
    match = _DURATION.fullmatch(value.strip())
    if match:
        unit = _UNITS[match["unit"]]
        try:
            return now - timedelta(**{unit: int(match["number"])})
        except (OverflowError, ValueError):  # before the year 1
            raise CommandError(
                f"--older-than {value.strip()} reaches before the year 1: nothing "
                "is that old (a date-time such as 2000-01-01T00:00:00Z purges "
                "everything created before it)."
            ) from None
    moment = parse_datetime(value.strip())
    if moment is None:
        raise CommandError(
            f"--older-than {value!r} is neither a duration such as 90d, 12h or 30m "
            "nor an ISO 8601 date-time such as 2026-01-01T00:00:00Z."
        )
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment, timezone.get_default_timezone())
    return moment


class Command(BaseCommand):
    help = (
        "Delete whole finished sessions (with every audit row) created before a "
        "cutoff, and record each batch as a SessionPurge. Queued and running "
        "sessions are never purged."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--older-than",
            required=True,
            help="A duration (90d, 12h, 30m, 2w) or an ISO 8601 date-time.",
        )
        parser.add_argument(
            "--status",
            action="append",
            choices=sorted(str(status) for status in AgentSession.TERMINAL),
            help="Only sessions with this status (repeatable; default: every "
            "finished status).",
        )
        parser.add_argument("--batch-size", type=int, default=500)
        parser.add_argument(
            "--dry-run", action="store_true", help="Count, delete nothing."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        now = timezone.now()
        cutoff = cutoff_from(options["older_than"], now)
        if cutoff > now:
            raise CommandError("--older-than must be in the past.")
        today = day_start(now)
        if cutoff > today:
            # today's spend is read from its sessions: deleting them handed
            # their users back the daily budget they had spent
            self.stdout.write(
                f"Sessions created today are kept: they count against the users' "
                f"daily budgets. Purging those created before "
                f"{today.isoformat()}."
            )
            cutoff = today
        statuses = sorted(options["status"] or AgentSession.TERMINAL)
        batch_size = options["batch_size"]
        if batch_size < 1:
            raise CommandError("--batch-size must be at least 1.")
        eligible = AgentSession.objects.filter(
            created_at__lt=cutoff, status__in=statuses
        ).order_by("created_at")
        if options["dry_run"]:
            count = eligible.count()
            self.stdout.write(
                f"{count} session(s) created before {cutoff.isoformat()} would be "
                "purged."
            )
            return
        run_id = uuid.uuid4()
        purged = 0
        while ids := list(eligible.values_list("pk", flat=True)[:batch_size]):
            with transaction.atomic():
                _total, per_model = AgentSession.objects.filter(pk__in=ids).purge()
                SessionPurge.objects.create(
                    run_id=run_id,
                    older_than=cutoff,
                    statuses=statuses,
                    session_count=len(ids),
                    session_ids=[str(pk) for pk in ids],
                    row_counts=per_model,
                    requested_by=_who(),
                )
            purged += len(ids)
        self.stdout.write(
            self.style.SUCCESS(
                f"Purged {purged} session(s) created before {cutoff.isoformat()} "
                f"(purge run {run_id})."
            )
        )


def _who() -> str:
    try:
        return getpass.getuser()[:200]
    except Exception:  # no user name in this environment (a container)
        return ""
