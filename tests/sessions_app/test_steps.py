"""A run's writes: one transaction per step, in the fewest statements
(``sessions_app/steps.py``), measured on the real database."""

from __future__ import annotations

import dataclasses
import re
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from django.db import DatabaseError, IntegrityError, connection, models, transaction
from django.test.utils import CaptureQueriesContext
from sessions_app.steps import StepWriter

from sessions_app import inserts, services, steps
from sessions_app.models import (
    AgentSession,
    Citation,
    PolicyDenial,
    ProviderCall,
    SessionStateEntry,
    ToolInvocation,
)
from sessions_app.runs import lifecycle
from sessions_app.runs.state import DatabaseFilesystem, DatabaseSession
from tests.sessions_app.factories import AgentSessionFactory
from tests.sessions_app.step_rows import invocation
from tooling import prepared
from tooling.handlers import registry
from tooling.models import (
    PromptSection,
    PromptTemplate,
    SectionDefinition,
    SectionTool,
    ToolDefinition,
)
from tooling.offline import ScriptedModel, offline_transport, parallel_calls_script
from tooling.runtime import Tool, ToolContext, ToolResult

pytestmark = pytest.mark.django_db

# Statements that only bracket a transaction or a savepoint (SQLite shows its
# BEGIN; psycopg sends PostgreSQL's without a cursor).
BRACKETS = re.compile(r"^\s*(BEGIN|SAVEPOINT|RELEASE|ROLLBACK)", re.IGNORECASE)


def statements(captured: CaptureQueriesContext) -> list[str]:
    return [query["sql"] for query in captured.captured_queries]


def brackets(captured: CaptureQueriesContext) -> list[str]:
    return [sql for sql in statements(captured) if BRACKETS.match(sql)]


def files(database: DatabaseSession) -> DatabaseFilesystem:
    found = database.resources.get(DatabaseFilesystem)
    assert found is not None
    return found


@pytest.fixture
def store() -> tuple[AgentSession, StepWriter, DatabaseSession]:
    session = AgentSessionFactory.create()
    writer = StepWriter()
    return session, writer, DatabaseSession(session, writer)


def test_a_step_that_writes_nothing_costs_its_insert_only(store):
    session, writer, database = store
    with CaptureQueriesContext(connection) as captured, database.transaction():
        writer.settle()  # as the runtime does before a handler runs
        with database.transaction():  # the handler's, which writes nothing
            pass
        writer.add([invocation(session, 1)])
        assert not ToolInvocation.objects.exists()  # waits for the step's end
    assert [sql.split()[0] for sql in statements(captured)][-1] == "INSERT"
    assert brackets(captured) == []
    assert ToolInvocation.objects.filter(session=session).count() == 1


def test_rows_outside_a_step_wait_for_the_next_effect(store):
    session, writer, _ = store
    with CaptureQueriesContext(connection) as captured:
        writer.add([invocation(session, 1)])
        assert statements(captured) == []  # held back
        writer.settle()  # a provider request or a handler is next
    assert len(statements(captured)) == 1
    assert ToolInvocation.objects.count() == 1


def test_a_step_that_ran_nothing_waits_with_them_and_goes_with_the_next_write(
    store,
):
    session, writer, database = store
    writer.add([invocation(session, 1)])  # a provider call, say
    with database.transaction():  # a denied call: no handler ran, no state
        writer.add([PolicyDenial(session=session, policy_name="p", tool_name="t")])
        writer.add([invocation(session, 2)])
    assert not ToolInvocation.objects.exists()
    with CaptureQueriesContext(connection) as captured, database.transaction():
        writer.settle()  # the next call's handler is about to run
        assert ToolInvocation.objects.count() == 2  # before it runs
        database.put_state("plan", {"steps": 1})
        writer.add([invocation(session, 3)])
    assert sorted(ToolInvocation.objects.values_list("sequence", flat=True)) == [
        1,
        2,
        3,
    ]
    assert PolicyDenial.objects.count() == 1
    if connection.vendor == "postgresql":  # held rows in one round trip
        written = [sql for sql in statements(captured) if sql.startswith("INSERT")]
        assert len(written) == 2
        assert written[0].count("INSERT INTO") == 3  # the three held rows


