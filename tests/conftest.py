import pytest


@pytest.fixture
def user(db):
    from tests.sessions_app.factories import UserFactory

    return UserFactory()


@pytest.fixture
def api_client(user):
    # Imported here so runtime tests can run without Django (-p no:django).
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(user=user)
    return client
