"""What the approval tests share: the demo release prompt whose ``deploy``
needs approval (``add_approval``), and the deploys a session recorded. The
fixtures built on them (``approver``, ``paused``) are in conftest.py."""

from __future__ import annotations

from typing import Any

from sessions_app.models import AgentSession, ToolInvocation
from tooling.demo import seed_demo_catalog
from tooling.models import PolicyDefinition, PromptTemplate

PROMPT = "demo/release"


def add_approval(config: dict[str, Any] | None = None) -> PolicyDefinition:
    """The demo release prompt, with ``deploy`` needing approval."""
    seed_demo_catalog()
    policy = PolicyDefinition.objects.create(
        name="release-approval",
        kind=PolicyDefinition.Kind.APPROVAL,
        config=config or {"rules": [{"tool": "deploy"}]},
    )
    PromptTemplate.objects.get(namespace="demo", key="release").policies.add(policy)
    return policy


def deploys(session: AgentSession) -> list[ToolInvocation]:
    return list(ToolInvocation.objects.filter(session=session, name="deploy"))
