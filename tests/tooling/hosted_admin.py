"""Adding hosted tools through the admin and putting them in a prompt, as the
hosted-kind tests do."""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from tests.tooling.factories import (
    PromptTemplateFactory,
    SectionDefinitionFactory,
    add_sections,
)
from tooling.models import HostedToolDefinition, PromptTemplate, SectionHostedTool


def add_hosted(
    admin_client: Any, kind: str, fields: dict[str, Any], name: str = "hosted"
) -> Any:
    """Post the admin's add form of a hosted tool of ``kind`` with ``fields``."""
    return admin_client.post(
        reverse("admin:tooling_hostedtooldefinition_add"),
        {
            "name": name,
            "kind": kind,
            "description": "A hosted tool.",
            "enabled": "on",
            **fields,
        },
    )


def prompt_with(
    *hosted: HostedToolDefinition, template: str = "Do the work."
) -> PromptTemplate:
    """A prompt of one section offering ``hosted``, in that order."""
    section = SectionDefinitionFactory.create(template=template)
    for position, tool in enumerate(hosted):
        SectionHostedTool.objects.create(
            section=section, hosted_tool=tool, position=position
        )
    prompt = PromptTemplateFactory.create()
    add_sections(prompt, section)
    return prompt
