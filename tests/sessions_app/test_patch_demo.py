"""The demo patch prompt end to end: API -> service -> openai SDK -> offline
provider -> apply_patch applied to the session's files under read-before-write
-> database -> API and the session page."""

from __future__ import annotations

import shutil
from typing import Any

import pytest
from django.urls import reverse

from sessions_app.models import AgentSession, PolicyDenial, ToolInvocation, VirtualFile
from tests.sessions_app.factories import AgentSessionFactory, ToolInvocationFactory
from tooling.demo import seed_demo_catalog
from tooling.offline.patches import CREATED_TEXT, EDIT_SUFFIX

pytestmark = pytest.mark.django_db


def _run(api_client: Any) -> dict[str, Any]:
    seed_demo_catalog()
    response = api_client.post(
        "/api/sessions/", {"prompt": "demo/patch", "params": {}}, format="json"
    )
    assert response.status_code == 201, response.content
    return api_client.get(f"/api/sessions/{response.json()['id']}/").json()


def test_demo_patch_prompt_records_each_patch_and_the_denial(api_client: Any) -> None:
    body = _run(api_client)

    assert body["status"] == "succeeded", body
    patches = [c for c in body["tool_invocations"] if c["kind"] == "apply_patch"]
    assert [(c["params"]["type"], c["success"]) for c in patches] == [
        ("create_file", True),
        ("update_file", False),
        ("update_file", True),
        ("update_file", False),
    ]
    assert all(not c["native"] for c in patches)
    created, denied, updated, stale = patches
    assert created["value"]["content"] == CREATED_TEXT
    assert denied["message"] == "File 'CHANGELOG.md' must be read before overwriting."
    assert updated["params"]["diff"].startswith("@@\n-# Notes\n+# Notes")
    assert updated["value"]["content"] == CREATED_TEXT.replace(
        "# Notes", "# Notes" + EDIT_SUFFIX, 1
    )
    assert updated["value"]["previous"] == CREATED_TEXT
    assert stale["message"].startswith("Context not found in 'CHANGELOG.md'")
    assert stale["value"] is None
    reads = [
        c for c in body["tool_invocations"] if c["name"] == "read_file" and c["success"]
    ]
    assert reads and denied["sequence"] < reads[0]["sequence"] < updated["sequence"]
    # the demo reads only the file it patches, and every call but the stale
    # patch and the denied one succeeds (no stray read of another file)
    assert [
        c["params"]["path"]
        for c in body["tool_invocations"]
        if c["name"] == "read_file"
    ] == ["CHANGELOG.md"]
    assert [c["success"] for c in body["tool_invocations"]].count(False) == 2
    denials = [d for d in body["policy_denials"] if d["tool_name"] == "apply_patch"]
    assert [d["policy_name"] for d in denials] == ["patch-read-before-write"]
    assert denials[0]["params"]["path"] == "CHANGELOG.md"
    session = AgentSession.objects.get(pk=body["id"])
    file = VirtualFile.objects.get(session=session, path="CHANGELOG.md")
    assert file.content == updated["value"]["content"]  # the stale patch left it
    assert PolicyDenial.objects.filter(session=session).count() == len(
        body["policy_denials"]
    )
    assert (
        ToolInvocation.objects.filter(session=session, kind="apply_patch").count() == 4
    )


def test_session_page_shows_each_patch_as_a_diff_and_the_file_after(
    api_client: Any, client: Any, user: Any
) -> None:
    body = _run(api_client)
    client.force_login(user)

    page = client.get(reverse("sessions_app:session-detail", args=[body["id"]]))

    assert page.status_code == 200
    html = page.content.decode()
    assert html.count('class="patch-call"') == 4
    assert '<span class="del bad">-# Notes</span>' in html
    assert f'<span class="add ok">+# Notes{EDIT_SUFFIX}</span>' in html
    assert "CHANGELOG.md after the patch" in html
    assert "Not applied: the file is unchanged." in html
    assert "must be read before overwriting" in html


