"""The session page with shell and apply_patch invocations whose stored
values are not the shapes the templates expect (a JSON number where a list
belongs): the page renders, it never answers 500."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from sessions_app.templatetags.patch_tags import as_list
from tests.sessions_app.factories import AgentSessionFactory, ToolInvocationFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("native", "kind", "params", "value"),
    [
        (False, "shell", {"commands": 5}, {"runs": 5}),
        (False, "shell", {"commands": 5}, None),
        (False, "shell", {"commands": True}, {"runs": 0}),
        (True, "shell", None, {"commands": 5}),
        (True, "shell", None, {"commands": [5, {"outcome": {"a": 1}}]}),
        (False, "shell", None, {"runs": [{"changed_files": 5, "outcome": 7}]}),
        (
            False,
            "apply_patch",
            {"diff": 5, "path": 5, "type": 5},
            {"content": 5, "operation": 5},
        ),
    ],
)
def test_session_page_survives_non_list_stored_values(
    client: Any, user: Any, native: bool, kind: str, params: Any, value: Any
) -> None:
    session: Any = AgentSessionFactory.create()
    ToolInvocationFactory.create(
        session=session,
        name=kind,
        kind=kind,
        native=native,
        params=params,
        value=value,
        success=True,
    )
    client.force_login(user)

    page = client.get(reverse("sessions_app:session-detail", args=[session.pk]))

    assert page.status_code == 200


def test_a_well_formed_native_shell_call_is_still_listed(
    client: Any, user: Any
) -> None:
    session: Any = AgentSessionFactory.create()
    ToolInvocationFactory.create(
        session=session,
        name="shell",
        kind="shell",
        native=True,
        params={"commands": ["ls"]},
        value={"commands": [{"command": "ls <b>", "stdout": "a.txt", "outcome": 0}]},
    )
    client.force_login(user)

    html = client.get(
        reverse("sessions_app:session-detail", args=[session.pk])
    ).content.decode()

    assert "$ ls &lt;b&gt;" in html
    assert '<span class="badge ok">exit 0</span>' in html


@pytest.mark.parametrize(
    ("value", "expected"),
    [([1, 2], [1, 2]), ((1,), [1]), (5, []), ("ab", []), ({"a": 1}, []), (None, [])],
)
def test_as_list(value: Any, expected: list[Any]) -> None:
    assert as_list(value) == expected
