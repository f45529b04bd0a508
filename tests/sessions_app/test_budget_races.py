"""Simultaneous starts share what is left of a daily budget (issue #24): each
reads the day and writes its session under a lock on the user's row
(``budgets.reserving``), so 20 starts at once are given the limit between
them, not the whole remainder each; runs that spend it overspend the day by
one request at most. Threads, each with its own connection, as web workers
are: PostgreSQL in the test database, SQLite in a file (another process:
the in-memory test database locks tables between threads)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import threading
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.db import connection

from sessions_app import services
from sessions_app.costs import budgets
from sessions_app.models import AgentSession, ProviderCall
from sessions_app.runs import dispatch
from tests.sessions_app import lookup_setup
from tests.sessions_app.factories import UserFactory
from tests.sessions_app.test_budgets import prompt
from tooling.assembly import pricing as sheets
from tooling.models import UserBudget
from tooling.offline import ScriptedModel, offline_transport, parallel_calls_script
from tooling.offline.response import token_usage

ROOT = Path(__file__).resolve().parents[2]
D = Decimal
STARTS = 20
LIMIT = D(1)
REFUSED = "your runs in progress may spend"


@pytest.fixture
def prices() -> None:
    """The seeded price list (a transactional test starts without it)."""
    importlib.import_module("tooling.migrations.0011_seed_prices").seed(apps, None)
    sheets.clear_cache()


def start_together(*, template_budget: Decimal | None, inline: bool) -> list[Any]:
    """``STARTS`` starts by one user with a ``LIMIT`` a day, at once (one
    thread and connection each): each one's session, or its refusal."""
    user = UserFactory.create()
    UserBudget.objects.create(user=user, daily_limit=LIMIT)
    ref = prompt(max_cost_per_session=template_budget).ref
    barrier = threading.Barrier(STARTS)
    results: list[Any] = []
    lock = threading.Lock()

    def start() -> None:
        try:
            barrier.wait(timeout=60)
            try:
                result: Any = services.start_session(
                    prompt_ref=ref, user=user, client=expensive() if inline else None
                )
            except budgets.DailyBudgetExceeded as refused:
                result = refused
            with lock:
                results.append(result)
        finally:
            connection.close()

    threads = [threading.Thread(target=start) for _ in range(STARTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert len(results) == STARTS
    return results


def expensive() -> Any:
    """A provider whose one answer costs $0.40 (1,000 input and 39,875
    output tokens of gpt-5.4: $0.00125 + $0.39875)."""
    answer = parallel_calls_script(0, 1, "none")

    def script(request: dict[str, Any]) -> dict[str, Any]:
        return {**answer(request), "usage": token_usage(1000, 39875)}

    return lookup_setup.client(offline_transport(ScriptedModel(script=script)))


def queued(monkeypatch: Any) -> None:
    """Starts are queued for a worker (none runs them here)."""
    monkeypatch.setattr(dispatch, "runs_inline", lambda: False)
    monkeypatch.setattr(dispatch, "dispatch_run", lambda pk, *, deadline_seconds: True)


def budgets_given(results: list[Any]) -> list[Decimal]:
    """The ``cost_budget`` of each session started, largest first."""
    sessions = [r for r in results if isinstance(r, AgentSession)]
    given = [s.cost_budget for s in sessions if s.cost_budget is not None]
    assert len(given) == len(sessions)  # a daily limit gives every run one
    return sorted(given, reverse=True)


def refusals(results: list[Any]) -> list[str]:
    return [r.message for r in results if isinstance(r, budgets.DailyBudgetExceeded)]


postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="threads on the test database: PostgreSQL (SQLite: the file variant)",
)


@postgresql
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("prices")
def test_simultaneous_starts_share_what_is_left_of_the_day(monkeypatch):
    queued(monkeypatch)
    results = start_together(template_budget=D("0.3"), inline=False)
    # $1 between them: three runs of their template's $0.30, one of the $0.10
    # left; the others are refused while those are in flight
    assert budgets_given(results) == [D("0.3"), D("0.3"), D("0.3"), D("0.1")]
    assert sum(budgets_given(results)) == LIMIT
    assert len(refusals(results)) == STARTS - 4
    assert all(REFUSED in message for message in refusals(results))
    assert AgentSession.objects.count() == 4


@postgresql
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("prices")
def test_simultaneous_runs_overspend_the_day_by_one_request_at_most():
    # no template budget: a run is given all that is left, so runs happen one
    # after the other; each answer costs $0.40 and is kept even over its run's
    # budget (docs/costs.md): the day ends over $1 by one answer at most
    results = start_together(template_budget=None, inline=True)
    sessions = [r for r in results if isinstance(r, AgentSession)]
    assert sessions, refusals(results)
    worst = max(ProviderCall.objects.values_list("cost", flat=True))
    assert worst == D("0.4")
    spent = sum(AgentSession.objects.values_list("cost", flat=True))
    assert spent <= LIMIT + worst
    assert len(sessions) + len(refusals(results)) == STARTS


_SQLITE = """
import json

import django

django.setup()
from decimal import Decimal

from sessions_app.runs import dispatch
from tests.sessions_app import test_budget_races as races

# the prices are the migration's (0011); runs are queued, never run here
dispatch.runs_inline = lambda: False
dispatch.dispatch_run = lambda pk, *, deadline_seconds: True
results = races.start_together(template_budget=Decimal("0.3"), inline=False)
print(json.dumps([str(amount) for amount in races.budgets_given(results)]))
"""


def test_simultaneous_starts_share_the_day_on_sqlite(migrated_sqlite):
    env = {
        **{k: v for k, v in os.environ.items() if k != "WINK_CACHE_URL"},
        "DEBUG": "1",
        "DJANGO_SETTINGS_MODULE": "wink_project.settings",
        "DATABASE_URL": migrated_sqlite(),
    }
    result = subprocess.run(
        [sys.executable, "-c", _SQLITE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    given = [D(amount) for amount in json.loads(result.stdout.splitlines()[-1])]
    assert given == [D("0.3"), D("0.3"), D("0.3"), D("0.1")]
