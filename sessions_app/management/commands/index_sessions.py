"""Write the search text of every session without one
(``sessions_app.models.search``)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from sessions_app.models.search import index_missing


class Command(BaseCommand):
    help = (
        "Write the search text of every session that has none (its parameters, "
        "output and tool calls' arguments, which ?q= reads; a session in flight "
        "its parameters): after a restore or a bulk load; a session writes its "
        "own when it is created and when it ends. Also completes the text of an "
        "ended session that holds only its parameters (an older process ended "
        "it). Safe to run beside workers, and again."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--all",
            action="store_true",
            dest="rewrite",
            help="Rewrite every session's text as this version writes it (one "
            "written before 2026-11-30 escaped quotes, backslashes and tabs, "
            "which a search then did not find as typed).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        written = index_missing(rewrite=options["rewrite"])
        self.stdout.write(f"Wrote the search text of {written} session(s).")
