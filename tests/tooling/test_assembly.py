"""Catalog rows -> runtime objects."""

from __future__ import annotations

import pytest

from tests.tooling.factories import (
    HostedToolDefinitionFactory,
    PolicyDefinitionFactory,
    PromptTemplateFactory,
    SectionDefinitionFactory,
    ToolDefinitionFactory,
    add_sections,
    attach,
)
from tooling import assembly
from tooling.models import PromptTemplate, SectionHostedTool
from tooling.runtime import PromptValidationError

pytestmark = pytest.mark.django_db


def _catalog(sections: int, tools_per_section: int) -> PromptTemplate:
    prompt = PromptTemplateFactory.create()
    policy = PolicyDefinitionFactory.create(
        kind="read_before_write", config={"read_tools": ["rd"], "write_tools": ["wr"]}
    )
    roots = []
    for _ in range(sections):
        root = SectionDefinitionFactory.create(
            template="Topic: $topic", default_params={"topic": None}
        )
        child = SectionDefinitionFactory.create(parent=root)
        tools = [ToolDefinitionFactory.create() for _ in range(tools_per_section)]
        attach(child, *tools)
        SectionHostedTool.objects.create(
            section=child, hosted_tool=HostedToolDefinitionFactory.create()
        )
        child.policies.add(
            PolicyDefinitionFactory.create(
                kind="sequential_dependency",
                config={"dependencies": {tools[0].name: []}},
            )
        )
        roots.append(root)
    first = roots[0].children.first()
    assert first is not None
    attach_names = [t.name for t in first.tools.all()]
    policy.config = {"read_tools": [attach_names[0]], "write_tools": [attach_names[-1]]}
    policy.save()
    prompt.policies.add(policy)
    add_sections(prompt, *roots)
    return prompt


def test_checking_a_policy_edit_uses_a_constant_number_of_queries(
    django_assert_num_queries,
):
    small = _catalog(sections=1, tools_per_section=2)
    policy = small.policies.get()
    policy.config = {"read_tools": ["nope"], "write_tools": []}

    edit = assembly.CatalogEdit.saving(policy)
    # The sections above the edited rows (1), the prompts rooted there or
    # holding the policy, with their links and policies (3), then the sections
    # those prompts reach (4).
    with django_assert_num_queries(8) as small_queries:
        problems = assembly.prompts_broken_by(edit)
    assert [ref for ref, _ in problems] == [small.ref]

    _catalog(sections=6, tools_per_section=5)  # a larger catalog, untouched
    with django_assert_num_queries(len(small_queries.captured_queries)):
        problems = assembly.prompts_broken_by(edit)
    assert [ref for ref, _ in problems] == [small.ref]


def _assemble(ref: str):
    return assembly.build_prompt(assembly.load_template(ref))


def test_assembly_uses_a_constant_number_of_queries(django_assert_num_queries):
    small = _catalog(sections=1, tools_per_section=2)
    large = _catalog(sections=6, tools_per_section=5)

    with django_assert_num_queries(7) as small_queries:
        small_prompt = _assemble(small.ref)
    with django_assert_num_queries(len(small_queries.captured_queries)):
        large_prompt = _assemble(large.ref)

    assert len(small_prompt.render(values={"topic": "x"}).tools) == 2
    assert len(large_prompt.render(values={"topic": "x"}).tools) == 30


def test_assembly_builds_sections_tools_and_hosted_tools_in_order():
    prompt = _catalog(sections=2, tools_per_section=2)

    rendered = _assemble(prompt.ref).render(values={"topic": "owls"})

    assert rendered.text.count("Topic: owls") == 2
    assert "### 1.1." in rendered.text and "## 2." in rendered.text
    assert len(rendered.hosted_tools) == 2


def test_assembly_refuses_duplicate_tool_names_across_sections():
    prompt = PromptTemplateFactory.create()
    first, second = SectionDefinitionFactory.create(), SectionDefinitionFactory.create()
    tool = ToolDefinitionFactory.create()
    attach(first, tool)
    attach(second, tool)
    add_sections(prompt, first, second)

    with pytest.raises(
        PromptValidationError, match=f"Duplicate tool name '{tool.name}'"
    ):
        _assemble(prompt.ref)


def test_assembly_refuses_a_dependency_on_a_missing_tool():
    prompt = PromptTemplateFactory.create()
    section = SectionDefinitionFactory.create()
    attach(section, ToolDefinitionFactory.create(name="deploy"))
    section.policies.add(
        PolicyDefinitionFactory.create(config={"dependencies": {"deploy": ["build"]}})
    )
    add_sections(prompt, section)

    with pytest.raises(PromptValidationError, match="refers to tool 'build'"):
        _assemble(prompt.ref)


def test_assembly_enabled_when_param_hides_the_branch():
    prompt = PromptTemplateFactory.create()
    section = SectionDefinitionFactory.create(
        template="Extra", enabled_when_param="verbose"
    )
    attach(section, ToolDefinitionFactory.create(name="extra_tool"))
    add_sections(prompt, SectionDefinitionFactory.create(), section)
    built = _assemble(prompt.ref)

    hidden = built.render(values={})
    shown = built.render(values={"verbose": "yes"})

    assert "Extra" not in hidden.text and not hidden.tools
    assert "Extra" in shown.text and shown.tools[0].name == "extra_tool"


def test_assembly_applies_description_and_parameter_overrides():
    prompt = PromptTemplateFactory.create()
    section = SectionDefinitionFactory.create()
    attach(
        section,
        ToolDefinitionFactory.create(
            name="wc",
            description="Count words in a draft.",
            param_descriptions={"text": "The draft answer."},
        ),
    )
    add_sections(prompt, section)

    rendered = _assemble(prompt.ref).render()
    schema = rendered.tool_schema(rendered.tools[0])

    assert rendered.tools[0].description == "Count words in a draft."
    assert schema["properties"]["text"]["description"] == "The draft answer."
