from typing import Any
import pytest
from django.urls import reverse
from tests.sessions_app.factories import AgentSessionFactory, ToolInvocationFactory
pytestmark = pytest.mark.django_db

@pytest.mark.parametrize(("native", "kind", "params", "value"), [
    (False, "shell", {"commands": 5}, {"runs": 5}),
    (False, "shell", {"commands": 5}, None),
    (True, "shell", None, {"commands": 5}),
    (True, "shell", None, {"commands": [5, {"outcome": {"a": 1}}]}),
    (False, "shell", None, {"runs": [{"changed_files": 5, "outcome": 7}]}),
    (False, "apply_patch", {"diff": 5, "path": 5, "type": 5}, {"content": 5, "operation": 5}),
])
def test_probe(client: Any, user: Any, native, kind, params, value) -> None:
    session: Any = AgentSessionFactory()
    ToolInvocationFactory(session=session, name=kind, kind=kind, native=native, params=params, value=value)
    client.force_login(user)
    page = client.get(reverse("sessions_app:session-detail", args=[session.pk]))
    assert page.status_code == 200