def test_a_write_that_cannot_wait_takes_the_held_rows_first(store):
    session, writer, database = store
    writer.add([invocation(session, 1)])
    database.put_state("plan", {"steps": 1})  # outside a step: now, with them
    assert ToolInvocation.objects.count() == 1
    writer.add([invocation(session, 2)])
    with pytest.raises(RuntimeError), database.transaction():
        with database.transaction():
            files(database).write("notes.md", "x")  # opens the step's transaction
            assert ToolInvocation.objects.count() == 2  # written before it
        raise RuntimeError("the step rolls back")
    # the held row was committed on its own: the step's rollback keeps it
    assert ToolInvocation.objects.count() == 2
    assert not files(database).exists("notes.md")


def test_a_provider_call_and_its_citations_are_one_insert_each(store):
    session, writer, _ = store
    call = ProviderCall(session=session, turn=1, event_id=uuid.uuid4())
    citations = [
        Citation(session=session, provider_call=call, url=f"https://e.test/{n}")
        for n in range(3)
    ]
    with CaptureQueriesContext(connection) as captured:
        writer.add([call, *citations])
        writer.settle()
    inserts = [sql for sql in statements(captured) if sql.startswith("INSERT")]
    assert len(inserts) == 2
    assert set(
        Citation.objects.filter(session=session).values_list(
            "provider_call_id", flat=True
        )
    ) == {call.pk}


def test_state_written_in_a_nested_step_waits_and_rolls_back_without_sql(store):
    session, writer, database = store
    with CaptureQueriesContext(connection) as captured, database.transaction():
        writer.settle()  # as the runtime does before a handler runs
        with database.transaction() as handler:
            database.put_state("plan", {"steps": 1})
            writer.add([invocation(session, 99)])  # recorded inside, dropped
            assert database.get_state("plan") == {"steps": 1}  # its own write
            assert not SessionStateEntry.objects.exists()  # waits for the end
            handler.rollback()
        writer.add([invocation(session, 1)])
    assert brackets(captured) == []  # no transaction, no savepoint
    assert database.get_state("plan") is None
    assert not SessionStateEntry.objects.exists()
    assert list(ToolInvocation.objects.values_list("sequence", flat=True)) == [1]


def test_a_nested_step_that_writes_a_file_is_a_savepoint_and_rolls_back_alone(
    store,
):
    session, writer, database = store
    with CaptureQueriesContext(connection) as captured, database.transaction():
        database.put_state("memory", {"read": ["a.md"]})  # the outer step's
        with database.transaction() as handler:
            database.put_state("plan", {"steps": 1})
            files(database).write("notes.md", "draft")
            handler.rollback()
        writer.add([invocation(session, 1)])
    assert any(sql.startswith("SAVEPOINT") for sql in brackets(captured))
    assert not files(database).exists("notes.md")
    assert database.get_state("plan") is None
    # written before the savepoint, in the outer step: kept
    assert database.get_state("memory") == {"read": ["a.md"]}
    assert SessionStateEntry.objects.get().key == "memory"
    assert list(ToolInvocation.objects.values_list("sequence", flat=True)) == [1]


def test_a_read_after_a_rollback_sees_the_writes_still_waiting(store):
    _, _, database = store
    with database.transaction():
        database.put_state("plan", {"steps": 1})
        with database.transaction() as handler:
            database.put_state("plan", {"steps": 2})
            handler.rollback()
        # the kept reads were dropped with the rollback: read again, with
        # the outer step's write that is not in the database yet
        assert not SessionStateEntry.objects.exists()
        assert database.get_state("plan") == {"steps": 1}
    assert SessionStateEntry.objects.get().value == {"steps": 1}


def test_a_reset_in_a_step_is_not_undone_by_the_writes_before_it(store):
    _, _, database = store
    database.put_state("old", 1)  # outside a step: written at once
    with database.transaction():
        database.put_state("plan", {"steps": 1})
        database.reset()
        database.put_state("after", 2)
    assert sorted(SessionStateEntry.objects.values_list("key", flat=True)) == ["after"]
    assert database.get_state("plan") is None


