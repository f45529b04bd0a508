"""A revision's data and its prompt are read and built once per process:
revisions are content-addressed, and a prompt without hosted tools depends on
nothing but its revision and the handler registry."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tooling import assembly
from tooling import services as catalog
from tooling.demo import seed_demo_catalog
from tooling.handlers import registry
from tooling.models import CatalogRevision
from tooling.runtime import Tool

pytestmark = pytest.mark.django_db


@dataclasses.dataclass(frozen=True)
class _Nothing:
    pass


def _extra(params: _Nothing, *, context: Any) -> Any:
    return None


def revision_of(ref: str) -> CatalogRevision:
    seed_demo_catalog()
    template = assembly.load_template(ref)
    return catalog.record_revision(catalog.preview_prompt(template=template, params={}))


def test_a_revisions_data_is_read_once_and_each_caller_gets_a_copy(
    django_assert_num_queries,
):
    revision = revision_of("demo/release")
    assembly.catalog._REVISIONS.clear()
    with django_assert_num_queries(1):
        first = assembly.revision_data(revision.hash)
    with django_assert_num_queries(0):
        second = assembly.revision_data(revision.hash)
    assert first == second == revision.data
    first["prompt"]["model"] = "changed by a caller"
    assert assembly.revision_data(revision.hash) == revision.data
    assert assembly.revision_data("0" * 64) is None


def test_a_prompt_without_hosted_tools_is_built_once_per_registry_version():
    revision = revision_of("demo/release")
    data = revision.data
    built = catalog.build_prompt(revision=data, digest=revision.hash)
    assert catalog.build_prompt(revision=data, digest=revision.hash) is built
    assert catalog.build_prompt(revision=data) is not built  # no digest: built
    registry.register(
        "tests.cache.extra", Tool(name="extra", description="x", handler=_extra)
    )
    try:
        rebuilt = catalog.build_prompt(revision=data, digest=revision.hash)
    finally:
        registry.unregister("tests.cache.extra")
    assert rebuilt is not built  # a handler may have been replaced
    assert rebuilt.render().text == built.render().text


def test_a_prompt_with_hosted_tools_is_built_every_time():
    revision = revision_of("demo/research")  # web search: hosted
    data = revision.data
    first = catalog.build_prompt(revision=data, digest=revision.hash)
    assert catalog.build_prompt(revision=data, digest=revision.hash) is not first
