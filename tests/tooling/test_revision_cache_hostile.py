"""Hostile review (h3) of the per-process revision prompt cache: a hosted tool
anywhere in the section tree (or a tree that cannot be read) is never cached,
and a shared ``Prompt`` keeps nothing from one render to the next."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tooling import assembly
from tooling import services as catalog
from tooling.assembly.catalog import _hosted_tools_in
from tooling.demo import seed_demo_catalog
from tooling.models import CatalogRevision


def _section(hosted: Any = (), children: Any = ()) -> dict[str, Any]:
    return {"hosted_tools": list(hosted), "children": list(children)}


@pytest.mark.parametrize(
    ("sections", "hosted"),
    [
        ([], False),
        ([_section(), _section(children=[_section()])], False),
        ([_section(hosted=[{"kind": "web_search"}])], True),
        ([_section(), _section(children=[_section(hosted=[{"kind": "x"}])])], True),
        ([_section(children=[_section(children=[_section(hosted=[{}])])])], True),
        ({"a": _section()}, True),  # not a list: cannot tell, so not cached
        (None, True),
        ([_section(), "not a section"], True),
        ([_section(children={"a": _section()})], True),
    ],
)
def test_a_hosted_tool_anywhere_in_the_tree_is_found(sections, hosted) -> None:
    assert bool(_hosted_tools_in(sections)) is hosted


def _revision(ref: str) -> CatalogRevision:
    seed_demo_catalog()
    template = assembly.load_template(ref)
    return catalog.record_revision(catalog.preview_prompt(template=template, params={}))


@pytest.mark.django_db
def test_a_shared_prompt_renders_each_runs_params_and_nothing_else() -> None:
    revision = _revision("demo/ship")  # a dependency and an approval policy
    built = catalog.build_prompt(revision=revision.data, digest=revision.hash)
    assert catalog.build_prompt(revision=revision.data, digest=revision.hash) is built
    texts: dict[str, str] = {}
    errors: list[BaseException] = []

    def render(service: str) -> None:
        try:
            for _ in range(50):
                text = built.render(values={"service": service}).text
                assert texts.setdefault(service, text) == text
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=render, args=(f"svc-{n}",)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    for service, text in texts.items():
        assert service in text
        assert not any(other in text for other in texts if other != service)
    assert "catalog-api" in built.render().text  # the default is still the default