def test_a_slice_written_twice_in_a_step_is_one_row_with_the_last_value(store):
    _, _, database = store
    with database.transaction():
        for steps in range(3):
            database.put_state("plan", {"steps": steps})
        database.put_state("memory", {"read": []})
    assert dict(SessionStateEntry.objects.values_list("key", "value")) == {
        "plan": {"steps": 2},
        "memory": {"read": []},
    }


# as a run writes: autocommit between steps (not inside a test's transaction)
@pytest.mark.django_db(transaction=True)
def test_a_step_whose_insert_fails_writes_none_of_its_state(store):
    session, writer, database = store
    duplicate = uuid.uuid4()
    writer.add([invocation(session, 1, duplicate)])
    with pytest.raises(IntegrityError), database.transaction():
        database.put_state("plan", {"steps": 1})
        writer.add(
            [
                PolicyDenial(session=session, policy_name="p", tool_name="echo"),
                invocation(session, 2, duplicate),
            ]
        )
    assert not SessionStateEntry.objects.exists()
    assert not PolicyDenial.objects.exists()
    assert ToolInvocation.objects.count() == 1


def test_a_fresh_sessions_state_is_not_read(store, django_assert_num_queries):
    session, writer, _ = store
    database = DatabaseSession(session, writer, fresh=True)
    with django_assert_num_queries(0):
        assert database.get_state("plan") is None


@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="one round trip per step is PostgreSQL's (SQLite has none to save; "
    "run the suite with DATABASE_URL=postgres://...)",
)
def test_a_tool_calls_step_is_one_round_trip(store):
    session, writer, database = store
    with CaptureQueriesContext(connection) as captured, database.transaction():
        with database.transaction():  # the handler's
            database.put_state("plan", {"steps": 1})
        writer.add([PolicyDenial(session=session, policy_name="p", tool_name="echo")])
        writer.add([invocation(session, 1)])
    assert len(statements(captured)) == 1
    assert statements(captured)[0].count("INSERT INTO") == 3
    assert database.get_state("plan") == {"steps": 1}
    assert PolicyDenial.objects.count() == ToolInvocation.objects.count() == 1


def test_a_steps_rows_of_one_model_in_a_row_are_one_insert(store):
    session, _, _ = store
    slices = [
        steps._Upsert(
            SessionStateEntry(session=session, key=key, value_type="t", value=1),
            unique_fields=("session", "key"),
            update_fields=("value_type", "value"),
        )
        for key in ("a", "b")
    ]
    denial = PolicyDenial(session=session, policy_name="p", tool_name="t")
    rows = [invocation(session, 1), invocation(session, 2), denial]
    batches = steps._batches([*rows, invocation(session, 3)], slices)
    assert [(b.model, len(b.rows)) for b in batches] == [
        (SessionStateEntry, 2),
        (ToolInvocation, 2),
        (PolicyDenial, 1),
        (ToolInvocation, 1),  # after another model: its own, in its place
    ]


def test_state_written_in_a_step_is_committed_once_with_its_rows(store):
    session, writer, database = store
    with database.transaction():
        with database.transaction():
            database.put_state("plan", {"steps": 1})
            files(database).write("notes.md", "first")
        files(database).write("notes.md", "second")
        writer.add([invocation(session, 1)])
    assert database.get_state("plan") == {"steps": 1}
    assert files(database).read("notes.md") == "second"
    assert ToolInvocation.objects.count() == 1
    database.put_state("plan", {"steps": 2})  # an upsert: still one row
    assert session.state_entries.count() == 1
    assert database.get_state("plan") == {"steps": 2}


def test_an_exception_in_a_step_drops_its_writes_and_its_rows(store):
    session, writer, database = store
    with pytest.raises(RuntimeError), database.transaction():
        database.put_state("plan", {"steps": 1})
        writer.add([invocation(session, 1)])
        raise RuntimeError("the worker stops here")
    with pytest.raises(RuntimeError), database.transaction():  # no write at all
        writer.add([invocation(session, 2)])
        raise RuntimeError("the worker stops here")
    assert database.get_state("plan") is None
    assert not ToolInvocation.objects.exists()
    # The writer is usable afterwards.
    with database.transaction():
        writer.settle()
        writer.add([invocation(session, 3)])
    assert ToolInvocation.objects.count() == 1


