"""Reads compiled once (``tooling.prepared.select``, ADR 0020): the instances
they build are the ones Django's own queryset gives for the same values, on
SQLite and PostgreSQL, and a statement is compiled once per connection."""

from __future__ import annotations

import contextlib
import uuid
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Value
from django.test.utils import CaptureQueriesContext

from sessions_app import services
from sessions_app.models import AgentSession
from tests.sessions_app.factories import (
    AgentSessionFactory,
    ProviderCallFactory,
    UserFactory,
)
from tests.tooling.factories import PromptTemplateFactory
from tooling import assembly, prepared
from tooling.models import PromptTemplate

pytestmark = pytest.mark.django_db

HOSTILE = "\u202eevil \U0001f600 % %s ';-- \\ " + "x" * 5_000


def fields_of(instance: Any) -> dict[str, Any]:
    return {
        field.attname: getattr(instance, field.attname)
        for field in type(instance)._meta.concrete_fields
    }


def by_pk(queryset: Any = None) -> prepared.Select:
    queryset = AgentSession.objects.all() if queryset is None else queryset
    return prepared.select_one(
        queryset.filter(pk=prepared.slot(AgentSession, "id", "pk"))
    )


def test_a_compiled_read_builds_the_instance_djangos_get_builds():
    session = AgentSessionFactory.create(
        params={"text": HOSTILE, "nested": [1, 2.5, None, {"k": True}]},
        usage={"input_tokens": 7},
        output_text=HOSTILE,
        cost=Decimal("0.0001234567"),
        created_by=UserFactory.create(),
        deadline_at=datetime(2026, 11, 24, 12, 0, 0, 123456, tzinfo=UTC),
    )
    AgentSessionFactory.create()  # another row, not read
    read = by_pk().get({"pk": session.pk})
    expected = AgentSession.objects.get(pk=session.pk)
    assert type(read) is AgentSession
    assert fields_of(read) == fields_of(expected)
    assert read.params["text"] == HOSTILE
    assert read._state.adding is False
    assert read._state.db == connection.alias
    assert read.get_deferred_fields() == set()


def test_a_compiled_read_raises_as_get_does():
    statement = by_pk()
    with pytest.raises(AgentSession.DoesNotExist):
        statement.get({"pk": uuid.uuid4()})
    with pytest.raises(ValidationError):  # as filter(pk="not a uuid") does
        statement.get({"pk": "not a uuid"})
    first, second = AgentSessionFactory.create_batch(2, prompt_ref="same/ref")
    by_ref = prepared.select(
        AgentSession.objects.filter(
            prompt_ref=prepared.slot(AgentSession, "prompt_ref")
        ).order_by("created_at")
    )
    with pytest.raises(AgentSession.MultipleObjectsReturned):
        by_ref.get({"prompt_ref": "same/ref"})
    with pytest.raises(AgentSession.MultipleObjectsReturned):
        prepared.select_one(
            AgentSession.objects.filter(
                prompt_ref=prepared.slot(AgentSession, "prompt_ref")
            )
        ).get({"prompt_ref": "same/ref"})
    assert [row.pk for row in by_ref.rows({"prompt_ref": "same/ref"})] == [
        first.pk,
        second.pk,
    ]


def test_a_compiled_read_keeps_its_annotations():
    session = AgentSessionFactory.create()
    statement = prepared.select(
        AgentSession.objects.annotate(label=Value("x")).filter(
            pk=prepared.slot(AgentSession, "id", "pk")
        )
    )
    assert statement.get({"pk": session.pk}).label == "x"


@pytest.mark.parametrize(
    "queryset",
    [
        lambda: AgentSession.objects.values("id"),
        lambda: AgentSession.objects.only("id"),
        lambda: AgentSession.objects.select_related("created_by"),
        lambda: AgentSession.objects.prefetch_related("provider_calls"),
        lambda: AgentSession.objects.select_for_update(),
        lambda: AgentSession.objects.using("other"),
    ],
    ids=[
        "values",
        "only",
        "select_related",
        "prefetch_related",
        "select_for_update",
        "using",
    ],
)
def test_only_whole_instances_on_the_default_database_are_compiled(queryset):
    # what it would build differs from what Django builds: refused
    with pytest.raises(ValueError, match="whole instances"):
        prepared.select(queryset())


def test_extra_columns_are_read_as_django_reads_them():
    session = AgentSessionFactory.create()
    queryset = AgentSession.objects.extra(select={"one": "1"})
    read = by_pk(queryset).get({"pk": session.pk})
    expected = queryset.get(pk=session.pk)
    assert read.one == expected.one == 1  # type: ignore[attr-defined]
    assert fields_of(read) == fields_of(expected)


