import os

import pytest

OPENAI_SKIP_REASON = "OPENAI_API_KEY is not set: live OpenAI tests skipped"


def pytest_collection_modifyitems(config, items):
    """Skip the tests marked ``openai`` (they talk to the real API) without a key."""
    if os.environ.get("OPENAI_API_KEY"):
        return
    skip = pytest.mark.skip(reason=OPENAI_SKIP_REASON)
    for item in items:
        if item.get_closest_marker("openai") is not None:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _offline_provider(request):
    """Runs go to the offline provider even where OPENAI_API_KEY is set (the
    settings would then default to "openai"); the live tests marked ``openai``
    choose their provider themselves."""
    if request.node.get_closest_marker("openai") is not None:
        return
    if not request.config.pluginmanager.hasplugin("django"):
        return  # runtime tests run without Django (-p no:django)
    settings = request.getfixturevalue("settings")
    settings.WINK_PROVIDER = "offline"
    # Throttling counts in the cache: each test starts with none.
    from django.core.cache import cache

    cache.clear()
    # Test users need no slow key derivation.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def user(db):
    """An operator: sees every session and may start runs (what most tests
    need; the access tests use users with fewer permissions)."""
    from django.contrib.auth.models import Permission

    from tests.sessions_app.factories import UserFactory

    operator = UserFactory.create()
    operator.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label="sessions_app",
            codename__in=["view_all_sessions", "start_session"],
        )
    )
    return operator


@pytest.fixture
def api_client(user):
    # Imported here so runtime tests can run without Django (-p no:django).
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(user=user)
    return client