def test_keys_the_store_cannot_hold_are_refused_before_any_sql(store):
    _, _, database = store
    with CaptureQueriesContext(connection) as captured, database.transaction():
        for key in ("k" * 101, "nul\x00key"):
            with pytest.raises(ValueError):
                database.put_state(key, 1)
    assert statements(captured) == []


# -- a whole run ---------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class EchoParams:
    text: str


@dataclasses.dataclass(frozen=True)
class Echo:
    text: str


# While a test watches: how many provider calls each handler found written.
watched: list[list[int]] = []


def echo(params: EchoParams, *, context: ToolContext) -> ToolResult[Echo]:
    if watched:
        watched[0].append(ProviderCall.objects.count())
    return ToolResult.ok(Echo(params.text))


@pytest.fixture
def echo_prompt() -> Iterator[str]:
    registry.register(
        "tests.steps.echo", Tool(name="echo", description="Echo.", handler=echo)
    )
    tool = ToolDefinition.objects.create(name="echo", handler_key="tests.steps.echo")
    section = SectionDefinition.objects.create(
        key="steps", title="Steps", template="Echo."
    )
    SectionTool.objects.create(section=section, tool=tool, position=0)
    template = PromptTemplate.objects.create(
        namespace="tests", key="steps", model="gpt-5.4", max_turns=20
    )
    PromptSection.objects.create(prompt=template, section=section, position=0)
    yield template.ref
    registry.unregister("tests.steps.echo")


def run_counting(ref: str, turns: int, calls: int) -> tuple[AgentSession, list[str]]:
    client = openai.OpenAI(
        api_key="sk-test",
        base_url="http://offline-provider.invalid/v1",
        # The SDK takes an httpx client too, though typed for httpx2's.
        http_client=httpx.Client(  # type: ignore[arg-type]
            transport=offline_transport(
                ScriptedModel(script=parallel_calls_script(turns, calls, "echo"))
            )
        ),
        max_retries=0,
    )
    with CaptureQueriesContext(connection) as captured:
        session = services.start_session(prompt_ref=ref, client=client)
    assert session.status == AgentSession.Status.SUCCEEDED, session.error_message
    return session, [sql for sql in statements(captured) if not BRACKETS.match(sql)]


