"""Assembly reads what its prompts reach, not the catalog: the rows read to
build, preview, start or check a prompt do not grow with unrelated sections,
tools, hosted tools, policies and prompts (beside the constant-query tests in
``test_assembly.py`` and ``test_catalog_integrity.py``); the revisions are the
ones the whole catalog gives; walking a corrupted tree still ends."""

from __future__ import annotations

import collections
import copy
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import connection
from django.db.models.signals import post_init
from django.urls import reverse

from sessions_app import services
from sessions_app.models import AgentSession
from tests.tooling.factories import (
    PolicyDefinitionFactory,
    PromptTemplateFactory,
    SectionDefinitionFactory,
    ToolDefinitionFactory,
    add_sections,
    attach,
)
from tooling import assembly
from tooling.assembly import catalog, edits, pricing
from tooling.assembly.catalog_edit import CatalogEdit
from tooling.demo import DEMO_PROMPTS, seed_demo_catalog
from tooling.models import (
    CatalogRevision,
    HostedToolDefinition,
    PolicyDefinition,
    PromptSection,
    PromptTemplate,
    SectionDefinition,
    SectionHostedTool,
    SectionTool,
    ToolDefinition,
)
from tooling.runtime import PromptError
from tooling.services import preview_prompt

pytestmark = pytest.mark.django_db

UNRELATED = 200  # unrelated sections added between the two measurements
_LOCKING = re.compile(r"\bFOR (UPDATE|NO KEY UPDATE|SHARE|KEY SHARE)\b")


# -- measuring -------------------------------------------------------------------


class RowsRead:
    """What a block reads: the model instances it builds (per model) and the
    rows its SELECT statements return (each counted by running it again under
    ``COUNT(*)``, on a cursor the count does not pass through)."""

    def __init__(self) -> None:
        self.instances: collections.Counter[str] = collections.Counter()
        self.rows = 0
        self.statements = 0

    def built(self, sender: Any, instance: Any, **kwargs: Any) -> None:
        self.instances[sender._meta.label] += 1

    def wrapper(
        self, execute: Any, sql: str, params: Any, many: bool, context: Any
    ) -> Any:
        result = execute(sql, params, many, context)
        self.statements += 1
        head = sql.lstrip().upper()
        if many or not head.startswith(("SELECT", "WITH")) or _LOCKING.search(head):
            return result
        cursor = context["connection"].create_cursor()
        try:
            cursor.execute(f"SELECT COUNT(*) FROM ({sql}) wink_counted", params)
            self.rows += cursor.fetchone()[0]
        finally:
            cursor.close()
        return result

    def figures(self) -> tuple[int, dict[str, int]]:
        return self.rows, dict(self.instances)


@contextmanager
def rows_read() -> Iterator[RowsRead]:
    read = RowsRead()
    post_init.connect(read.built, weak=False)
    try:
        with connection.execute_wrapper(read.wrapper):
            yield read
    finally:
        post_init.disconnect(read.built)


def reads(run: Callable[[], Any]) -> tuple[int, dict[str, int]]:
    with rows_read() as read:
        run()
    assert read.rows > 0 and read.statements > 0  # the counter counts
    return read.figures()


# -- the unrelated catalog ---------------------------------------------------------


