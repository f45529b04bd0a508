"""Reading the catalog: templates, the section tree, and prompts built from them.

Every function reads only the rows its prompts reach (their root sections and
everything under them, with those sections' tools, hosted tools and
policies) with a constant number of queries, whatever the size of the rest of
the catalog, and builds prompts through ``freeze_prompt`` and ``thaw_prompt``
(``revisions.py``), the same path a run takes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Field, Model, Prefetch

from tooling.handlers import registry as handler_registry
from tooling.models import (
    CatalogRevision,
    ModelCapability,
    PolicyDefinition,
    PromptSection,
    PromptTemplate,
    SectionDefinition,
    SectionHostedTool,
    SectionTool,
)
from tooling.runtime import Prompt, PromptError

from .lru import LRUCache
from .revisions import freeze_prompt, thaw_prompt


def _section_links() -> tuple[Prefetch | str, ...]:
    """A section's tools, hosted tools and policies, in order (3 queries)."""
    return (
        Prefetch(
            "sectiontool_set",
            queryset=SectionTool.objects.select_related("tool").order_by(
                "position", "id"
            ),
        ),
        Prefetch(
            "sectionhostedtool_set",
            queryset=SectionHostedTool.objects.select_related("hosted_tool").order_by(
                "position", "id"
            ),
        ),
        "policies",
    )


def all_sections() -> dict[int, SectionDefinition]:
    """Every section in tree order (``position``, ``key``), with its tools,
    hosted tools and policies (4 queries). Reads the whole catalog: what
    serves prompts reads ``reached_sections``."""
    queryset = SectionDefinition.objects.prefetch_related(*_section_links()).order_by(
        "position", "key"
    )
    return {section.pk: section for section in queryset}


def sql_names(model: type[Model], *fields: str) -> list[str]:
    """The quoted table of ``model``, then the quoted columns of ``fields``
    (for the raw SQL of the tree walks)."""
    quote = connection.ops.quote_name
    names = [quote(model._meta.db_table)]
    for name in fields:
        field = model._meta.get_field(name)
        if not isinstance(field, Field) or not field.column:
            raise TypeError(f"{model.__name__}.{name} has no column.")
        names.append(quote(field.column))
    return names


def reached_sections(root_ids: Iterable[int | None]) -> dict[int, SectionDefinition]:
    """The sections ``root_ids`` reach (themselves and every section under
    them) in tree order, as ``all_sections`` has them: 4 queries (none without
    roots), reading no row of the rest of the catalog.

    The rows come from one recursive query that walks down the tree level by
    level through the ``parent`` index, carrying whole rows: a query for the
    ids only, joined back to the table, is planned by PostgreSQL as a scan of
    the whole table (its estimate of a recursive query's size is a fixed
    guess). ``UNION`` drops a row already found, so a corrupted tree with a
    cycle ends the walk too."""
    ids = sorted({pk for pk in root_ids if pk is not None})
    if not ids:
        return {}
    table, pk, parent, position, key = sql_names(
        SectionDefinition, "id", "parent", "position", "key"
    )
    marks = ", ".join(["%s"] * len(ids))
    sql = (
        f"WITH RECURSIVE wink_reached AS ("
        f"SELECT wink_root.* FROM {table} wink_root WHERE wink_root.{pk} IN ({marks}) "
        f"UNION SELECT wink_child.* FROM {table} wink_child "
        f"INNER JOIN wink_reached ON wink_child.{parent} = wink_reached.{pk}) "
        f"SELECT * FROM wink_reached ORDER BY {position}, {key}"
    )
    sections = SectionDefinition.objects.raw(sql, ids).prefetch_related(
        *_section_links()
    )
    return {section.pk: section for section in sections}


def ancestor_ids(seed_sql: str, seed_params: Sequence[Any]) -> list[int]:
    """The ids of the sections ``seed_sql`` selects (one column, ``id``) and of
    every section above them: one recursive query walking up the tree through
    the primary key (it ends on a cycle too)."""
    table, pk, parent = sql_names(SectionDefinition, "id", "parent")
    sql = (
        f"WITH RECURSIVE wink_above(id) AS ({seed_sql} "
        f"UNION SELECT wink_row.{parent} FROM {table} wink_row "
        f"INNER JOIN wink_above ON wink_row.{pk} = wink_above.id "
        f"WHERE wink_row.{parent} IS NOT NULL) "
        "SELECT id FROM wink_above"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, list(seed_params))
        return [row[0] for row in cursor.fetchall()]


def _links(template: PromptTemplate) -> list[PromptSection]:
    """The template's root section links (prefetched by ``with_catalog``)."""
    return list(template.prompt_sections.all())


def _roots(
    links: Sequence[PromptSection], sections: Mapping[int, SectionDefinition]
) -> list[SectionDefinition]:
    return [sections[link.section_id] for link in links]


def build_prompt(template: PromptTemplate) -> Prompt:
    """The runtime prompt of a saved template, from the live catalog."""
    links = _links(template)
    sections = reached_sections(link.section_id for link in links)
    return thaw_prompt(
        freeze_prompt(
            template,
            sections=sections,
            roots=_roots(links, sections),
            with_capabilities=False,
        )
    )


# Frozen revisions by (template, catalog generation, the settings a freeze
# reads), as JSON text: each hit is a new copy. See tooling/generation.py for
# why an entry is never older than the catalog its token names.
_FROZEN: LRUCache[tuple[Any, ...], str] = LRUCache(256)