def kinds(sqls: list[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for sql in sqls:
        table = re.search(r'(?:INTO|UPDATE|FROM)\s+"?(\w+)"?', sql)
        key = f"{sql.split()[0]} {table.group(1) if table else ''}"
        found[key] = found.get(key, 0) + 1
    return found


def test_a_run_costs_one_insert_per_provider_call_and_per_tool_call(echo_prompt):
    run_counting(echo_prompt, turns=0, calls=1)  # records the catalog revision
    small, few = run_counting(echo_prompt, turns=1, calls=1)
    large, many = run_counting(echo_prompt, turns=4, calls=3)
    assert (small.turns, small.tool_invocations.count()) == (2, 1)
    assert (large.turns, large.tool_invocations.count()) == (5, 12)
    # Every extra provider call and tool call is exactly one INSERT.
    assert len(many) - len(few) == (5 - 2) + (12 - 1)
    grown = kinds(many)
    for key, count in kinds(few).items():
        grown[key] -= count
    assert {key: n for key, n in grown.items() if n} == {
        "INSERT sessions_app_providercall": 3,
        "INSERT sessions_app_toolinvocation": 11,
    }
    # And the rest of a run is a fixed, small number of statements: load the
    # template with the catalog generation (its frozen revision is cached
    # under it), insert its revision (unless stored: no read) and the session,
    # claim, finish, read the session back. On PostgreSQL the revision, the
    # session and the claim go in one query, after the SET that relaxes
    # synchronous_commit for the run (the end's query restores it), and the
    # last provider call, held back since nothing ran after it, goes in the
    # end's query (ADR 0018). No step that writes no state is bracketed by a
    # transaction.
    postgresql = connection.vendor == "postgresql"
    fixed = 4 if postgresql else 6
    own_statements = 2 - postgresql + 1  # provider calls and the tool call
    assert len(few) - own_statements == fixed, "\n".join(few)
    if postgresql:
        assert few[1].startswith(steps.RELAX + 'INSERT INTO "tooling_catalogrev')
        assert (
            'ON CONFLICT DO NOTHING;\nINSERT INTO "sessions_app_agentsession"'
            in (few[1])
        )
        assert few[1].split(";\n")[-1].startswith('UPDATE "sessions_app_agentsession"')
        assert few[-2].startswith(steps.RESTORE + 'INSERT INTO "sessions_app_prov')


def test_a_provider_call_is_written_before_its_tool_calls_run(echo_prompt):
    watched.append([])
    try:
        session, _ = run_counting(echo_prompt, turns=3, calls=2)
    finally:
        seen = watched.pop()
    # each handler of turn t found the t provider calls so far written,
    # the one whose response asked for it included
    assert seen == [1, 1, 2, 2, 3, 3]
    assert session.provider_calls.count() == 4  # the last, with the end
    assert session.tool_invocations.count() == 6


def claimed_holding_a_row() -> tuple[AgentSession, lifecycle.Claim, StepWriter]:
    """A claimed run whose writer holds one tool call's row."""
    session = AgentSessionFactory.create(status=AgentSession.Status.QUEUED)
    claim = lifecycle.claim(session.pk)
    assert claim is not None
    writer = StepWriter()
    writer.add([invocation(session, 1)])
    return session, claim, writer


def test_held_rows_are_written_by_an_end_that_lost_the_lease():
    session, claim, writer = claimed_holding_a_row()
    stale = dataclasses.replace(claim, token=uuid.uuid4())  # another worker's now
    with pytest.raises(lifecycle.LeaseLost):
        lifecycle.finish(
            stale,
            status=AgentSession.Status.SUCCEEDED,
            records=writer.take(),
            summed={"usage": {}, "turns": 0, "cost": 0, "unpriced_calls": 0},
        )
    assert writer.held == ()
    assert ToolInvocation.objects.filter(session=session).count() == 1


@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="an end that fails in the database needs PostgreSQL's numeric "
    "limits (run the suite with DATABASE_URL=postgres://...)",
)
@pytest.mark.django_db(transaction=True)
def test_held_rows_stand_when_the_end_they_went_with_fails():
    session, claim, writer = claimed_holding_a_row()
    too_costly = {"usage": {}, "turns": 0, "cost": 10**30, "unpriced_calls": 0}
    with pytest.raises(DatabaseError):  # the cost column cannot hold it
        lifecycle.finish(
            claim,
            status=AgentSession.Status.SUCCEEDED,
            records=writer.take(),
            summed=too_costly,
        )
    assert ToolInvocation.objects.filter(session=session).count() == 1
    assert AgentSession.objects.get(pk=session.pk).status == "running"


def test_a_run_writes_its_totals_without_summing_them_again(echo_prompt):
    session, sqls = run_counting(echo_prompt, turns=2, calls=1)
    assert not [sql for sql in sqls if "SUM(" in sql.upper()]
    calls = list(session.provider_calls.all())
    assert session.turns == len(calls) == 3
    assert session.usage["input_tokens"] == sum(call.input_tokens for call in calls)
    assert (
        session.usage["total_tokens"]
        == session.usage["input_tokens"] + session.usage["output_tokens"]
    )


def test_statements_do_not_depend_on_other_sessions(echo_prompt):
    run_counting(echo_prompt, turns=0, calls=1)  # records the catalog revision
    _, before = run_counting(echo_prompt, turns=2, calls=2)
    AgentSessionFactory.create_batch(30)
    _, after = run_counting(echo_prompt, turns=2, calls=2)
    assert kinds(before) == kinds(after)


def synchronous_commit() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        return str(cursor.fetchone()[0])


@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="synchronous_commit is PostgreSQL's (run the suite with "
    "DATABASE_URL=postgres://...)",
)
@pytest.mark.parametrize("durable", [False, True])
def test_a_run_commits_without_waiting_for_the_flush_unless_told(settings, durable):
    settings.WINK_RUN_DURABLE_COMMITS = durable
    before = synchronous_commit()
    with steps.run_commits():
        inside = synchronous_commit()
    assert inside == (before if durable else "off")
    assert synchronous_commit() == before


