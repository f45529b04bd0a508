"""Daily spend roll-ups: the cost page's sums, kept per closed day
(``sessions_app.costs.rollup`` writes them, ``sessions_app.costs.reports``
reads them; ADR 0027).

Derived data, never the record: a day's rows are recomputed from the session
rows whole (deleted and written again), and a day without its
``DailySpendDay`` is read from the rows instead.
"""

from __future__ import annotations

from decimal import Decimal

from django.db import models

DAY = "day"
MONTH = "month"
PERIODS = [(DAY, "Day"), (MONTH, "Month")]


class DailySpendDay(models.Model):
    """One local day (``day`` in ``zone``) whose spend is rolled up: the
    sessions created that day that had ended when it was computed, whose sums
    no longer change (a purge removes the mark: ``AgentSession.objects.purge``);
    the others are ``pending``.
    With ``period`` "month": the month starting on ``day``, summed from its
    days' rows once every day of it was rolled up."""

    zone = models.CharField(max_length=64)
    period = models.CharField(max_length=5, choices=PERIODS, default=DAY)
    day = models.DateField()
    sessions = models.PositiveIntegerField(default=0)
    pending = models.JSONField(
        default=list,
        blank=True,
        help_text="The ids of the day's sessions that had not ended: not in the "
        "sums; a report reads them from the rows, the next roll-up again.",
    )
    pending_count = models.PositiveIntegerField(default=0)
    computed_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["zone", "period", "day"], name="spend_day_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.period} {self.day.isoformat()} ({self.zone})"


class DailySpend(models.Model):
    """What one scope's sessions of one day spent, by one dimension's key.

    ``scope``: "*" for every session, or "u<id>" for one user's (the only
    other thing a user may see, ``sessions_app.access``). ``dimension``:
    "prompt", "model", "user" (key: the user's id, "" for none), "tool"
    (key: the tool's name, ``kind`` its kind) or "tokens" (the provider calls;
    key ""). ``count`` is sessions, or (tool, tokens) calls. ``period``:
    of one day, or of the month starting on ``day``."""

    zone = models.CharField(max_length=64)
    period = models.CharField(max_length=5, choices=PERIODS, default=DAY)
    day = models.DateField()
    scope = models.CharField(max_length=32)
    dimension = models.CharField(max_length=16)
    key = models.CharField(max_length=255, blank=True)
    kind = models.CharField(max_length=64, blank=True)
    cost = models.DecimalField(max_digits=30, decimal_places=10, default=Decimal(0))
    count = models.PositiveIntegerField(default=0)
    unpriced = models.PositiveIntegerField(default=0)

    class Meta:
        indexes = [
            models.Index(
                fields=["zone", "scope", "period", "dimension", "day"],
                name="spend_scope_day",
            ),
            models.Index(fields=["zone", "day"], name="spend_zone_day"),
        ]

    def __str__(self) -> str:
        return f"{self.day.isoformat()} {self.scope} {self.dimension} {self.key}"