def test_one_row_is_read_without_its_querysets_ordering_as_get_does():
    session = AgentSessionFactory.create()
    for turn in (1, 2):  # an ordering over them would read the session twice
        ProviderCallFactory.create(session=session, turn=turn)
    queryset = AgentSession.objects.order_by("provider_calls__turn")
    assert queryset.get(pk=session.pk).pk == session.pk
    assert by_pk(queryset).get({"pk": session.pk}).pk == session.pk
    # rows() keeps it, as iterating the queryset does
    assert len(prepared.select(queryset).rows({})) == 2


def test_a_filter_that_matches_nothing_reads_nothing_as_get_does():
    session = AgentSessionFactory.create()
    queryset = AgentSession.objects.filter(prompt_ref__in=[])
    with pytest.raises(AgentSession.DoesNotExist):
        queryset.get(pk=session.pk)
    statement = by_pk(queryset)
    with (
        CaptureQueriesContext(connection) as captured,
        pytest.raises(AgentSession.DoesNotExist),
    ):
        statement.get({"pk": session.pk})
    assert captured.captured_queries == []


def test_a_slot_outside_set_refuses_none():
    # Django's filter(x=None) is IS NULL; a slot compiles "= (%s)", which
    # would match nothing: refused before anything is sent
    session = AgentSessionFactory.create(created_by=None)
    statement = prepared.select_one(
        AgentSession.objects.filter(
            pk=prepared.slot(AgentSession, "id", "pk"),
            created_by=prepared.slot(AgentSession, "created_by"),
        )
    )
    with pytest.raises(ValueError, match="cannot be None"):
        statement.get({"pk": session.pk, "created_by": None})


@pytest.mark.parametrize("bad", ["\ud800", "\x00"], ids=["lone_surrogate", "nul"])
def test_a_refused_ref_leaves_the_callers_transaction_usable(bad):
    # as Django's own get(): a value the driver refuses (a lone surrogate; a
    # NUL on PostgreSQL) raises, and the caller's transaction goes on
    PromptTemplateFactory.create(namespace="ns", key="k1")
    with transaction.atomic():
        with contextlib.suppress(Exception):
            assembly.load_template("ns/k" + bad)
        assert PromptTemplate.objects.count() == 1


def test_the_sessions_read_back_is_compiled_once_per_connection(monkeypatch):
    compiled: list[object] = []
    select = prepared.select

    def counting(queryset: Any, **kwargs: Any) -> prepared.Select:
        compiled.append(queryset.model)
        return select(queryset, **kwargs)

    monkeypatch.setattr(prepared, "select", counting)
    monkeypatch.setattr(connection, prepared._CACHE, {}, raising=False)
    sessions = AgentSessionFactory.create_batch(3)
    with CaptureQueriesContext(connection) as captured:
        read = [services.run_session(session_id=s.pk) for s in sessions]
    assert compiled == [AgentSession]  # once, for three reads
    assert [s.pk for s in read] == [s.pk for s in sessions]
    assert all(s.status == AgentSession.Status.SUCCEEDED for s in read)
    assert len(captured.captured_queries) >= 3


def test_a_template_is_loaded_with_the_generation_as_django_reads_it():
    template = PromptTemplateFactory.create(namespace="ns", key="k1", model="m")
    PromptTemplateFactory.create(namespace="ns", key="k2")
    loaded = assembly.load_template("ns/k1")
    expected = PromptTemplate.objects.with_generation().get(pk=template.pk)
    assert fields_of(loaded) == fields_of(expected)
    assert loaded.__dict__["catalog_token"] == expected.__dict__["catalog_token"]
    assert loaded.pk == template.pk


@pytest.mark.parametrize(
    "ref",
    ["ns/missing", "ns", "", "ns/k1/extra", "NS/k1", HOSTILE + "/" + HOSTILE],
)
def test_a_ref_that_names_no_enabled_template_is_not_found(ref):
    PromptTemplateFactory.create(namespace="ns", key="k1")
    PromptTemplateFactory.create(namespace="ns", key="off", enabled=False)
    with pytest.raises(PromptTemplate.DoesNotExist):
        assembly.load_template(ref)
    with pytest.raises(PromptTemplate.DoesNotExist):
        assembly.load_template("ns/off")


def test_a_disabled_template_is_not_loaded_once_the_statement_is_compiled():
    template = PromptTemplateFactory.create(namespace="ns", key="k1")
    assert assembly.load_template("ns/k1").pk == template.pk
    PromptTemplate.objects.filter(pk=template.pk).update(enabled=False)
    with pytest.raises(PromptTemplate.DoesNotExist):
        assembly.load_template("ns/k1")