@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="synchronous_commit is PostgreSQL's (run the suite with "
    "DATABASE_URL=postgres://...)",
)
def test_a_finished_run_is_flushed_with_all_its_steps(echo_prompt):
    _, sqls = run_counting(echo_prompt, turns=1, calls=1)
    relaxed = next(
        i for i, sql in enumerate(sqls) if "SET synchronous_commit TO off" in sql
    )
    restored = next(
        i for i, sql in enumerate(sqls) if "RESET synchronous_commit" in sql
    )
    ending = next(
        i
        for i, sql in enumerate(sqls)
        if 'UPDATE "sessions_app_agentsession"' in sql and '"finished_at" = ' in sql
    )
    # Every step commits relaxed; the end commits with the server's setting,
    # restored in its own query, which flushes the log up to it (and so every
    # step before it, and the last provider call it carries).
    assert relaxed < restored == ending
    assert sqls[ending].startswith(steps.RESTORE + 'INSERT INTO "sessions_app_prov')
    assert sum("synchronous_commit" in sql for sql in sqls) == 2  # no more


def test_state_is_read_once_and_kept_with_the_runs_writes(
    store, django_assert_num_queries
):
    _, _, database = store
    database.put_state("plan", {"steps": [1]})
    database.put_state("memory", {"read": ["a.md"]})
    with django_assert_num_queries(1):
        assert database.get_state("plan") == {"steps": [1]}
        assert database.get_state("memory") == {"read": ["a.md"]}
        assert database.get_state("missing") is None
    database.get_state("plan")["steps"].append(2)  # a handler's own copy
    assert database.get_state("plan") == {"steps": [1]}
    with database.transaction(), database.transaction():  # a step that keeps
        database.put_state("plan", {"steps": [1, 2]})
    with django_assert_num_queries(0):
        assert database.get_state("plan") == {"steps": [1, 2]}


def test_a_read_after_a_rolled_back_write_sees_the_stored_value(store):
    _, _, database = store
    database.put_state("plan", {"steps": 1})
    with database.transaction(), database.transaction() as handler:
        database.put_state("plan", {"steps": 2})
        assert database.get_state("plan") == {"steps": 2}  # its own write
        handler.rollback()
    assert database.get_state("plan") == {"steps": 1}


# -- the text of single-row statements, reused -----------------------------------


def plain(params: Any) -> list[Any]:
    """Parameters comparable across calls (JSON adapters by their value)."""
    return [getattr(param, "obj", param) for param in params]


def rows_of_every_kind(session: AgentSession, n: int) -> list[inserts.Batch]:
    text = f"value {n} with % and %s and ';-- and \\\\ and \u00e9"
    return [
        inserts.Batch(
            SessionStateEntry,
            [SessionStateEntry(session=session, key=f"k{n}", value={"n": [n, text]})],
            ("session", "key"),
            ("value_type", "value"),
        ),
        inserts.Batch(ToolInvocation, [invocation(session, n)]),
        inserts.Batch(
            PolicyDenial,
            [PolicyDenial(session=session, policy_name=text, tool_name="echo", turn=n)],
        ),
        inserts.Batch(
            ProviderCall,
            [
                ProviderCall(
                    session=session,
                    turn=n,
                    request={"input": [text]},
                    response=None if n % 2 else {"output": []},
                    event_id=uuid.uuid4(),
                )
            ],
        ),
    ]


def test_a_reused_statement_is_the_one_djangos_compiler_builds(store):
    session, _, _ = store
    for n in range(1, 4):  # the first builds and keeps the text, the others reuse it
        for batch in rows_of_every_kind(session, n):
            ((sql, params),) = inserts._statements(batch)
            columns = [
                field
                for field in batch.model._meta.concrete_fields
                if not isinstance(field, models.AutoField)
            ]
            expected_sql, expected = inserts._compiled(batch, batch.rows, columns)
            assert sql == expected_sql
            assert plain(params) == plain(expected)


SAMPLES: dict[type, list[Any]] = {
    str: ["", "text with % and \u00e9", "x" * 10_000],
    bool: [True, False],
    float: [0.0, 1.5, -2.25e300],
    type(None): [None],
}