def add_unrelated(count: int, first: int = 0) -> None:
    """``count`` sections no demo prompt reaches (three deep, positions mixed
    with the demo's), tools, hosted tools and policies linked to them, and
    prompts using them (with prompt-level policies)."""
    numbers = range(first, first + count)
    sections = SectionDefinition.objects.bulk_create(
        SectionDefinition(
            key=f"unrelated-{n}",
            title=f"Unrelated {n}",
            template="Unrelated work on $subject.",
            default_params={"subject": f"subject {n}"},
            position=n % 3,
        )
        for n in numbers
    )
    for index, section in enumerate(sections):
        if index % 3:
            section.parent_id = sections[index - 1].pk
    SectionDefinition.objects.bulk_update(sections, ["parent"])
    tools = ToolDefinition.objects.bulk_create(
        ToolDefinition(name=f"unrelated_tool_{n}", handler_key="demo.count_words")
        for n in numbers[::2]
    )
    SectionTool.objects.bulk_create(
        SectionTool(section=section, tool=tool)
        for section, tool in zip(sections[::2], tools, strict=False)
    )
    hosted = HostedToolDefinition.objects.bulk_create(
        HostedToolDefinition(
            name=f"unrelated_search_{n}",
            kind=HostedToolDefinition.Kind.WEB_SEARCH,
            description="Search the web.",
        )
        for n in numbers[::5]
    )
    SectionHostedTool.objects.bulk_create(
        SectionHostedTool(section=section, hosted_tool=tool)
        for section, tool in zip(sections[1::5], hosted, strict=False)
    )
    policies = PolicyDefinition.objects.bulk_create(
        PolicyDefinition(
            name=f"unrelated-policy-{n}",
            kind=PolicyDefinition.Kind.SEQUENTIAL_DEPENDENCY,
            config={"dependencies": {}},
        )
        for n in numbers[::5]
    )
    through = SectionDefinition.policies.through
    through.objects.bulk_create(
        through(sectiondefinition_id=section.pk, policydefinition_id=policy.pk)
        for section, policy in zip(sections[2::5], policies, strict=False)
    )
    prompts = PromptTemplate.objects.bulk_create(
        PromptTemplate(namespace="unrelated", key=f"p{n}") for n in numbers[::6]
    )
    PromptSection.objects.bulk_create(
        PromptSection(prompt=prompt, section=section)
        for prompt, section in zip(prompts, sections[::6], strict=False)
    )
    prompt_policies = PromptTemplate.policies.through
    prompt_policies.objects.bulk_create(
        prompt_policies(prompttemplate_id=prompt.pk, policydefinition_id=policy.pk)
        for prompt, policy in zip(prompts, policies, strict=False)
    )


@pytest.fixture(autouse=True)
def no_frozen_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """What assembly reads when it has to read (a new catalog generation):
    the cache of frozen revisions (tests/tooling/test_generation.py) and of
    price sheets are off."""
    monkeypatch.setattr(catalog._FROZEN, "size", 0)
    catalog._FROZEN.clear()
    monkeypatch.setattr(pricing._SHEETS, "size", 0)
    pricing.clear_cache()


@pytest.fixture
def demo() -> None:
    seed_demo_catalog()
    add_unrelated(10)
    # A subtree no prompt uses (so nothing checks it), invalid below its root.
    orphan = SectionDefinitionFactory.create(key="orphan")
    SectionDefinitionFactory.create(
        key="orphan.child", parent=orphan, template="Use $nope."
    )


def grow() -> None:
    add_unrelated(UNRELATED, first=10)
    assert SectionDefinition.objects.count() > UNRELATED


# -- building and previewing one prompt ----------------------------------------------


def _prompt_workflows(ref: str) -> dict[str, Callable[[], Any]]:
    template = assembly.load_template(ref)
    roots = [link.section for link in template.prompt_sections.all()]
    policies = list(template.policies.all())
    return {
        "load and build": lambda: assembly.build_prompt(assembly.load_template(ref)),
        "build": lambda: assembly.build_prompt(template),
        "freeze": lambda: assembly.freeze_template(template),
        "freeze as the API does": lambda: assembly.freeze_templates([template]),
        "preview": lambda: preview_prompt(template=template),
        "build from the admin form": lambda: assembly.build_prompt_from_parts(
            template, roots=roots, policies=policies
        ),
    }


@pytest.mark.parametrize("ref", DEMO_PROMPTS)
def test_a_prompt_reads_the_same_rows_beside_a_larger_catalog(demo, ref):
    before = {name: reads(run) for name, run in _prompt_workflows(ref).items()}
    revision = assembly.freeze_template(assembly.load_template(ref))

    grow()

    after = {name: reads(run) for name, run in _prompt_workflows(ref).items()}
    assert after == before
    assert assembly.freeze_template(assembly.load_template(ref)) == revision


