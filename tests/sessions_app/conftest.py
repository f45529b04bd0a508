"""Fixtures of the approval tests (test_approvals.py, test_approval_rules.py,
test_approval_races.py) and of the read-only tool and start tests
(test_store_runs.py, test_start_query.py); a module's own fixture of the
same name wins (as in test_approval_inbox.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Permission

from sessions_app import services
from sessions_app.models import AgentSession
from tests.sessions_app import lookup_setup
from tests.sessions_app.approval_setup import PROMPT, add_approval
from tests.sessions_app.factories import UserFactory


@pytest.fixture
def approver(db: Any) -> Any:
    """alice, who holds ``decide_any_approval``."""
    user = UserFactory.create(username="alice")
    user.user_permissions.add(Permission.objects.get(codename="decide_any_approval"))
    return UserFactory._meta.model.objects.get(pk=user.pk)  # fresh permission cache


@pytest.fixture
def paused(django_capture_on_commit_callbacks: Any) -> AgentSession:
    """A run of the release prompt, paused on its ``deploy``."""
    add_approval()
    author = UserFactory.create(username="author")
    with django_capture_on_commit_callbacks(execute=True):
        session = services.start_session(prompt_ref=PROMPT, user=author)
    return session


@pytest.fixture
def lookup_and_act(db: Any) -> Iterator[str]:
    """A prompt offering ``lookup`` (read-only) and ``act`` (lookup_setup.py)."""
    ref = lookup_setup.add_prompt()
    yield ref
    lookup_setup.remove_handlers()