def test_hostile_patch_and_command_text_is_escaped_on_the_page(
    client: Any, user: Any
) -> None:
    session: Any = AgentSessionFactory.create()
    script = "<script>alert(1)</script>"
    ToolInvocationFactory.create(
        session=session,
        name="apply_patch",
        kind="apply_patch",
        native=False,
        params={
            "type": "update_file",
            "path": script,
            "diff": f"@@\n-{script}\n+x" * 3000,
        },
        value={"operation": "update_file", "path": script, "content": script * 10000},
        success=True,
    )
    ToolInvocationFactory.create(
        session=session,
        name="shell",
        kind="shell",
        native=False,
        sequence=2,
        params={"commands": [script]},
        value={
            "runs": [
                {
                    "command": script,
                    "stdout": script,
                    "stderr": "\ufffd" * 50_000,
                    "outcome": {"kind": "timeout", "exit_code": None},
                    "policy": "command_policy",
                    "reason": None,
                }
            ],
            "max_output_length": 10,
        },
        success=True,
    )
    client.force_login(user)

    page = client.get(reverse("sessions_app:session-detail", args=[session.pk]))

    assert page.status_code == 200
    html = page.content.decode()
    assert script not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "more lines" in html  # a huge diff is cut for the page
    assert '<span class="badge bad">timeout</span>' in html
    assert "allowed by command_policy" in html


@pytest.mark.parametrize(
    ("kind", "params", "value"),
    [
        ("apply_patch", ["not", "a", "dict"], "not a dict"),
        ("apply_patch", {"type": 7, "path": None, "diff": {"x": 1}}, None),
        ("apply_patch", {"rejected": True, "raw_arguments": "{", "error": "bad"}, None),
        ("shell", {"commands": "ls"}, {"runs": "no"}),
        ("shell", {"commands": [None, 3]}, {"runs": [1, None, {"outcome": 5}]}),
        ("shell", None, {"runs": [{"command": None, "outcome": None}]}),
    ],
)
def test_session_page_survives_malformed_stored_values(
    client: Any, user: Any, kind: str, params: Any, value: Any
) -> None:
    session: Any = AgentSessionFactory.create()
    ToolInvocationFactory.create(
        session=session, name=kind, kind=kind, native=False, params=params, value=value
    )
    client.force_login(user)

    page = client.get(reverse("sessions_app:session-detail", args=[session.pk]))

    assert page.status_code == 200


def _local_shell_prompt(executor: str) -> str:
    from tooling.demo import _prompt, _section
    from tooling.models import HostedToolDefinition

    shell = HostedToolDefinition.objects.create(
        name=f"shell_{executor}",
        kind=HostedToolDefinition.Kind.SHELL,
        description="Run read-only commands on the session's files.",
        config={"environment": "local", "executor": executor},
    )
    section = _section(
        f"shell.{executor}",
        title="Shell",
        template="Look at `notes.md` with the shell.",
        hosted=[shell],
    )
    return _prompt("tests", f"shell-{executor}", [section], name="Local shell").ref


@pytest.mark.skipif(
    not all(shutil.which(p) for p in ("ls", "wc", "tail")), reason="no coreutils"
)
def test_a_local_shell_runs_through_the_registered_executor(
    api_client: Any, client: Any, user: Any
) -> None:
    ref = _local_shell_prompt("scratch")
    started = api_client.post("/api/sessions/", {"prompt": ref}, format="json")
    assert started.status_code == 201, started.content
    body = api_client.get(f"/api/sessions/{started.json()['id']}/").json()

    assert body["status"] == "succeeded", body
    calls = [c for c in body["tool_invocations"] if c["kind"] == "shell"]
    assert [(c["native"], c["success"]) for c in calls] == [
        (False, True),
        (False, False),
    ]
    runs = calls[0]["value"]["runs"]
    assert [(r["command"], r["outcome"]["kind"]) for r in runs] == [
        ("ls", "exit"),
        ("wc -l notes.md", "exit"),
        ("tail -F notes.md", "timeout"),
    ]
    assert runs[1]["stderr"].startswith("wc: notes.md")  # the session has no files
    [denial] = body["policy_denials"]
    assert denial["policy_name"] == "command_policy"
    assert denial["reason"].startswith("Command 1 ('rm -rf notes.md') refused")
    assert calls[1]["message"] == denial["reason"]

    client.force_login(user)
    page = client.get(reverse("sessions_app:session-detail", args=[body["id"]]))
    html = page.content.decode()
    assert html.count("allowed by command_policy") == 3
    assert '<span class="badge bad">timeout</span>' in html
    assert "$ rm -rf notes.md" in html


def test_a_prompt_naming_an_executor_no_longer_registered_is_refused(
    api_client: Any,
) -> None:
    from tooling import shell_executors

    shell_executors.register("ephemeral", shell_executors.get("scratch"))
    try:
        ref = _local_shell_prompt("ephemeral")
    finally:
        shell_executors.unregister("ephemeral")
    started = api_client.post("/api/sessions/", {"prompt": ref}, format="json")

    assert started.status_code == 400, started.content
    assert "No shell executor is registered as 'ephemeral'" in str(started.json())