@pytest.mark.parametrize("ref", DEMO_PROMPTS)
def test_a_revision_is_the_one_the_whole_catalog_gives(demo, ref):
    grow()
    template = assembly.load_template(ref)

    whole = assembly.freeze_prompt(template, sections=assembly.all_sections())

    assert assembly.freeze_template(template) == whole
    assert preview_prompt(template=template).revision_hash == CatalogRevision.hash_of(
        whole
    )


def test_the_api_and_admin_pages_of_a_prompt_read_the_same_rows(
    demo, api_client, admin_client
):
    research = PromptTemplate.objects.get(namespace="demo", key="research")
    sources = SectionDefinition.objects.get(key="research.sources")
    pages: dict[str, Callable[[], Any]] = {
        "API prompt": lambda: api_client.get(
            reverse("catalog_api:prompt-detail", args=["demo", "research"])
        ),
        "API preview": lambda: api_client.post(
            reverse("catalog_api:prompt-preview", args=["demo", "research"]),
            {"params": {}},
            format="json",
        ),
        "admin preview": lambda: admin_client.get(
            reverse("admin:tooling_prompttemplate_preview", args=[research.pk])
        ),
        "admin delete of a section": lambda: admin_client.get(
            reverse("admin:tooling_sectiondefinition_delete", args=[sources.pk])
        ),
    }
    for run in pages.values():
        assert run().status_code == 200  # and warm (sessions, permissions)
    before = {name: reads(run) for name, run in pages.items()}

    grow()

    assert {name: reads(run) for name, run in pages.items()} == before


# -- starting a session ------------------------------------------------------------


@pytest.mark.parametrize("inline", [False, True], ids=["queued", "inline"])
def test_starting_a_session_reads_the_same_rows_beside_a_larger_catalog(
    demo, settings, inline
):
    """Queued: what ``start_session`` itself reads (load, preview, revision,
    session); inline: the whole run too."""
    settings.CELERY_TASK_ALWAYS_EAGER = inline

    def start() -> AgentSession:
        session = services.start_session(prompt_ref="demo/research")
        expected = AgentSession.Status.SUCCEEDED if inline else "queued"
        assert session.status == expected, session.error_message
        return session

    first = start()  # records the revision: the next starts reuse it
    before = reads(start)

    grow()

    assert reads(start) == before
    assert start().revision_id == first.revision_id


# -- checking an edit ----------------------------------------------------------------


def _disabled(model: type[Any], **lookup: Any) -> CatalogEdit:
    row = model.objects.get(**lookup)
    row.enabled = False
    return CatalogEdit.saving(row)


def _edited_section(key: str, **fields: Any) -> CatalogEdit:
    section = copy.copy(SectionDefinition.objects.get(key=key))
    for name, value in fields.items():
        setattr(section, name, value)
    return CatalogEdit.saving(section)


def _deleted_section(key: str) -> CatalogEdit:
    section = SectionDefinition.objects.get(key=key)
    reached = assembly.reached_sections([section.pk])
    return CatalogEdit.deleting(assembly.with_descendants(section, reached))


def _added_section(parent: str) -> CatalogEdit:
    """As the admin's add form checks a new section (links keyed by ``None``)."""
    edit = CatalogEdit()
    edit.added_section = SectionDefinition(
        key="added",
        title="Added",
        template="Needs $undeclared.",
        parent=SectionDefinition.objects.get(key=parent),
    )
    edit.section_tools[None] = []
    edit.section_hosted[None] = []
    edit.section_policies[None] = []
    return edit


def _unlinked_tools(key: str) -> CatalogEdit:
    edit = CatalogEdit()
    edit.section_tools[SectionDefinition.objects.get(key=key).pk] = []
    return edit


def _policy_config(name: str, config: dict[str, Any]) -> CatalogEdit:
    policy = PolicyDefinition.objects.get(name=name)
    policy.config = config
    return CatalogEdit.saving(policy)


