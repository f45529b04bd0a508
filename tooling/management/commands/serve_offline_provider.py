"""Serve the offline provider (a scripted Responses API) over HTTP on loopback."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from tooling.offline import OfflineServer, ScriptedModel


class Command(BaseCommand):
    help = (
        "Serve the offline provider, a deterministic stand-in for the OpenAI "
        "Responses API. Point OPENAI_BASE_URL at the printed URL to use it."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8001)
        parser.add_argument("--verbose", action="store_true", help="Log each request.")
        parser.add_argument(
            "--delay",
            type=float,
            default=0.0,
            help="Seconds to hold back every reply (a slow model).",
        )

    def handle(
        self,
        *args: Any,
        host: str,
        port: int,
        verbose: bool,
        delay: float,
        **options: Any,
    ) -> None:
        if delay < 0:
            raise CommandError("--delay must not be negative.")
        server = OfflineServer(
            ScriptedModel(), host=host, port=port, verbose=verbose, delay=delay
        )
        self.stdout.write(f"Offline provider listening on {server.base_url}")
        self.stdout.write(
            "Use: WINK_PROVIDER=openai OPENAI_API_KEY=sk-offline "
            f"OPENAI_BASE_URL={server.base_url}"
        )
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            self.stdout.write("Stopped.")
        finally:
            server.stop()
