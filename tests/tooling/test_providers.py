"""One provider client per process, rebuilt when its settings change."""

from __future__ import annotations

import os

from tooling.providers import build_client


def test_the_client_is_shared_between_runs(settings):
    settings.WINK_PROVIDER = "offline"
    assert build_client() is build_client()


def test_a_settings_change_builds_a_new_client(settings):
    settings.WINK_PROVIDER = "openai"
    settings.OPENAI_API_KEY = "sk-first"
    first = build_client()
    assert first.api_key == "sk-first"
    settings.OPENAI_API_KEY = "sk-second"
    second = build_client()
    assert second is not first
    assert second.api_key == "sk-second"
    settings.WINK_OPENAI_TIMEOUT = 7
    assert build_client().timeout == 7
    settings.WINK_PROVIDER = "offline"
    assert "offline" in str(build_client().base_url)


def test_a_forked_process_builds_its_own(settings):
    settings.WINK_PROVIDER = "offline"
    parent = build_client()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child, as a Celery pool process after the fork
        os.close(read)
        own = build_client()
        os.write(write, b"own" if own is not parent and own is build_client() else b"")
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as pipe:
        assert pipe.read() == "own"
    assert build_client() is parent


def test_a_blank_base_url_is_the_apis_own(settings, monkeypatch):
    """The settings take a blank OPENAI_BASE_URL as unset; the SDK, given
    none, would read the blank variable itself and send nowhere."""
    monkeypatch.setenv("OPENAI_BASE_URL", "   ")
    settings.WINK_PROVIDER = "openai"
    settings.OPENAI_API_KEY = "sk-blank"
    settings.OPENAI_BASE_URL = ""
    assert str(build_client().base_url) == "https://api.openai.com/v1/"
    settings.OPENAI_BASE_URL = "http://127.0.0.1:8001/v1"
    assert str(build_client().base_url) == "http://127.0.0.1:8001/v1/"