def _frozen_key(template: PromptTemplate) -> tuple[Any, ...] | None:
    # The token is used once: an instance kept after its load (a session's
    # ``prompt``) holds a token the catalog may have moved past since.
    token = template.__dict__.pop("catalog_token", None)
    if not token or template.pk is None:
        return None
    return (
        template.pk,
        token,
        settings.WINK_MCP_HEADER_ENV_PREFIX,
        tuple(settings.WINK_MCP_HEADER_ENV_ALLOW),
    )


def freeze_template(template: PromptTemplate) -> dict[str, Any]:
    """The revision JSON of a saved template (see ``revisions.freeze_prompt``).

    A template just loaded ``with_generation`` (``load_template``) is frozen
    once per catalog generation in this process: until a catalog write
    changes the token, the next such freeze reads no catalog row. Only the
    first freeze after the load uses the token."""
    key = _frozen_key(template)
    text = _FROZEN.get(key) if key is not None else None
    if text is not None:
        return dict(json.loads(text))
    links = _links(template)
    sections = reached_sections(link.section_id for link in links)
    data = freeze_prompt(template, sections=sections, roots=_roots(links, sections))
    if key is not None:
        _FROZEN.put(key, json.dumps(data))
    return data


def freeze_templates(
    templates: Sequence[PromptTemplate],
) -> dict[int, dict[str, Any] | PromptError]:
    """The revision JSON of each template (or why it cannot be frozen), with a
    constant number of queries for any number of templates, reading only the
    sections they reach."""
    links = {template.pk: _links(template) for template in templates}
    sections = reached_sections(
        link.section_id for found in links.values() for link in found
    )
    kinds = {
        row.model: sorted(str(kind) for kind in row.hosted_kinds or [])
        for row in ModelCapability.objects.filter(
            model__in={template.model for template in templates}
        )
    }
    frozen: dict[int, dict[str, Any] | PromptError] = {}
    for template in templates:
        try:
            data = freeze_prompt(
                template,
                sections=sections,
                roots=_roots(links[template.pk], sections),
                with_capabilities=False,
            )
        except PromptError as error:
            frozen[template.pk] = error
            continue
        data["model_hosted_kinds"] = kinds.get(template.model)
        frozen[template.pk] = data
    return frozen


def build_prompt_from_parts(
    template: PromptTemplate,
    *,
    roots: Sequence[SectionDefinition],
    policies: Sequence[PolicyDefinition] | None,
    sections: Mapping[int, SectionDefinition] | None = None,
) -> Prompt:
    """Build a prompt from a template's fields and the given root sections and
    prompt-level policies (used before they are saved, by the admin)."""
    if sections is None:
        sections = reached_sections(root.pk for root in roots)
    return thaw_prompt(
        freeze_prompt(
            template,
            sections=sections,
            roots=roots,
            policies=list(policies or []),
            with_capabilities=False,
        )
    )


def load_template(ref: str) -> PromptTemplate:
    """The enabled template named ``<namespace>/<key>``, with the catalog's
    generation (``catalog_token``) and the revision its default label points
    at (``released_revision``, ``None`` without one), in one query; its links
    are read only if ``freeze_template`` has no frozen revision for them. Raises
    ``PromptTemplate.DoesNotExist`` as ``get()`` does."""
    namespace, _, key = ref.partition("/")
    return (
        PromptTemplate.objects.enabled()
        .with_generation()
        .with_release()
        .get(namespace=namespace, key=key)
    )


# Revisions' data by hash, as JSON text: a revision is content-addressed and
# never changes, so an entry never goes stale; each hit is a new copy.
_REVISIONS: LRUCache[str, str] = LRUCache(256)


def revision_data(digest: str) -> dict[str, Any] | None:
    """The data of the catalog revision ``digest`` (``None``: no such row),
    read once per process: a worker's runs of one revision read it once."""
    text = _REVISIONS.get(digest)
    if text is not None:
        return dict(json.loads(text))
    data: dict[str, Any] | None = (
        CatalogRevision.objects.filter(pk=digest).values_list("data", flat=True).first()
    )
    if data is None:
        return None
    _REVISIONS.put(digest, json.dumps(data))
    return data


# Prompts of revisions without hosted tools, by hash and handler registry
# version: such a prompt depends on nothing else (hosted tools may read the
# environment and the shell executors when built), and a ``Prompt`` is not
# changed by a run, so runs of one revision share it.
_PROMPTS: LRUCache[tuple[str, int], Prompt] = LRUCache(256)


def revision_prompt(digest: str, data: Mapping[str, Any]) -> Prompt:
    """The runtime ``Prompt`` of revision ``digest`` (whose data is ``data``),
    built once per process and handler registry version when the revision has
    no hosted tools, every time otherwise. Raises as ``thaw_prompt`` does."""
    if _hosted_tools_in(data.get("sections")):
        return thaw_prompt(data)
    key = (digest, handler_registry.version)
    prompt = _PROMPTS.get(key)
    if prompt is None:
        prompt = thaw_prompt(data)
        _PROMPTS.put(key, prompt)
    return prompt


def _hosted_tools_in(sections: Any) -> bool:
    """Whether a revision's sections hold a hosted tool (or cannot be read)."""
    if not isinstance(sections, list):
        return True
    return any(
        not isinstance(section, Mapping)
        or section.get("hosted_tools")
        or _hosted_tools_in(section.get("children", []))
        for section in sections
    )
