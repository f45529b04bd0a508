"""The demo catalog: a research prompt (web search, citations, a function
tool), a release prompt (sequential dependencies), a ship prompt (the same
pipeline, its deploy to production waiting for a human approval), a notes
prompt (read-before-write and planning) and a patch prompt (apply_patch under
read-before-write). Seeding is idempotent."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tooling.models import (
    HostedToolDefinition,
    PolicyDefinition,
    PromptSection,
    PromptTemplate,
    SectionDefinition,
    SectionHostedTool,
    SectionTool,
    ToolDefinition,
)

DEMO_PROMPTS = (
    "demo/research",
    "demo/release",
    "demo/ship",
    "demo/notes",
    "demo/patch",
)

# The research prompt answers in JSON and names its sources as a field too: the
# API does not promise url_citation annotations on JSON output, so the answer
# carries its URLs either way.
RESEARCH_ANSWER_SCHEMA = {
    "type": "object",
    "properties": {
        "answer": {
            "type": "string",
            "description": "The answer in two or three sentences.",
        },
        "sources": {
            "type": "array",
            "items": {"type": "string"},
            "description": "URLs of the pages the answer relies on.",
        },
    },
    "required": ["answer", "sources"],
    "additionalProperties": False,
}


def _tool(name: str, handler_key: str, **fields: Any) -> ToolDefinition:
    tool, _ = ToolDefinition.objects.get_or_create(
        name=name, defaults={"handler_key": handler_key, **fields}
    )
    return tool


def _section(
    key: str,
    tools: Sequence[ToolDefinition] = (),
    hosted: Sequence[HostedToolDefinition] = (),
    policies: Sequence[PolicyDefinition] = (),
    **fields: Any,
) -> SectionDefinition:
    section, created = SectionDefinition.objects.get_or_create(key=key, defaults=fields)
    if created:
        for position, tool in enumerate(tools):
            SectionTool.objects.create(section=section, tool=tool, position=position)
        for position, hosted_tool in enumerate(hosted):
            SectionHostedTool.objects.create(
                section=section, hosted_tool=hosted_tool, position=position
            )
        section.policies.set(policies)
    return section


def _prompt(
    namespace: str, key: str, sections: list[SectionDefinition], **fields: Any
) -> PromptTemplate:
    prompt, created = PromptTemplate.objects.get_or_create(
        namespace=namespace, key=key, defaults=fields
    )
    if created:
        for position, section in enumerate(sections):
            PromptSection.objects.create(
                prompt=prompt, section=section, position=position
            )
    return prompt


def seed_demo_catalog() -> list[PromptTemplate]:
    """Create the demo catalog entries that do not exist yet."""
    web_search, _ = HostedToolDefinition.objects.get_or_create(
        name="web_search",
        defaults={
            "kind": HostedToolDefinition.Kind.WEB_SEARCH,
            "description": (
                "Search the Python and Django documentation and cite sources."
            ),
            "config": {
                "allowed_domains": ["docs.python.org", "docs.djangoproject.com"],
                "country": "DE",
                "city": "Berlin",
                "timezone": "Europe/Berlin",
                "allow_live_access": True,
                "search_context_size": "medium",
            },
        },
    )
    count_words = _tool("count_words", "demo.count_words")
    research_task = _section(
        "research.task",
        title="Task",
        template="Answer the question: $question\n\nCite every source you use.",
        default_params={"question": "Which Django release is the current LTS?"},
    )
    _section(
        "research.sources",
        title="Sources",
        template="Search only the allowed documentation sites, then count the "
        "words of your draft answer before you reply.",
        parent=research_task,
        hosted=[web_search],
        tools=[count_words],
    )
    research = _prompt(
        "demo",
        "research",
        [research_task],
        name="Research with web search",
        description="Web search restricted to documentation domains and localised "
        "to Berlin, answering in JSON; the citations survive the structured output.",
        output_schema=RESEARCH_ANSWER_SCHEMA,
        hosted_tool_limits={"web_search": 2},  # docs/quotas.md
    )

    release_policy, _ = PolicyDefinition.objects.get_or_create(
        name="release-order",
        defaults={
            "kind": PolicyDefinition.Kind.SEQUENTIAL_DEPENDENCY,
            "config": {
                "dependencies": {"deploy": ["build", "test"], "build": ["lint"]}
            },
            "description": "Deploy only after build and test; build only after lint.",
        },
    )
    release_tools = [
        _tool(name, f"demo.{name}") for name in ("deploy", "build", "test", "lint")
    ]
    release_section = _section(
        "release.pipeline",
        title="Release pipeline",
        template="Ship $service to staging. Deploy only once it is built and tested.",
        default_params={"service": "catalog-api"},
        tools=release_tools,
        policies=[release_policy],
    )
    release = _prompt(
        "demo",
        "release",
        [release_section],
        name="Release with sequential dependencies",
        description="The model tries to deploy first; the policy makes it build first.",
    )

    ship = _seed_ship_prompt(release_tools, release_policy)

    rbw_policy, _ = PolicyDefinition.objects.get_or_create(
        name="read-before-write",
        defaults={
            "kind": PolicyDefinition.Kind.READ_BEFORE_WRITE,
            "config": {
                "read_tools": ["read_file"],
                "write_tools": ["draft_file", "write_file"],
            },
            "description": "Existing files must be read before they are overwritten.",
        },
    )
    planning = _section(
        "notes.plan",
        title="Planning",
        template="Keep a plan of your steps with the planning tools.",
        planning_strategy="plan_act_reflect",
    )
    files = _section(
        "notes.files",
        title="Files",
        template=(
            "Draft $document, then revise it. Read a file before you overwrite it."
        ),
        default_params={"document": "notes.md"},
        tools=[
            _tool(
                "draft_file",
                "vfs.write_file",
                description="Create a scratch draft of a file (not for overwriting).",
            ),
            _tool("write_file", "vfs.write_file"),
            _tool("read_file", "vfs.read_file"),
            _tool("list_files", "vfs.list_files"),
        ],
        policies=[rbw_policy],
    )
    notes = _prompt(
        "demo",
        "notes",
        [planning, files],
        name="Notes with planning and read-before-write",
        description="A denied overwrite, a read, then a successful write.",
    )
    patch = _seed_patch_prompt()
    return [research, release, ship, notes, patch]


def _seed_ship_prompt(
    release_tools: Sequence[ToolDefinition], release_policy: PolicyDefinition
) -> PromptTemplate:
    """The release pipeline to production: ``deploy`` waits for a human yes
    (the ``production-deploy`` approval policy) once the release order allows
    it, from someone other than the person who started the run (four eyes).
    The prompt names only ``production``, so the offline model deploys there
    (``tooling.offline.calls.named_choices``)."""
    approval, _ = PolicyDefinition.objects.get_or_create(
        name="production-deploy",
        defaults={
            "kind": PolicyDefinition.Kind.APPROVAL,
            "config": {
                "rules": [{"tool": "deploy", "when": {"environment": "production"}}],
                "four_eyes": True,
            },
            "description": "A deploy to production waits for an approver's yes "
            "(the Approvers group); whoever started the run may not give it.",
        },
    )
    section = _section(
        "ship.pipeline",
        title="Release pipeline",
        template="Release $service to production. Deploy only once it is built "
        "and tested; an approver must allow the deploy.",
        default_params={"service": "catalog-api"},
        tools=release_tools,
        policies=[release_policy, approval],
    )
    return _prompt(
        "demo",
        "ship",
        [section],
        name="Release to production with approval",
        description="The release pipeline; its deploy to production pauses the "
        "run until someone approves or denies it in the inbox.",
    )


def _seed_patch_prompt() -> PromptTemplate:
    """apply_patch under read-before-write: the model creates the file, its
    first update of the unread file is denied, it reads the file, the update
    goes through; a later patch whose context is stale fails."""
    apply_patch, _ = HostedToolDefinition.objects.get_or_create(
        name="apply_patch",
        defaults={
            "kind": HostedToolDefinition.Kind.APPLY_PATCH,
            "description": "Create, update and delete the session's files with "
            "V4A diffs.",
            "config": {},
        },
    )
    policy, _ = PolicyDefinition.objects.get_or_create(
        name="patch-read-before-write",
        defaults={
            "kind": PolicyDefinition.Kind.READ_BEFORE_WRITE,
            "config": {"read_tools": ["read_file"], "write_tools": ["apply_patch"]},
            "description": "A file must be read before a patch changes it.",
        },
    )
    section = _section(
        "patch.changelog",
        title="Changelog",
        template=(
            "Add a line about $change to `CHANGELOG.md` with apply_patch. Read "
            "the file before you change it."
        ),
        default_params={"change": "the new apply_patch tool"},
        tools=[_tool("read_file", "vfs.read_file")],
        hosted=[apply_patch],
        policies=[policy],
    )
    return _prompt(
        "demo",
        "patch",
        [section],
        name="Patch a file under read-before-write",
        description="apply_patch: a create, an update denied until the file is "
        "read, the update, then a patch with stale context that fails.",
    )