@pytest.mark.parametrize("field_class", list(inserts.PLAIN), ids=lambda c: c.__name__)
def test_values_passed_on_as_they_are_are_those_djangos_conversion_leaves(
    field_class,
):
    field = field_class(null=True)
    for kind in inserts.PLAIN[field_class]:
        for value in SAMPLES[kind]:
            converted = field.get_db_prep_save(value, connection=connection)
            assert type(converted) is type(value)
            assert converted == value


@pytest.mark.django_db(transaction=True)
def test_rows_with_hostile_text_are_stored_as_they_are(store):
    session, writer, database = store
    text = "50% of %s and %(name)s; '); DROP TABLE x; -- \\ \u202e" + "x" * 2_000_000
    with database.transaction():
        database.put_state("plan", {"text": text})
        writer.add([invocation(session, 1)])
        writer.add([PolicyDenial(session=session, policy_name="p", reason=text)])
    assert database.get_state("plan") == {"text": text}
    assert PolicyDenial.objects.get().reason == text


@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="synchronous_commit is PostgreSQL's (run the suite with "
    "DATABASE_URL=postgres://...)",
)
def test_a_worker_claim_relaxes_commits_and_its_end_restores_them(settings):
    settings.WINK_RUN_DURABLE_COMMITS = False
    before = synchronous_commit()
    session = AgentSessionFactory.create(status=AgentSession.Status.QUEUED)
    with steps.run_commits(by_claim=True):
        assert synchronous_commit() == before  # nothing sent before the claim
        claim = lifecycle.claim(session.pk)
        assert claim is not None
        assert synchronous_commit() == "off"
        lifecycle.finish(claim, status=AgentSession.Status.SUCCEEDED)
        assert synchronous_commit() == before
    assert synchronous_commit() == before
    # a claim that claims nothing still relaxed them: restored on the way out
    with steps.run_commits(by_claim=True):
        assert lifecycle.claim(session.pk) is None
        assert synchronous_commit() == "off"
    assert synchronous_commit() == before


@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="synchronous_commit is PostgreSQL's (run the suite with "
    "DATABASE_URL=postgres://...)",
)
def test_an_end_that_fails_leaves_the_setting_to_be_restored(settings, monkeypatch):
    """The end's query fails whole (its RESET too): the run's way out restores
    the setting."""
    settings.WINK_RUN_DURABLE_COMMITS = False
    before = synchronous_commit()
    session = AgentSessionFactory.create(status=AgentSession.Status.QUEUED)
    broken = prepared.Update('UPDATE "no_such_table" SET "x" = %s', (1,))
    monkeypatch.setattr(lifecycle, "_finish_update", lambda fields: broken)
    monkeypatch.setattr(connection, prepared._CACHE, {}, raising=False)
    with steps.run_commits(by_claim=True):
        claim = lifecycle.claim(session.pk)
        assert claim is not None
        with pytest.raises(DatabaseError), transaction.atomic():
            lifecycle.finish(claim, status=AgentSession.Status.SUCCEEDED)
        assert synchronous_commit() == "off"
    assert synchronous_commit() == before


@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="synchronous_commit is PostgreSQL's (run the suite with "
    "DATABASE_URL=postgres://...)",
)
def test_a_claim_that_fails_after_its_query_still_restores_the_setting(
    settings, monkeypatch
):
    """The server applied the claim's SET, then reading its row back failed (a
    converter, a signal): the run's way out restores the setting (a finding
    of the hostile review of ADR 0017)."""
    settings.WINK_RUN_DURABLE_COMMITS = False
    before = synchronous_commit()
    session = AgentSessionFactory.create(status=AgentSession.Status.QUEUED)

    def fails(*args, **kwargs):
        raise RuntimeError("after the query")

    monkeypatch.setattr(AgentSession, "from_db", classmethod(fails))
    with pytest.raises(RuntimeError), steps.run_commits(by_claim=True):
        lifecycle.claim(session.pk)
    monkeypatch.undo()
    assert synchronous_commit() == before
    assert AgentSession.objects.get(pk=session.pk).status == "running"
