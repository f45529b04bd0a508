"""Seed the demo catalog, record demo sessions and (DEBUG only) two demo
accounts: a superuser, who is also an approver (the demo/ship session waits
for one), and a second approver, who may approve the superuser's own runs of
demo/ship (its production deploy is under four eyes: whoever started a run
may not approve it)."""

from __future__ import annotations

import os
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand

from sessions_app import services
from sessions_app.models import AgentSession
from tooling.demo import seed_demo_catalog


class Command(BaseCommand):
    help = "Create the demo catalog and demo sessions (idempotent)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--no-sessions", action="store_true", help="Only seed the catalog."
        )

    def handle(self, *args: Any, no_sessions: bool, **options: Any) -> None:
        prompts = seed_demo_catalog()
        self.stdout.write(f"Demo catalog ready: {', '.join(p.ref for p in prompts)}")
        if settings.DEBUG:
            # First: the approvers the demo/ship session notifies.
            self._demo_superuser()
            self._demo_approver()
        if not no_sessions:
            for prompt in prompts:
                if AgentSession.objects.filter(prompt=prompt).exists():
                    continue
                session = services.start_session(prompt_ref=prompt.ref, params={})
                self.stdout.write(
                    f"Recorded demo session {session.pk} ({prompt.ref}): "
                    f"{session.status}"
                )

    def _demo_superuser(self) -> None:
        username = os.environ.get("WINK_DEMO_USERNAME", "admin")
        password = os.environ.get("WINK_DEMO_PASSWORD", "admin")
        user_model = get_user_model()
        user = user_model.objects.filter(username=username).first()
        if user is None:
            user = user_model.objects.create_superuser(
                username, "admin@example.invalid", password
            )
            self.stdout.write(
                self.style.WARNING(
                    f"Demo superuser (DEBUG only): username '{username}', "
                    f"password '{password}'"
                )
            )
        else:
            self.stdout.write(f"Demo superuser '{username}' already exists.")
        # Superusers may decide any approval; in the group it is plain to see.
        self._join_approvers(user)

    def _demo_approver(self) -> None:
        """A second person, in the Approvers group and nothing more: under four
        eyes they approve what the demo superuser started."""
        username = os.environ.get("WINK_DEMO_APPROVER_USERNAME", "approver")
        password = os.environ.get("WINK_DEMO_APPROVER_PASSWORD", "approver")
        user_model = get_user_model()
        user = user_model.objects.filter(username=username).first()
        if user is None:
            user = user_model.objects.create_user(
                username, f"{username}@example.invalid", password
            )
            self.stdout.write(
                self.style.WARNING(
                    f"Demo approver (DEBUG only): username '{username}', "
                    f"password '{password}'"
                )
            )
        else:
            self.stdout.write(f"Demo approver '{username}' already exists.")
        self._join_approvers(user)

    def _join_approvers(self, user: Any) -> None:
        approvers = Group.objects.filter(name="Approvers").first()
        if approvers is not None:
            user.groups.add(approvers)
