"""Recover runs nothing is working on (``services.sweep_stale_sessions``)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from sessions_app import services


class Command(BaseCommand):
    help = (
        "Settle or re-dispatch sessions whose worker died (expired lease) and "
        "queued sessions nothing claimed. Without a broker, recovered runs run "
        "here, inline. Celery beat runs the same sweep every WINK_SWEEP_INTERVAL "
        "seconds."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        report = services.sweep_stale_sessions()
        for session_id in report.redispatched:
            self.stdout.write(f"Re-dispatched {session_id}")
        for session_id in report.ran_inline:
            self.stdout.write(f"Ran {session_id} inline")
        for session_id, status in report.settled.items():
            self.stdout.write(f"Settled {session_id}: {status}")
        self.stdout.write(self.style.SUCCESS(f"Sweep done: {report}."))
