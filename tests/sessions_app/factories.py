"""Factories for the audit trail models."""

from __future__ import annotations

import datetime
from decimal import Decimal

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.utils import timezone

from sessions_app.models import (
    AgentSession,
    ApprovalRequest,
    Citation,
    PolicyDenial,
    ProviderCall,
    StateChange,
    ToolInvocation,
    VirtualFile,
)


class UserFactory(factory.django.DjangoModelFactory[User]):
    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda user: f"{user.username}@example.com")
    password = factory.django.Password("correct horse battery staple")

    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)


class AgentSessionFactory(factory.django.DjangoModelFactory[AgentSession]):
    prompt_ref = "demo/research"
    status = AgentSession.Status.SUCCEEDED
    params = factory.LazyFunction(lambda: {"topic": "tides"})
    model = "gpt-5.4"
    provider = "offline"
    rendered_prompt = "# Research\n\nFind out about tides."
    tools_payload = factory.LazyFunction(list)
    request_options = factory.LazyFunction(lambda: {"tool_choice": "auto"})
    output_text = "Tides follow the moon."
    usage = factory.LazyFunction(
        lambda: {"input_tokens": 120, "output_tokens": 40, "total_tokens": 160}
    )
    turns = 1
    # Spend (USD): set what a test sums; h3's recording fills them on real runs.
    cost = Decimal(0)
    cost_budget = None
    unpriced_calls = 0

    class Meta:
        model = AgentSession


class ProviderCallFactory(factory.django.DjangoModelFactory[ProviderCall]):
    session = factory.SubFactory(AgentSessionFactory)
    turn = factory.Sequence(lambda n: n + 1)
    request = factory.LazyFunction(lambda: {"model": "gpt-5.4", "input": []})
    response = factory.LazyFunction(lambda: {"id": "resp_1", "output": []})
    response_id = factory.Sequence(lambda n: f"resp_{n}")
    status = "completed"
    input_tokens = 100
    output_tokens = 20
    latency_ms = 321.5
    cost = None  # unpriced unless a test prices it

    class Meta:
        model = ProviderCall


class ToolInvocationFactory(factory.django.DjangoModelFactory[ToolInvocation]):
    session = factory.SubFactory(AgentSessionFactory)
    sequence = factory.Sequence(lambda n: n + 1)
    turn = 1
    name = "read_file"
    call_id = factory.Sequence(lambda n: f"call_{n}")
    params = factory.LazyFunction(lambda: {"path": "notes.md"})
    success = True
    message = "Read notes.md."
    value = factory.LazyFunction(lambda: {"content": "hello"})
    rendered_output = "hello"
    cost = None  # local calls have no fee

    class Meta:
        model = ToolInvocation

    class Params:
        web_search = factory.Trait(
            name="web_search",
            native=True,
            provider="openai",
            kind="web_search",
            params=factory.LazyFunction(lambda: {"action": "search", "query": "tides"}),
            message="web search (completed): search 'tides'",
            value=factory.LazyFunction(
                lambda: {"status": "completed", "query": "tides", "sources": []}
            ),
            cost=Decimal("0.01"),  # the seeded web search fee per call
        )


class CitationFactory(factory.django.DjangoModelFactory[Citation]):
    session = factory.SubFactory(AgentSessionFactory)
    provider_call = factory.SubFactory(
        ProviderCallFactory, session=factory.SelfAttribute("..session")
    )
    kind = "url_citation"
    url = factory.Sequence(lambda n: f"https://example.com/page-{n}")
    domain = factory.LazyAttribute(lambda citation: Citation.domain_of(citation.url))
    title = factory.Sequence(lambda n: f"Page {n}")
    cited_text = "follow the moon"

    class Meta:
        model = Citation


class PolicyDenialFactory(factory.django.DjangoModelFactory[PolicyDenial]):
    session = factory.SubFactory(AgentSessionFactory)
    policy_name = "read_before_write"
    tool_name = "write_file"
    call_id = factory.Sequence(lambda n: f"denied_{n}")
    reason = "Read notes.md before writing it."
    params = factory.LazyFunction(lambda: {"path": "notes.md"})
    turn = 1

    class Meta:
        model = PolicyDenial


class StateChangeFactory(factory.django.DjangoModelFactory[StateChange]):
    session = factory.SubFactory(AgentSessionFactory)
    key = "plan"
    value = factory.LazyFunction(
        lambda: {
            "objective": "Explain tides",
            "status": "active",
            "steps": [
                {"step_id": 1, "title": "Search sources", "status": "done"},
                {"step_id": 2, "title": "Write the answer", "status": "pending"},
            ],
        }
    )
    tool_name = "planning_setup_plan"
    call_id = None

    class Meta:
        model = StateChange


class VirtualFileFactory(factory.django.DjangoModelFactory[VirtualFile]):
    session = factory.SubFactory(AgentSessionFactory)
    path = factory.Sequence(lambda n: f"notes/{n}.md")
    content = "# Notes"

    class Meta:
        model = VirtualFile


class ApprovalRequestFactory(factory.django.DjangoModelFactory[ApprovalRequest]):
    """A pending approval of a ``deploy`` to production (its session awaits
    it)."""

    session = factory.SubFactory(
        AgentSessionFactory,
        prompt_ref="demo/ship",
        status=AgentSession.Status.AWAITING_APPROVAL,
        output_text="",
    )
    kind = ApprovalRequest.Kind.FUNCTION
    tool_name = "deploy"
    call_id = factory.Sequence(lambda n: f"call_approval_{n}")
    sequence = 4
    turn = 3
    params = factory.LazyFunction(lambda: {"environment": "production"})
    raw_arguments = '{"environment":"production"}'
    policy_name = "production-deploy"
    reason = "deploy to production needs a human yes."
    expires_at = factory.LazyFunction(
        lambda: timezone.now() + datetime.timedelta(hours=24)
    )

    class Meta:
        model = ApprovalRequest
