"""Seed the demo catalog, record demo sessions and the demo experiment
(docs/experiments.md), and (DEBUG only) two demo
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
from sessions_app.experiments.demo import seed_demo_experiment
from sessions_app.models import AgentSession
from tooling import releases
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
        for prompt in prompts:
            if releases.seed_label(
                prompt,
                settings.WINK_DEFAULT_LABEL,
                note="The demo's first release: runs start from it; edits change "
                "the draft until released (docs/releases.md).",
            ):
                self.stdout.write(
                    f"Released {prompt.ref} as {settings.WINK_DEFAULT_LABEL}."
                )
        if not no_sessions:
            for prompt in prompts:
                if AgentSession.objects.filter(prompt=prompt).exists():
                    continue
                session = services.start_session(prompt_ref=prompt.ref, params={})
                self.stdout.write(
                    f"Recorded demo session {session.pk} ({prompt.ref}): "
                    f"{session.status}"
                )
            experiment = seed_demo_experiment(self._demo_user())
            if experiment is not None:
                self.stdout.write(
                    f"Ran the demo experiment {experiment.name!r}: "
                    f"/audit/experiments/{experiment.pk}/"
                )

    def _demo_user(self) -> Any:
        """Who the demo experiment belongs to: the demo superuser (DEBUG), or
        nobody (then the Auditors see it)."""
        if not settings.DEBUG:
            return None
        username = os.environ.get("WINK_DEMO_USERNAME", "admin")
        return get_user_model().objects.filter(username=username).first()

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
        """A second person, in the Approvers and Releasers groups: under four
        eyes they approve what the demo superuser started, and its releases."""
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
        # ... and the second person a release of production needs (the
        # admin's release page: staff, the Releasers group)
        releasers = Group.objects.filter(name="Releasers").first()
        if releasers is not None:
            user.groups.add(releasers)
        if not user.is_staff:
            user.is_staff = True
            user.save(update_fields=["is_staff"])

    def _join_approvers(self, user: Any) -> None:
        approvers = Group.objects.filter(name="Approvers").first()
        if approvers is not None:
            user.groups.add(approvers)
