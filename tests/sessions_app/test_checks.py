"""The audit app's system checks."""

from __future__ import annotations

from django.core import checks


def deploy_warnings() -> list[str]:
    return [
        message.id or ""
        for message in checks.run_checks(include_deployment_checks=True)
        if message.id and message.id.startswith("sessions_app.")
    ]


def test_the_development_base_url_is_a_deployment_warning(settings):
    settings.WINK_BASE_URL = "http://127.0.0.1:8000"
    assert deploy_warnings() == ["sessions_app.W001"]


def test_a_real_base_url_passes(settings):
    settings.WINK_BASE_URL = "https://catalog.example.com"
    assert deploy_warnings() == []


def test_the_warning_is_for_deployments_only(settings):
    settings.WINK_BASE_URL = "http://127.0.0.1:8000"
    ids = [message.id for message in checks.run_checks()]
    assert "sessions_app.W001" not in ids