EDITS: dict[str, Callable[[], CatalogEdit]] = {
    "disable a tool": lambda: _disabled(ToolDefinition, name="build"),
    "disable a hosted tool": lambda: _disabled(HostedToolDefinition, name="web_search"),
    "edit a policy": lambda: _policy_config(
        "release-order", {"dependencies": {"ship": ["nothing"]}}
    ),
    "break a section": lambda: _edited_section(
        "release.pipeline", template="Ship $unknown."
    ),
    "move a section into another prompt": lambda: _edited_section(
        "notes.files", parent=SectionDefinition.objects.get(key="research.task")
    ),
    "move a section within its prompt": lambda: _edited_section(
        "notes.files", parent=SectionDefinition.objects.get(key="notes.plan")
    ),
    "move an unused subtree into a prompt": lambda: _edited_section(
        "orphan", parent=SectionDefinition.objects.get(key="release.pipeline")
    ),
    "delete a section": lambda: _deleted_section("research.task"),
    "add a section": lambda: _added_section("release.pipeline"),
    "unlink a section's tools": lambda: _unlinked_tools("release.pipeline"),
}


def _whole_catalog_check(monkeypatch, edit: CatalogEdit) -> list[Any]:
    """``prompts_broken_by`` building every saved prompt from every section."""
    with monkeypatch.context() as patched:
        patched.setattr(edits, "_prompts_touched_by", lambda edit: None)
        return assembly.prompts_broken_by(edit)


@pytest.mark.parametrize("name", list(EDITS))
def test_checking_an_edit_reads_the_same_rows_beside_a_larger_catalog(
    demo, monkeypatch, name
):
    edit = EDITS[name]()
    problems = assembly.prompts_broken_by(edit)
    before = reads(lambda: assembly.prompts_broken_by(edit))

    grow()

    edit = EDITS[name]()
    assert reads(lambda: assembly.prompts_broken_by(edit)) == before
    assert assembly.prompts_broken_by(edit) == problems
    assert problems == _whole_catalog_check(monkeypatch, edit)


def test_an_edit_deep_in_a_tree_finds_every_prompt_above_it(monkeypatch):
    tool = ToolDefinitionFactory.create(name="deep_tool")
    top = SectionDefinitionFactory.create(key="top")
    middle = SectionDefinitionFactory.create(key="middle", parent=top)
    bottom = SectionDefinitionFactory.create(key="bottom", parent=middle)
    attach(bottom, tool)
    needs_tool = PolicyDefinitionFactory.create(
        config={"dependencies": {"deep_tool": []}}
    )
    from_top, from_middle, unrelated = (
        PromptTemplateFactory.create() for _ in range(3)
    )
    add_sections(from_top, top)
    add_sections(from_middle, middle)
    add_sections(unrelated, SectionDefinitionFactory.create())
    for prompt in (from_top, from_middle, unrelated):
        prompt.policies.add(needs_tool)
    edit = _disabled(ToolDefinition, name="deep_tool")

    problems = assembly.prompts_broken_by(edit)

    assert [ref for ref, _ in problems] == sorted([from_top.ref, from_middle.ref])
    assert problems == _whole_catalog_check(monkeypatch, edit)


# -- corrupted trees -----------------------------------------------------------------


def test_reading_a_tree_with_a_cycle_ends(monkeypatch):
    a = SectionDefinitionFactory.create(key="a")
    b = SectionDefinitionFactory.create(key="b", parent=a)
    c = SectionDefinitionFactory.create(key="c", parent=b)
    # Data written around the guards (raw SQL, an old bug): a -> b -> c -> a.
    SectionDefinition.objects.filter(pk=a.pk).update(parent=c)
    tool = ToolDefinitionFactory.create()
    attach(c, tool)
    prompt = PromptTemplateFactory.create()
    add_sections(prompt, a)

    assert set(assembly.reached_sections([a.pk])) == {a.pk, b.pk, c.pk}
    with pytest.raises(PromptError, match="own ancestor"):
        assembly.build_prompt(assembly.load_template(prompt.ref))
    edit = _disabled(ToolDefinition, pk=tool.pk)
    assert assembly.prompts_broken_by(edit) == []  # already broken: not the edit's
    assert _whole_catalog_check(monkeypatch, edit) == []
    deleted = assembly.with_descendants(b, assembly.reached_sections([b.pk]))
    assert {row.pk for row in deleted} == {a.pk, b.pk, c.pk}


def test_no_roots_read_nothing(django_assert_num_queries):
    with django_assert_num_queries(0):
        assert assembly.reached_sections([]) == {}
