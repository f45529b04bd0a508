"""Catalog factories."""

from __future__ import annotations

import factory

from tooling.models import (
    HostedToolDefinition,
    PolicyDefinition,
    PromptSection,
    PromptTemplate,
    SectionDefinition,
    SectionTool,
    ToolDefinition,
)


class ToolDefinitionFactory(factory.django.DjangoModelFactory[ToolDefinition]):
    class Meta:
        model = ToolDefinition

    name = factory.Sequence(lambda n: f"count_words_{n}")
    handler_key = "demo.count_words"


class HostedToolDefinitionFactory(
    factory.django.DjangoModelFactory[HostedToolDefinition]
):
    class Meta:
        model = HostedToolDefinition

    name = factory.Sequence(lambda n: f"web_search_{n}")
    kind = HostedToolDefinition.Kind.WEB_SEARCH
    description = "Search the web."
    config = factory.LazyFunction(lambda: {"allowed_domains": ["docs.python.org"]})


class PolicyDefinitionFactory(factory.django.DjangoModelFactory[PolicyDefinition]):
    class Meta:
        model = PolicyDefinition

    name = factory.Sequence(lambda n: f"policy-{n}")
    kind = PolicyDefinition.Kind.SEQUENTIAL_DEPENDENCY
    config = factory.LazyFunction(dict)


class SectionDefinitionFactory(factory.django.DjangoModelFactory[SectionDefinition]):
    class Meta:
        model = SectionDefinition

    key = factory.Sequence(lambda n: f"section-{n}")
    title = factory.Sequence(lambda n: f"Section {n}")
    template = "Do the work."


class PromptTemplateFactory(factory.django.DjangoModelFactory[PromptTemplate]):
    class Meta:
        model = PromptTemplate

    namespace = "tests"
    key = factory.Sequence(lambda n: f"prompt-{n}")
    name = factory.Sequence(lambda n: f"Prompt {n}")


def attach(section: SectionDefinition, *tools: ToolDefinition) -> None:
    for position, tool in enumerate(tools):
        SectionTool.objects.create(section=section, tool=tool, position=position)


def add_sections(prompt: PromptTemplate, *sections: SectionDefinition) -> None:
    for position, section in enumerate(sections):
        PromptSection.objects.create(prompt=prompt, section=section, position=position)
