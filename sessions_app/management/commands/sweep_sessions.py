"""Recover runs nothing is working on (``services.sweep_stale_sessions``)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from sessions_app import services


class Command(BaseCommand):
    help = (
        "Settle or re-dispatch sessions whose worker died (expired lease) and "
        "queued sessions nothing claimed or that were never sent (the broker "
        "could not be reached). Without a broker, recovered runs run here, "
        "inline. Celery beat runs the same sweep every WINK_SWEEP_INTERVAL "
        "seconds. An unreachable broker is reported, not an error: the sessions "
        "stay queued for the next sweep. Exits 1 if a session could not be "
        "handled (the log has why)."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        report = services.sweep_stale_sessions()
        for session_id in report.redispatched:
            self.stdout.write(f"Re-dispatched {session_id}")
        for session_id in report.ran_inline:
            self.stdout.write(f"Ran {session_id} inline")
        for session_id, status in report.settled.items():
            self.stdout.write(f"Settled {session_id}: {status}")
        if report.undispatched:
            self.stdout.write(self.style.WARNING(report.broker_unreachable))
        for key, error in report.errors.items():
            self.stderr.write(f"Could not handle {key}: {error} (the log has why)")
        if report.errors:
            raise CommandError(f"Sweep done with errors: {report}.")
        self.stdout.write(self.style.SUCCESS(f"Sweep done: {report}."))
