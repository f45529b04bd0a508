"""Celery tasks: each takes an id and calls one service."""

from __future__ import annotations

from celery import shared_task

from tooling import services


@shared_task(name="tooling.run_session", acks_late=True)
def run_session_task(session_id: str) -> str:
    session = services.run_session(session_id=session_id)
    return str(session.status)
