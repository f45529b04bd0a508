"""Audit reads at scale: the API and the pages over a large audit trail.

Generates (once) a realistic audit dataset in a PostgreSQL database of its own
(``wink_bench_scale`` by default): by default 100,000 sessions, 1,000,000 tool
invocations and 300,000 citations, with the provider calls, policy denials and
state changes they go with, over a year of dates, 50 users, 40 prompts, five
statuses, 20 tool names (local and native) and a few hundred citation domains.
Ordinary sessions hold about 20 events; one long session holds 10,000 tool
calls (12,000+ events). Rows are bulk-loaded with ``COPY``; the dataset is
reused while its size is unchanged (``--regenerate`` builds it again).

Then it serves the product with gunicorn (DEBUG off, ``gunicorn.conf.py``),
logs in through the login page as a user of the Auditors group (who sees every
session) and times, one request at a time after a warm-up, every list and
filter, the detail, timeline and tool calls of an ordinary and of the long
session, the citations, and the HTML pages, each beside its target (issue #11).
Requests go in rounds (each endpoint once per round, in a rotating order), so
a busy moment of a shared machine falls on every endpoint alike.

- every list and filter: p95 at most 30 ms;
- a deep page within 1.2x of the first (p50);
- the first page of the long session's timeline, and every session detail
  and page: p95 at most 50 ms; the long session's page (its first screen)
  within 1.2x of an ordinary one's (p50);
- every HTML page within 1.5x of its API twin (p50);
- the cost page and ``/api/costs/?group=tool`` over one year within 1.5x of
  one day, the newest day with sessions, and the year ending with it (p50;
  issue #28: the closed days are read from their roll-ups, which ``manage.py
  roll_up_spend`` brings up to date before the timings).

Run with ``make bench-scale`` (``--help`` for the options).
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import datetime as dt
import io
import json
import math
import os
import random
import re
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

DEFAULT_SERVER = "postgres://postgres@127.0.0.1:5432"
DEFAULT_DATABASE = "wink_bench_scale"
# Bump when the generated data changes shape: a dataset of another version is
# generated again.
DATASET_VERSION = 3
END = dt.datetime(2026, 11, 20, tzinfo=dt.UTC)  # the newest session, about
SPAN_DAYS = 365
# Each run logs in as an auditor of its own (removed at its end): a new
# password for a shared one would log out another run timing beside it.
AUDITOR = f"bench-auditor-{os.getpid()}"

# Targets of issue #11.
LIST_P95_MS = 30.0  # every list and filter
SESSION_P95_MS = 50.0  # a session's detail, timeline (first page) and page
DEEP_RATIO = 1.2  # a deep page against the first (p50)
LONG_RATIO = 1.2  # the long session's page against an ordinary one's (p50)
HTML_RATIO = 1.5  # a page against its API twin (p50)
# Issue #28: the approvals inbox at 20,000 requests against the sessions list.
APPROVALS = 20_000
INBOX_RATIO = 1.5
COST_RATIO = 1.5  # issue #28: spend over a year against one day (p50)


# -- the dataset -----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Size:
    sessions: int
    tool_invocations: int
    citations: int
    long_tool_calls: int
    seed: int

    def signature(self) -> dict[str, int]:
        return {"version": DATASET_VERSION, **dataclasses.asdict(self)}


PROMPTS = [
    "support/triage",
    "support/refund",
    "support/escalate",
    "demo/research",
    "demo/plan",
    "ops/deploy",
    "ops/incident",
    "ops/rollback",
    "sales/lead-score",
    "sales/follow-up",
    "legal/contract-review",
    "legal/policy-check",
    "data/sql-report",
    "data/anomaly",
    "hr/onboarding",
    "hr/policy-faq",
    "eng/code-review",
    "eng/release-notes",
    "eng/bug-triage",
    "finance/invoice",
    "finance/forecast",
    "marketing/brief",
    "marketing/seo",
    "research/literature",
    "research/market",
    "research/competitors",
    "it/helpdesk",
    "it/access-request",
    "security/alert-triage",
    "security/phishing",
    "docs/summarise",
    "docs/translate",
    "travel/itinerary",
    "procurement/vendor",
    "qa/test-plan",
    "product/feedback",
    "product/roadmap",
    "edu/tutor",
    "health/intake",
    "misc/scratch",
]
LOCAL_TOOLS = [
    "read_file",
    "write_file",
    "list_dir",
    "grep",
    "planning_setup_plan",
    "planning_update_step",
    "deploy_service",
    "lookup_order",
    "send_email",
    "calculator",
    "fetch_weather",
    "search_kb",
    "create_ticket",
    "run_sql",
]
NATIVE_TOOLS = [  # (name, kind)
    ("web_search", "web_search"),
    ("file_search", "file_search"),
    ("code_interpreter", "code_interpreter"),
    ("image_generation", "image_generation"),
    ("mcp_github", "mcp"),
    ("mcp_jira", "mcp"),
]
BASE_DOMAINS = [
    "en.wikipedia.org",
    "de.wikipedia.org",
    "fr.wikipedia.org",
    "docs.python.org",
    "www.python.org",
    "developer.mozilla.org",
    "stackoverflow.com",
    "github.com",
    "docs.github.com",
    "news.ycombinator.com",
    "arxiv.org",
    "www.nature.com",
    "www.bbc.co.uk",
    "www.reuters.com",
    "www.nytimes.com",
    "learn.microsoft.com",
    "cloud.google.com",
    "aws.amazon.com",
    "docs.aws.amazon.com",
    "www.postgresql.org",
    "docs.djangoproject.com",
    "www.djangoproject.com",
    "platform.openai.com",
    "www.who.int",
    "www.cdc.gov",
    "www.gov.uk",
    "europa.eu",
    "www.imf.org",
    "www.worldbank.org",
    "www.noaa.gov",
]
STATUSES = [  # (status, weight)
    ("succeeded", 85.0),
    ("failed", 10.0),
    ("cancelled", 4.0),
    ("running", 0.5),
    ("queued", 0.5),
]
USERS = 50


def _zipf_weights(n: int, s: float = 1.05) -> list[float]:
    return [1 / (k**s) for k in range(1, n + 1)]


def _escape(text: str) -> str:
    """A value in COPY's text format."""
    return (
        text.replace("\\", "\\\\")
        .replace("\t", "\\t")
        .replace("\n", "\\n")
        .replace("\r", "\\r")
    )


def _field_text(value: Any) -> str:
    if value is None:
        return "\\N"
    if value is True:
        return "t"
    if value is False:
        return "f"
    if isinstance(value, dt.date):  # a datetime too
        return value.isoformat()
    if isinstance(value, int | float | Decimal | uuid.UUID):
        return str(value)
    if isinstance(value, str):
        return _escape(value)
    return _escape(json.dumps(value, separators=(",", ":")))


class Json(str):
    """JSON text already dumped (a column value as is)."""


class Table:
    """Rows of one model as ``COPY`` text in a file (loaded afterwards);
    columns the generator does not give take the model field's default."""

    def __init__(self, model: Any, columns: list[str], path: Path) -> None:
        from django.db import models

        fields = {f.attname: f for f in model._meta.concrete_fields}
        defaults: list[str] = []
        self.default_text = ""
        for attname, field in fields.items():
            if attname in columns or isinstance(field, models.AutoField):
                continue
            default = field.get_default()
            if isinstance(field, models.JSONField) and default is not None:
                default = Json(json.dumps(default))
            defaults.append(attname)
            self.default_text += "\t" + _field_text(default)
        names = [fields[name].column for name in [*columns, *defaults]]
        self.sql = (
            f'COPY "{model._meta.db_table}" ('
            + ", ".join(f'"{name}"' for name in names)
            + ") FROM STDIN"
        )
        self.path = path
        self.handle = path.open("w")
        self.buffer: list[str] = []
        self.count = 0

    def row(self, *values: Any) -> None:
        self.buffer.append(
            "\t".join(map(_field_text, values)) + self.default_text + "\n"
        )
        self.count += 1
        if len(self.buffer) >= 5000:
            self.flush()

    def flush(self) -> None:
        self.handle.write("".join(self.buffer))
        self.buffer.clear()

    def close(self) -> None:
        self.flush()
        self.handle.close()


def _spread(total: int, parts: int, rng: random.Random, spread: float) -> list[int]:
    """``parts`` non-negative whole numbers summing to ``total``, varied around
    the mean by ``spread`` (a fraction of it)."""
    mean = total / parts if parts else 0
    counts = [max(0, round(rng.gauss(mean, mean * spread))) for _ in range(parts)]
    difference = total - sum(counts)
    step = 1 if difference > 0 else -1
    while difference:
        index = rng.randrange(parts)
        if step < 0 and counts[index] == 0:
            continue
        counts[index] += step
        difference -= step
    return counts


@dataclasses.dataclass
class Generated:
    typical: str
    long: str
    counts: dict[str, int]


class Generator:
    """The rows of every session, written to the ``Table``s as it goes."""

    def __init__(self, size: Size, tables: dict[str, Table], users: list[int]):
        self.size = size
        self.tables = tables
        self.users = users
        self.rng = random.Random(size.seed)
        self.prompt_weights = _zipf_weights(len(PROMPTS))
        self.user_weights = _zipf_weights(len(users), 0.8)
        domains = list(BASE_DOMAINS) + [
            f"{sub}.site{n:03d}.example.org"
            for n in range(250)
            for sub in (("www", "docs") if n % 7 == 0 else ("www",))
        ]
        self.domains = domains
        self.domain_weights = _zipf_weights(len(domains), 0.9)
        self.ids = {"call": 0, "tool": 0, "citation": 0, "denial": 0, "change": 0}
        self.prompt_texts = {
            ref: (
                f"# {ref.split('/')[1].replace('-', ' ').title()}\n\n"
                + "You are a careful assistant for the "
                + ref.split("/")[0]
                + " team. Use the tools you are given; cite your sources.\n\n"
                + "## Guidance\n\n"
                + "\n".join(
                    f"- Rule {n}: be precise about step {n}." for n in range(12)
                )
            )
            for ref in PROMPTS
        }
        self.tools_payload = Json(
            json.dumps(
                [
                    {
                        "type": "function",
                        "name": name,
                        "description": f"The {name} tool.",
                        "parameters": {
                            "type": "object",
                            "properties": {"path": {"type": "string"}},
                            "required": ["path"],
                            "additionalProperties": False,
                        },
                        "strict": True,
                    }
                    for name in LOCAL_TOOLS[:4]
                ]
                + [{"type": "web_search", "search_context_size": "medium"}]
            )
        )

    def next_id(self, kind: str) -> int:
        self.ids[kind] += 1
        return self.ids[kind]

    def run(self) -> Generated:
        size, rng = self.size, self.rng
        ordinary = size.sessions - 1
        tools = _spread(
            size.tool_invocations - size.long_tool_calls, ordinary, rng, 0.6
        )
        long_citations = 200
        citations = _spread(size.citations - long_citations, ordinary, rng, 0.8)
        # Newest first: index 0 is the newest session.
        seconds = sorted(
            (rng.random() * SPAN_DAYS * 86400 for _ in range(size.sessions)),
        )
        long_index = min(10, size.sessions - 1)  # on the first page of the list
        long = typical = ""
        typical_index = min(3, size.sessions - 1)
        status_names = [s for s, _ in STATUSES]
        status_weights = [w for _, w in STATUSES]
        ordinary_index = 0
        carried = (0, 0)
        for index, offset in enumerate(seconds):
            created = END - dt.timedelta(seconds=offset)
            if index == long_index:
                session_id = self.session(
                    created,
                    "succeeded",
                    size.long_tool_calls,
                    long_citations,
                    per_turn=10,
                    prompt="ops/incident",
                )
                long = session_id
            else:
                status = rng.choices(status_names, status_weights)[0]
                if index < 200 and rng.random() < 0.2:
                    status = rng.choice(["running", "queued"])
                elif status in ("running", "queued") and index > 2000:
                    status = "succeeded"  # old runs ended long ago
                # What one session does not take (a queued one has no rows
                # yet) the next one does: the totals are exact.
                want = (
                    tools[ordinary_index] + carried[0],
                    citations[ordinary_index] + carried[1],
                )
                n_tools, n_citations = max(0, want[0]), max(0, want[1])
                if index == typical_index:
                    status, n_tools, n_citations = "succeeded", 10, 3
                elif status == "queued":
                    n_tools = n_citations = 0
                carried = (want[0] - n_tools, want[1] - n_citations)
                ordinary_index += 1
                session_id = self.session(created, status, n_tools, n_citations)
                if index == typical_index:
                    typical = session_id
        counts = {name: table.count for name, table in self.tables.items()}
        return Generated(
            typical=typical,
            long=long,
            counts=counts,
        )

    def session(
        self,
        created: dt.datetime,
        status: str,
        n_tools: int,
        n_citations: int,
        *,
        per_turn: int | None = None,
        prompt: str | None = None,
    ) -> str:
        rng = self.rng
        session_id = uuid.uuid4()
        prompt = prompt or rng.choices(PROMPTS, self.prompt_weights)[0]
        user = (
            None
            if rng.random() < 0.1
            else rng.choices(self.users, self.user_weights)[0]
        )
        if status == "queued":
            n_tools = n_citations = 0
        per_turn = per_turn or rng.choice((1, 2, 3, 4, 4, 5))
        turns = math.ceil(n_tools / per_turn) + 1 if status != "queued" else 0
        started = created + dt.timedelta(milliseconds=rng.randint(5, 400))
        clock = started
        topic = rng.choice(["tides", "invoices", "latency", "GDPR", "rollouts"])
        params = {"topic": topic, "audience": rng.choice(["ops", "exec", "dev"])}
        search_calls: list[str] = []
        call_ids: list[int] = []
        call_times: list[dt.datetime] = []
        sequence = 0
        usage_in = usage_out = 0
        error_phase = error_message = ""
        for turn in range(1, turns + 1):
            call_id = self.next_id("call")
            failed_call = status == "failed" and turn == turns
            input_tokens = rng.randint(800, 6000)
            output_tokens = rng.randint(40, 900)
            usage_in += input_tokens
            usage_out += output_tokens
            latency = rng.uniform(300, 4000)
            request = Json(
                json.dumps(
                    {
                        "model": "gpt-5.4",
                        "input": [
                            {"role": "user", "content": f"Tell me about {topic}."}
                        ]
                        if turn == 1
                        else [
                            {
                                "type": "function_call_output",
                                "call_id": f"call_{call_id}_{n}",
                                "output": "ok",
                            }
                            for n in range(per_turn)
                        ],
                        "tool_choice": "auto",
                    }
                )
            )
            response = (
                None
                if failed_call
                else Json(
                    json.dumps(
                        {
                            "id": f"resp_{call_id}",
                            "status": "completed",
                            "output": [
                                {
                                    "type": "message",
                                    "content": [
                                        {
                                            "type": "output_text",
                                            "text": f"About {topic}: step {turn}.",
                                        }
                                    ],
                                }
                            ],
                            "usage": {
                                "input_tokens": input_tokens,
                                "output_tokens": output_tokens,
                            },
                        }
                    )
                )
            )
            self.tables["call"].row(
                call_id,
                session_id,
                turn,
                request,
                response,
                "" if failed_call else f"resp_{call_id}",
                "error" if failed_call else "completed",
                input_tokens,
                output_tokens,
                latency,
                "upstream error (HTTP 500)" if failed_call else "",
                "InternalServerError" if failed_call else "",
                500 if failed_call else None,
                uuid.uuid4(),
                clock,
            )
            call_ids.append(call_id)
            call_times.append(clock)
            clock += dt.timedelta(milliseconds=latency)
            if failed_call:
                error_phase, error_message = "request", "upstream error (HTTP 500)"
                break
            for _ in range(per_turn if turn < turns else 0):
                if sequence >= n_tools:
                    break
                sequence += 1
                self.tool(session_id, turn, sequence, clock, search_calls)
                clock += dt.timedelta(milliseconds=rng.randint(2, 120))
        for _ in range(n_citations if call_ids else 0):
            which = (
                len(call_ids) - 1
                if rng.random() < 0.7
                else rng.randrange(len(call_ids))
            )
            domain = rng.choices(self.domains, self.domain_weights)[0]
            number = self.next_id("citation")
            self.tables["citation"].row(
                number,
                session_id,
                call_ids[which],
                f"https://{domain}/articles/{number % 9973}?utm_source=openai",
                domain,
                f"{topic.title()} explained, part {number % 97}",
                rng.randint(0, 400),
                rng.randint(400, 800),
                f"{topic} follow a pattern",
                f"msg_{call_ids[which]}",
                rng.choice(search_calls) if search_calls else "",
                call_times[which],
            )
        finished = clock if status in ("succeeded", "failed", "cancelled") else None
        if status == "cancelled":
            error_phase, error_message = "cancelled", "Cancelled by its author."
        output_text = (
            f"{topic.title()} follow a pattern. " * rng.randint(2, 12)
            if status == "succeeded"
            else ""
        )
        self.tables["session"].row(
            session_id,
            prompt,
            status,
            Json(json.dumps(params)),
            "gpt-5.4",
            "openai",
            self.prompt_texts[prompt],
            self.tools_payload,
            output_text,
            Json(
                json.dumps(
                    {
                        "input_tokens": usage_in,
                        "output_tokens": usage_out,
                        "total_tokens": usage_in + usage_out,
                    }
                )
            ),
            turns,
            error_phase,
            error_message,
            900,
            0 if status == "queued" else 1,
            user,
            created,
            None if status == "queued" else started,
            finished,
            None
            if finished or status == "queued"
            else created + dt.timedelta(seconds=60),
            # about gpt-5.4's rates: $1.25 / $10 per million tokens in / out
            Decimal(usage_in) * Decimal("0.00000125")
            + Decimal(usage_out) * Decimal("0.00001"),
        )
        return str(session_id)

    def tool(
        self,
        session_id: uuid.UUID,
        turn: int,
        sequence: int,
        clock: dt.datetime,
        search_calls: list[str],
    ) -> None:
        rng = self.rng
        number = self.next_id("tool")
        call_id = f"call_{number}"
        if rng.random() < 0.3:
            name, kind = rng.choice(NATIVE_TOOLS)
            query = rng.choice(["tide tables", "refund policy", "p99 latency"])
            if kind == "web_search":
                search_calls.append(call_id)
                params = {"action": "search", "query": query}
                value = {
                    "status": "completed",
                    "query": query,
                    "sources": [
                        f"https://{rng.choice(BASE_DOMAINS)}/s/{number % 89}"
                        for _ in range(3)
                    ],
                }
            else:
                params = {"query": query}
                value = {"status": "completed"}
            self.tables["tool"].row(
                number,
                session_id,
                sequence,
                turn,
                name,
                call_id,
                True,
                "openai",
                kind,
                Json(json.dumps(params)),
                "",
                True,
                f"{name} (completed): {query}",
                Json(json.dumps(value)),
                "",
                "",
                uuid.uuid4(),
                clock,
            )
            return
        name = rng.choice(LOCAL_TOOLS)
        path = f"notes/{number % 31}.md"
        # A reference unique to the call: what a text search for one word
        # of one tool call finds (a single session).
        params = {"path": path, "ref": f"ticket-{number:07d}"}
        denied = rng.random() < 0.02
        success = not denied and rng.random() > 0.05
        message = (
            "Denied by policy read_before_write: read the file first."
            if denied
            else (f"{name} done for {path}." if success else "Disk is full.")
        )
        output = f"{name}: {path} ({'ok' if success else 'error'})"
        if denied:
            self.tables["denial"].row(
                self.next_id("denial"),
                session_id,
                "read_before_write",
                name,
                call_id,
                f"Read {path} before writing it.",
                Json(json.dumps(params)),
                turn,
                sequence,
                uuid.uuid4(),
                clock,
            )
        self.tables["tool"].row(
            number,
            session_id,
            sequence,
            turn,
            name,
            call_id,
            False,
            "",
            "function",
            Json(json.dumps(params)),
            json.dumps(params),
            success,
            message,
            Json(json.dumps({"content": f"contents of {path}"})) if success else None,
            output,
            output,
            uuid.uuid4(),
            clock,
        )
        if success and name.startswith("planning_"):
            plan = {
                "objective": "Answer the question",
                "status": "active",
                "steps": [
                    {"step_id": n, "title": f"Step {n}", "status": "pending"}
                    for n in range(1, 4)
                ],
            }
            self.tables["change"].row(
                self.next_id("change"),
                session_id,
                "plan",
                Json(json.dumps(plan)),
                name,
                call_id,
                turn,
                sequence,
                uuid.uuid4(),
                clock,
            )


def _add_approvals(cursor: Any) -> None:
    """``APPROVALS`` approval requests on the newest sessions, one each: one in
    200 pending (its deadline a day after it was asked), the rest decided."""
    cursor.execute(
        """
        INSERT INTO sessions_app_approvalrequest (
            id, session_id, kind, tool_name, call_id, sequence, turn, params,
            raw_arguments, server_label, policy_name, reason, approvers,
            four_eyes, status, requested_at, expires_at, decided_by_id,
            decided_at, decision_reason, event_id, text_altered)
        SELECT gen_random_uuid(), s.id, 'function', 'deploy', 'call_' || s.n,
            1, 1, jsonb_build_object('environment', 'production', 'n', s.n),
            '{"environment": "production"}', '', 'production-deploy',
            'Tool ''deploy'' needs a human decision.', '{}'::jsonb, false,
            CASE WHEN s.n %% 200 = 0 THEN 'pending'
                 ELSE (ARRAY['approved', 'denied', 'expired'])[1 + s.n %% 3] END,
            s.created_at + interval '1 second', s.created_at + interval '1 day',
            NULL,
            CASE WHEN s.n %% 200 = 0 THEN NULL
                 ELSE s.created_at + interval '1 minute' END,
            '', gen_random_uuid(), false
        FROM (
            SELECT id, created_at, row_number() OVER (ORDER BY created_at DESC) AS n
            FROM sessions_app_agentsession ORDER BY created_at DESC LIMIT %s
        ) AS s
        """,
        [APPROVALS],
    )
    print(f"  added {APPROVALS:,} approval requests", flush=True)


def _admin_url(server: str) -> str:
    return f"{server.rstrip('/')}/postgres"


def _database_url(server: str, name: str) -> str:
    return f"{server.rstrip('/')}/{name}"


def stored_signature(server: str, name: str) -> dict[str, Any] | None:
    import psycopg

    with psycopg.connect(_admin_url(server), autocommit=True) as conn:
        row = conn.execute(
            "SELECT shobj_description(oid, 'pg_database') FROM pg_database "
            "WHERE datname = %s",
            [name],
        ).fetchone()
    if row is None:
        return None
    try:
        return json.loads(row[0] or "")
    except ValueError:
        return {}


def recreate_database(server: str, name: str) -> None:
    import psycopg

    with psycopg.connect(_admin_url(server), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def setup_django(database_url: str, secret_key: str) -> None:
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "wink_project.settings",
            "DEBUG": "0",
            "SECRET_KEY": secret_key,
            "ALLOWED_HOSTS": "127.0.0.1",
            "DATABASE_URL": database_url,
            "WINK_PROVIDER": "offline",
            "LOG_LEVEL": "WARNING",
        }
    )
    os.environ.pop("CELERY_BROKER_URL", None)
    import django

    django.setup()


def generate(size: Size, server: str, name: str) -> dict[str, Any]:
    """Load the dataset into the (new, migrated) database; returns what the
    benchmark needs to know about it."""
    import psycopg
    from django.contrib.auth import get_user_model
    from django.db import connection

    from sessions_app.models import (
        AgentSession,
        Citation,
        PolicyDenial,
        ProviderCall,
        StateChange,
        ToolInvocation,
    )

    User = get_user_model()
    User.objects.bulk_create(
        User(username=f"user{n:02d}", email=f"user{n:02d}@example.com")
        for n in range(USERS)
    )
    users = list(
        User.objects.filter(username__startswith="user")
        .order_by("username")
        .values_list("pk", flat=True)
    )
    connection.close()
    started = time.perf_counter()
    with psycopg.connect(_database_url(server, name)) as conn:
        with conn.transaction(), conn.cursor() as cursor:
            # The rows are consistent by construction: no FK checks or
            # append-only triggers while loading (superuser only).
            cursor.execute("SET LOCAL session_replication_role = replica")
            specs = {
                "session": (
                    AgentSession,
                    [
                        "id",
                        "prompt_ref",
                        "status",
                        "params",
                        "model",
                        "provider",
                        "rendered_prompt",
                        "tools_payload",
                        "output_text",
                        "usage",
                        "turns",
                        "error_phase",
                        "error_message",
                        "deadline_seconds",
                        "attempts",
                        "created_by_id",
                        "created_at",
                        "started_at",
                        "finished_at",
                        "lease_expires_at",
                        "cost",
                    ],
                ),
                "call": (
                    ProviderCall,
                    [
                        "id",
                        "session_id",
                        "turn",
                        "request",
                        "response",
                        "response_id",
                        "status",
                        "input_tokens",
                        "output_tokens",
                        "latency_ms",
                        "error",
                        "error_type",
                        "status_code",
                        "event_id",
                        "created_at",
                    ],
                ),
                "tool": (
                    ToolInvocation,
                    [
                        "id",
                        "session_id",
                        "sequence",
                        "turn",
                        "name",
                        "call_id",
                        "native",
                        "provider",
                        "kind",
                        "params",
                        "raw_arguments",
                        "success",
                        "message",
                        "value",
                        "rendered_output",
                        "model_output",
                        "event_id",
                        "created_at",
                    ],
                ),
                "citation": (
                    Citation,
                    [
                        "id",
                        "session_id",
                        "provider_call_id",
                        "url",
                        "domain",
                        "title",
                        "start_index",
                        "end_index",
                        "cited_text",
                        "message_id",
                        "search_call_id",
                        "created_at",
                    ],
                ),
                "denial": (
                    PolicyDenial,
                    [
                        "id",
                        "session_id",
                        "policy_name",
                        "tool_name",
                        "call_id",
                        "reason",
                        "params",
                        "turn",
                        "sequence",
                        "event_id",
                        "created_at",
                    ],
                ),
                "change": (
                    StateChange,
                    [
                        "id",
                        "session_id",
                        "key",
                        "value",
                        "tool_name",
                        "call_id",
                        "turn",
                        "sequence",
                        "event_id",
                        "created_at",
                    ],
                ),
            }
            # COPY streams one table at a time: the rows go to files first.
            tmp = Path(tempfile.mkdtemp(prefix="wink-scale-"))
            tables = {
                kind: Table(model, columns, tmp / f"{kind}.tsv")
                for kind, (model, columns) in specs.items()
            }
            print("  generating rows ...", flush=True)
            result = Generator(size, tables, users).run()
            for table in tables.values():
                table.close()
            print(
                f"  generated in {time.perf_counter() - started:.0f} s: "
                + ", ".join(f"{k} {v:,}" for k, v in result.counts.items()),
                flush=True,
            )
            for kind, table in tables.items():
                load_started = time.perf_counter()
                with cursor.copy(table.sql) as copy, table.path.open() as source:
                    while chunk := source.read(1 << 20):
                        copy.write(chunk)
                table.path.unlink()
                print(
                    f"  loaded {kind} in {time.perf_counter() - load_started:.0f} s",
                    flush=True,
                )
            tmp.rmdir()
            for model, _ in specs.values():
                if model is AgentSession:
                    continue
                table_name = model._meta.db_table
                cursor.execute(
                    f"SELECT setval(pg_get_serial_sequence('\"{table_name}\"', 'id'),"
                    f' (SELECT max(id) FROM "{table_name}"))'
                )
            _add_approvals(cursor)
        conn.autocommit = True
        vacuum_started = time.perf_counter()
        conn.execute("VACUUM ANALYZE")
        print(f"  vacuumed in {time.perf_counter() - vacuum_started:.0f} s", flush=True)
    print(f"  dataset ready in {time.perf_counter() - started:.0f} s", flush=True)
    return {
        **size.signature(),
        "typical": result.typical,
        "long": result.long,
        "counts": result.counts,
    }


def ensure_dataset(args: argparse.Namespace, size: Size) -> dict[str, Any]:
    from django.core.management import call_command

    wanted = size.signature()
    stored = stored_signature(args.server, args.database)
    reuse = (
        not args.regenerate
        and stored
        and {k: stored.get(k) for k in wanted} == wanted
        and stored.get("long")
    )
    if reuse and stored is not None:
        print(f"Reusing {args.database} ({_describe(stored)}).", flush=True)
        call_command("migrate", "--noinput", verbosity=0)  # new migrations only
        roll_up_spend(args)
        return stored
    print(f"Generating {args.database}: {_describe(wanted)}.", flush=True)
    recreate_database(args.server, args.database)
    call_command("migrate", "--noinput", verbosity=0)
    info = generate(size, args.server, args.database)
    index_started = time.perf_counter()
    call_command("index_sessions", verbosity=0)  # as the runs would have
    import psycopg

    with psycopg.connect(
        _database_url(args.server, args.database), autocommit=True
    ) as conn:
        conn.execute('VACUUM ANALYZE "sessions_app_sessionsearchtext"')
    print(
        f"  wrote the sessions' search texts in "
        f"{time.perf_counter() - index_started:.0f} s",
        flush=True,
    )

    with psycopg.connect(_admin_url(args.server), autocommit=True) as conn:
        conn.execute(
            f'COMMENT ON DATABASE "{args.database}" IS '
            + "'"
            + json.dumps(info).replace("'", "''")
            + "'"
        )
    roll_up_spend(args)
    return info


def roll_up_spend(args: argparse.Namespace) -> None:
    """The closed days' spend, as the workers keep it (issue #28): only the
    days not rolled up yet; with ``--no-roll-ups``, none (every read from the
    rows, as before issue #28)."""
    from django.core.management import call_command
    from django.db import connection

    from sessions_app.models import DailySpend, DailySpendDay

    if args.no_roll_ups:
        DailySpendDay.objects.all().delete()
        DailySpend.objects.all().delete()
        print("  spend: no roll-ups (read from the rows)", flush=True)
        return
    started = time.perf_counter()
    output = io.StringIO()
    call_command("roll_up_spend", stdout=output)
    # As autovacuum would, later. Vacuumed too: each run rolls the days with
    # pending sessions up again (their rows deleted and written anew), and
    # with autovacuum off (as on the benchmark machine) their dead rows piled
    # up run after run in the very days a year's read ends with (132,886
    # dead rows to 247,547 live after about 25 runs).
    with connection.cursor() as cursor:
        cursor.execute(
            "VACUUM ANALYZE sessions_app_dailyspend, sessions_app_dailyspendday"
        )
    summary = output.getvalue().strip().splitlines()[-1:]
    print(
        f"  spend: {' '.join(summary)} ({time.perf_counter() - started:.1f} s)",
        flush=True,
    )


def _describe(info: dict[str, Any]) -> str:
    return (
        f"{info['sessions']:,} sessions, {info['tool_invocations']:,} tool "
        f"invocations, {info['citations']:,} citations; the long session has "
        f"{info['long_tool_calls']:,} tool calls"
    )


# -- serving and measuring ---------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve(
    args: argparse.Namespace, database_url: str, secret_key: str
) -> tuple[subprocess.Popen[bytes], str]:
    port = args.port or _free_port()
    static = Path(tempfile.mkdtemp(prefix="wink-scale-static-"))
    env = {
        **os.environ,
        "DEBUG": "0",
        "SECRET_KEY": secret_key,
        "ALLOWED_HOSTS": "127.0.0.1",
        "DATABASE_URL": database_url,
        "STATIC_ROOT": str(static),
        # Plain HTTP on loopback; everything else as in production.
        "SECURE_SSL_REDIRECT": "0",
        "SECURE_HSTS_SECONDS": "0",
        "SESSION_COOKIE_SECURE": "0",
        "CSRF_COOKIE_SECURE": "0",
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "GUNICORN_WORKERS": str(args.workers),
        "GUNICORN_LOG_LEVEL": "warning",
        "WINK_PROVIDER": "offline",
    }
    env.pop("CELERY_BROKER_URL", None)
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"],
        cwd=ROOT,
        env=env,
        check=True,
    )
    gunicorn = Path(sys.executable).with_name("gunicorn")
    process = subprocess.Popen(
        [
            str(gunicorn),
            "wink_project.wsgi",
            "-c",
            "gunicorn.conf.py",
            "--access-logfile",
            "/dev/null",
        ],
        cwd=ROOT,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit("gunicorn exited; see its output above.")
        try:
            httpx.get(f"{base}/accounts/login/", timeout=2)
            return process, base
        except httpx.TransportError:
            time.sleep(0.2)
    process.terminate()
    raise SystemExit("gunicorn did not answer within 60 s.")


def auditor_client(base: str) -> httpx.Client:
    """A client logged in through the login page as a member of Auditors."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    password = secrets.token_urlsafe(16)
    user, _ = get_user_model().objects.get_or_create(username=AUDITOR)
    user.set_password(password)
    user.save()
    user.groups.add(Group.objects.get(name="Auditors"))
    from django.db import connection

    connection.close()
    client = httpx.Client(base_url=base, timeout=300)
    form = client.get("/accounts/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
    if token is None:
        raise SystemExit("No CSRF token on the login page.")
    response = client.post(
        "/accounts/login/",
        data={
            "username": AUDITOR,
            "password": password,
            "csrfmiddlewaretoken": token.group(1),
            "next": "/audit/sessions/",
        },
        headers={"Referer": f"{base}/accounts/login/"},
    )
    if response.status_code != 302:
        raise SystemExit(f"Logging in failed: HTTP {response.status_code}.")
    return client


def forget_auditor() -> None:
    """Remove this run's auditor (``auditor_client``)."""
    from django.contrib.auth import get_user_model

    get_user_model().objects.filter(username=AUDITOR).delete()


@dataclasses.dataclass
class Endpoint:
    name: str
    url: str
    kind: str  # "list", "timeline", "detail", "page"
    twin: str | None = None  # the API endpoint an HTML page is compared with


@dataclasses.dataclass
class Result:
    endpoint: Endpoint
    times_ms: list[float]
    size_bytes: int

    @property
    def p50(self) -> float:
        return statistics.median(self.times_ms)

    @property
    def p95(self) -> float:
        return self.percentile(0.95)

    @property
    def p99(self) -> float:
        """The tail a busy page's user meets now and then (a garbage
        collection, a busy moment): read only beside ``n``, 100 or more."""
        return self.percentile(0.99)

    def percentile(self, share: float) -> float:
        ordered = sorted(self.times_ms)
        return ordered[min(len(ordered) - 1, math.ceil(share * len(ordered)) - 1)]


def session_sizes(info: dict[str, Any]) -> dict[str, int]:
    """Events (provider calls, tool calls, citations, denials, state changes)
    of the ordinary and of the long session."""
    from django.db import connection

    from sessions_app.models import (
        AgentSession,
        Citation,
        PolicyDenial,
        ProviderCall,
        StateChange,
        ToolInvocation,
        count_of,
    )

    sizes = {}
    for name in ("typical", "long"):
        counts = (  # the plugin cannot see the names the ** annotate adds
            AgentSession.objects.filter(pk=info[name])  # type: ignore[misc]
            .annotate(
                **{
                    model.__name__: count_of(model)
                    for model in (
                        ProviderCall,
                        ToolInvocation,
                        Citation,
                        PolicyDenial,
                        StateChange,
                    )
                }
            )
            .values(
                "ProviderCall",
                "ToolInvocation",
                "Citation",
                "PolicyDenial",
                "StateChange",
            )
            .get()
        )
        sizes[name] = sum(counts.values())
        sizes[f"{name}_tool_calls"] = counts["ToolInvocation"]
    connection.close()
    return sizes


def drf_cursor(position: str) -> str:
    """A cursor of the API's ``CursorPagination`` for rows after ``position``
    (``tooling.keyset.encode_position``: a row's created_at and key)."""
    return base64.b64encode(urlencode({"p": position}).encode()).decode()


def deep_position(info: dict[str, Any]) -> str:
    """The position (``tooling.keyset.encode_position``) of the session about half
    way down the list: where both lists' deep pages start."""
    from django.db import connection

    from sessions_app.models import AgentSession
    from tooling.keyset import encode_position

    session = AgentSession.objects.order_by("-created_at", "-pk").only(
        "pk", "created_at"
    )[info["sessions"] // 2]
    connection.close()
    return encode_position((session.created_at, session.pk))


def html_deep_url(client: httpx.Client, info: dict[str, Any]) -> str:
    """The sessions page about half way down the list, as the page links it."""
    first = client.get("/audit/sessions/")
    if first.status_code != 200:
        raise SystemExit(f"/audit/sessions/: HTTP {first.status_code}")
    if "page=2" in first.text:  # numbered pages
        return f"/audit/sessions/?page={info['sessions'] // 2 // 25 + 1}"
    return f"/audit/sessions/?{urlencode({'after': deep_position(info)})}"


def search_word(info: dict[str, Any]) -> str:
    """The reference of a local tool call about half way down the list: a
    word in one tool call's arguments (``ticket-0500123``)."""
    from django.db import connection

    from sessions_app.models import ToolInvocation

    ref = (
        ToolInvocation.objects.filter(
            native=False, id__gte=info["tool_invocations"] // 2
        )
        .order_by("id")
        .values_list("params__ref", flat=True)
        .first()
    )
    connection.close()
    if not ref:
        raise SystemExit("No tool call with a reference: --regenerate the dataset.")
    return str(ref)


def endpoints(client: httpx.Client, info: dict[str, Any]) -> list[Endpoint]:
    typical, long = info["typical"], info["long"]
    after = urlencode(
        {
            "created_at_after": (END - dt.timedelta(days=200)).isoformat(),
            "created_at_before": (END - dt.timedelta(days=193)).isoformat(),
        }
    )
    prompt = "hr/onboarding"
    user = "user07"
    rare = search_word(info)  # one tool call's argument: one session
    common = "refund policy"  # in the arguments of ~100,000 tool calls
    listing = [
        Endpoint("API sessions, first page", "/api/sessions/", "list"),
        Endpoint(
            "API sessions, deep page",
            "/api/sessions/?" + urlencode({"cursor": drf_cursor(deep_position(info))}),
            "deep:API sessions, first page",
        ),
        Endpoint("API sessions ?status=failed", "/api/sessions/?status=failed", "list"),
        Endpoint(
            "API sessions ?status=running", "/api/sessions/?status=running", "list"
        ),
        Endpoint(
            f"API sessions ?prompt_ref={prompt}",
            f"/api/sessions/?prompt_ref={prompt}",
            "list",
        ),
        Endpoint(f"API sessions ?user={user}", f"/api/sessions/?user={user}", "list"),
        Endpoint(
            "API sessions, created in one week", f"/api/sessions/?{after}", "list"
        ),
        Endpoint(
            "API sessions ?q=<one tool call's argument>",
            f"/api/sessions/?{urlencode({'q': rare})}",
            "list",
        ),
        Endpoint(
            f"API sessions ?q={common}",
            f"/api/sessions/?{urlencode({'q': common})}",
            "list",
        ),
        Endpoint("API sessions ?q=GDPR", "/api/sessions/?q=GDPR", "list"),
        Endpoint("API sessions ?q=<no match>", "/api/sessions/?q=zzqzzq", "list"),
        Endpoint(
            "API sessions ?prompt=support/", "/api/sessions/?prompt=support/", "list"
        ),
        Endpoint(
            "API sessions ?duration_min=20", "/api/sessions/?duration_min=20", "list"
        ),
        Endpoint(
            "API sessions ?duration_max=1", "/api/sessions/?duration_max=1", "list"
        ),
        Endpoint("API sessions ?cost_min=0.05", "/api/sessions/?cost_min=0.05", "list"),
        Endpoint(
            "API sessions ?cost_max=0.005", "/api/sessions/?cost_max=0.005", "list"
        ),
        # Many matches, all in sessions of about five weeks half a year ago:
        # the worst case of reading newest first (docs/benchmarks.md).
        Endpoint(
            "API sessions ?q=ticket-05 (old sessions only)",
            "/api/sessions/?q=ticket-05",
            "list",
        ),
        Endpoint("API tool invocations, first page", "/api/tool-invocations/", "list"),
        Endpoint(
            "API tool invocations ?name=deploy_service",
            "/api/tool-invocations/?name=deploy_service",
            "list",
        ),
        Endpoint(
            "API tool invocations ?name=image_generation",
            "/api/tool-invocations/?name=image_generation",
            "list",
        ),
        Endpoint(
            "API tool invocations ?native=true",
            "/api/tool-invocations/?native=true",
            "list",
        ),
        Endpoint(
            "API tool invocations ?native=false",
            "/api/tool-invocations/?native=false",
            "list",
        ),
        Endpoint("API citations, first page", "/api/citations/", "list"),
        Endpoint(
            "API citations ?domain=wikipedia.org",
            "/api/citations/?domain=wikipedia.org",
            "list",
        ),
        Endpoint(
            "API citations ?domain=site123.example.org",
            "/api/citations/?domain=site123.example.org",
            "list",
        ),
    ]
    sessions = [
        Endpoint(
            "API session detail, 20 events", f"/api/sessions/{typical}/", "detail"
        ),
        Endpoint("API session detail, long", f"/api/sessions/{long}/", "detail"),
        Endpoint(
            "API timeline, 20 events", f"/api/sessions/{typical}/events/", "timeline"
        ),
        Endpoint(
            "API timeline, long (first page)",
            f"/api/sessions/{long}/events/",
            "timeline",
        ),
        Endpoint(
            "API session tool calls, 20 events",
            f"/api/sessions/{typical}/tool-invocations/",
            "list",
        ),
        Endpoint(
            "API session tool calls, long (first page)",
            f"/api/sessions/{long}/tool-invocations/",
            "list",
        ),
        Endpoint(
            "API provider calls, 20 events",
            f"/api/sessions/{typical}/provider-calls/",
            "list",
        ),
        Endpoint(
            "API provider calls, long (first page)",
            f"/api/sessions/{long}/provider-calls/",
            "list",
        ),
    ]
    pages = [
        Endpoint(
            "HTML sessions, first page",
            "/audit/sessions/",
            "list",
            "API sessions, first page",
        ),
        Endpoint(
            f"HTML approvals inbox, {APPROVALS:,} requests",
            "/audit/approvals/",
            "inbox:HTML sessions, first page",
        ),
        Endpoint(
            "HTML sessions, deep page",
            html_deep_url(client, info),
            "deep:HTML sessions, first page",
            "API sessions, deep page",
        ),
        Endpoint(
            "HTML sessions ?status=failed",
            "/audit/sessions/?status=failed",
            "list",
            "API sessions ?status=failed",
        ),
        Endpoint(
            f"HTML sessions ?prompt_ref={prompt}",
            f"/audit/sessions/?prompt_ref={prompt}",
            "list",
            f"API sessions ?prompt_ref={prompt}",
        ),
        Endpoint(
            f"HTML sessions ?user={user}",
            f"/audit/sessions/?user={user}",
            "list",
            f"API sessions ?user={user}",
        ),
        Endpoint(
            "HTML sessions, created in one week",
            f"/audit/sessions/?{after}",
            "list",
            "API sessions, created in one week",
        ),
        Endpoint(
            "HTML sessions ?q=<one tool call's argument>",
            f"/audit/sessions/?{urlencode({'q': rare})}",
            "list",
            "API sessions ?q=<one tool call's argument>",
        ),
        Endpoint(
            "HTML sessions ?duration_min=20",
            "/audit/sessions/?duration_min=20",
            "list",
            "API sessions ?duration_min=20",
        ),
        Endpoint(
            "HTML session page, 20 events",
            f"/audit/sessions/{typical}/",
            "detail",
            "API session detail, 20 events",
        ),
        Endpoint(
            "HTML session page, long",
            f"/audit/sessions/{long}/",
            "long:HTML session page, 20 events",
            "API session detail, long",
        ),
        Endpoint(
            "HTML citations, first page",
            "/audit/citations/",
            "list",
            "API citations, first page",
        ),
        Endpoint(
            "HTML citations ?domain=wikipedia.org",
            "/audit/citations/?domain=wikipedia.org",
            "list",
            "API citations ?domain=wikipedia.org",
        ),
    ]
    # The newest day with sessions (END is the midnight after it) and the
    # year that ends with it.
    newest = END - dt.timedelta(days=1)
    last_day = newest.date().isoformat()
    one_day = urlencode({"from": last_day, "to": last_day})
    one_year = urlencode(
        {
            "from": (newest - dt.timedelta(days=SPAN_DAYS)).date().isoformat(),
            "to": last_day,
        }
    )
    costs = [
        Endpoint("HTML cost page, one day", f"/audit/costs/?{one_day}", "cost"),
        Endpoint(
            "HTML cost page, one year",
            f"/audit/costs/?{one_year}",
            "year:HTML cost page, one day",
        ),
        Endpoint(
            "API costs ?group=tool, one day",
            f"/api/costs/?group=tool&{one_day}",
            "cost",
        ),
        Endpoint(
            "API costs ?group=tool, one year",
            f"/api/costs/?group=tool&{one_year}",
            "year:API costs ?group=tool, one day",
        ),
    ]
    return listing + sessions + pages + costs


def _get(client: httpx.Client, endpoint: Endpoint) -> tuple[float, int]:
    """One request: milliseconds and bytes."""
    started = time.perf_counter()
    response = client.get(endpoint.url)
    elapsed = (time.perf_counter() - started) * 1000
    if response.status_code != 200:
        raise SystemExit(
            f"{endpoint.name}: HTTP {response.status_code} for {endpoint.url}\n"
            + response.text[:500]
        )
    return elapsed, len(response.content)


def measure(
    client: httpx.Client, chosen: list[Endpoint], args: argparse.Namespace
) -> list[Result]:
    """Every endpoint ``args.requests`` times, in rounds: each round requests
    each endpoint once, in a rotating order, so a busy moment of a shared
    machine falls on all of them alike and the ratios stay fair."""
    for endpoint in chosen:
        for _ in range(args.warmup):
            _get(client, endpoint)
        print(f"  warmed up: {endpoint.name}", flush=True)
    times: dict[str, list[float]] = {endpoint.name: [] for endpoint in chosen}
    sizes: dict[str, int] = {}
    budget = time.monotonic() + args.max_seconds * len(chosen)
    for round_number in range(args.requests):
        shift = round_number % len(chosen)
        for endpoint in chosen[shift:] + chosen[:shift]:
            elapsed, sizes[endpoint.name] = _get(client, endpoint)
            times[endpoint.name].append(elapsed)
        if time.monotonic() > budget and round_number >= 4:
            break
    return [Result(e, times[e.name], sizes[e.name]) for e in chosen]


def _verdict(ok: bool) -> str:
    return "MEETS" if ok else "MISSES"


def report(results: list[Result]) -> list[dict[str, Any]]:
    by_name = {result.endpoint.name: result for result in results}
    rows: list[dict[str, Any]] = []
    for result in results:
        endpoint = result.endpoint
        checks: list[tuple[str, bool]] = []
        if endpoint.kind in ("list",) or endpoint.kind.startswith("deep:"):
            checks.append((f"p95 <= {LIST_P95_MS:.0f} ms", result.p95 <= LIST_P95_MS))
        if endpoint.kind in ("timeline", "detail") or endpoint.kind.startswith("long:"):
            checks.append(
                (f"p95 <= {SESSION_P95_MS:.0f} ms", result.p95 <= SESSION_P95_MS)
            )
        if endpoint.kind.startswith("deep:"):
            first = by_name.get(endpoint.kind[5:])
            if first:
                ratio = result.p50 / first.p50
                checks.append(
                    (f"{ratio:.2f}x first <= {DEEP_RATIO}", ratio <= DEEP_RATIO)
                )
        if endpoint.kind.startswith("long:"):
            short = by_name.get(endpoint.kind[5:])
            if short:
                ratio = result.p50 / short.p50
                checks.append(
                    (f"{ratio:.2f}x 20-event <= {LONG_RATIO}", ratio <= LONG_RATIO)
                )
        if endpoint.kind.startswith("inbox:"):
            listing = by_name.get(endpoint.kind[6:])
            if listing:
                ratio = result.p50 / listing.p50
                checks.append(
                    (
                        f"{ratio:.2f}x sessions list <= {INBOX_RATIO}",
                        ratio <= INBOX_RATIO,
                    )
                )
        if endpoint.kind.startswith("year:"):
            day = by_name.get(endpoint.kind[5:])
            if day:
                ratio = result.p50 / day.p50
                checks.append(
                    (f"{ratio:.2f}x one day <= {COST_RATIO}", ratio <= COST_RATIO)
                )
        if endpoint.twin:
            twin = by_name.get(endpoint.twin)
            if twin:
                ratio = result.p50 / twin.p50
                checks.append(
                    (f"{ratio:.2f}x API <= {HTML_RATIO}", ratio <= HTML_RATIO)
                )
        rows.append(
            {
                "name": endpoint.name,
                "url": endpoint.url,
                "n": len(result.times_ms),
                "p50_ms": round(result.p50, 2),
                "p95_ms": round(result.p95, 2),
                "p99_ms": round(result.p99, 2),
                "kb": round(result.size_bytes / 1024, 1),
                "checks": [{"target": target, "meets": ok} for target, ok in checks],
            }
        )
    width = max(len(row["name"]) for row in rows)
    print()
    print(
        f"{'endpoint':<{width}}  {'n':>4}  {'p50 ms':>8}  {'p95 ms':>8}  "
        f"{'p99 ms':>8}  {'KB':>8}  target"
    )
    misses = 0
    for row in rows:
        shown = row["checks"] or [{"target": "(reference)", "meets": None}]
        verdicts = "; ".join(
            c["target"] + ("" if c["meets"] is None else f" {_verdict(c['meets'])}")
            for c in shown
        )
        misses += sum(1 for c in row["checks"] if not c["meets"])
        print(
            f"{row['name']:<{width}}  {row['n']:>4}  {row['p50_ms']:>8.1f}  "
            f"{row['p95_ms']:>8.1f}  {row['p99_ms']:>8.1f}  {row['kb']:>8.1f}  "
            f"{verdicts}"
        )
    print()
    print("Every target met." if not misses else f"{misses} target(s) missed.")
    return rows


def machine_reference() -> dict[str, float]:
    """What the machine itself costs, to set against the targets: the same
    work on any checkout of the same dataset size (the scan reads every
    session's text), so two runs' timings compare only as far as these do
    (medians of three). The Python figure is a loop of 10,000,000 integer
    additions; the database's, a sequential scan of the sessions' search
    texts, each tested with ``LIKE`` (what a search the index cannot help
    costs per text)."""
    from django.db import connection

    def python_loop() -> None:
        total = 0
        for number in range(10_000_000):
            total += number

    def database_scan() -> None:
        with connection.cursor() as cursor:
            cursor.execute("BEGIN")
            cursor.execute("SET LOCAL enable_bitmapscan = off")
            cursor.execute("SET LOCAL max_parallel_workers_per_gather = 0")
            cursor.execute(
                "SELECT count(*) FROM sessions_app_sessionsearchtext "
                "WHERE text LIKE '%zzqzzq%'"
            )
            cursor.fetchone()
            cursor.execute("COMMIT")

    def median_ms(work: Any) -> float:
        times = []
        for _ in range(3):
            started = time.perf_counter()
            work()
            times.append((time.perf_counter() - started) * 1000)
        return sorted(times)[1]

    reference = {
        "python_loop_ms": round(median_ms(python_loop), 1),
        "search_text_scan_ms": round(median_ms(database_scan), 1),
    }
    connection.close()
    return reference


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=100_000)
    parser.add_argument("--tool-invocations", type=int, default=1_000_000)
    parser.add_argument("--citations", type=int, default=300_000)
    parser.add_argument(
        "--long-tool-calls",
        type=int,
        default=10_000,
        help="Tool calls of the one long session (of --tool-invocations).",
    )
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument(
        "--server",
        default=os.environ.get("WINK_BENCH_PG", DEFAULT_SERVER),
        help="The PostgreSQL server (a URL without a database name; "
        f"WINK_BENCH_PG; default {DEFAULT_SERVER}).",
    )
    parser.add_argument("--database", default=DEFAULT_DATABASE)
    parser.add_argument(
        "--regenerate", action="store_true", help="Build the dataset again."
    )
    parser.add_argument(
        "--generate-only", action="store_true", help="Build the dataset; no timings."
    )
    parser.add_argument(
        "--no-roll-ups",
        action="store_true",
        help="Delete the daily spend roll-ups: the cost reads from the rows alone.",
    )
    parser.add_argument(
        "--requests", type=int, default=100, help="Per endpoint (in rounds)."
    )
    parser.add_argument("--warmup", type=int, default=10, help="Per endpoint.")
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=30,
        help="Stop after this long per endpoint on average (at least 5 rounds).",
    )
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument(
        "--only", default="", help="A regular expression: time matching endpoints."
    )
    parser.add_argument("--json", type=Path, help="Write the results to this file.")
    args = parser.parse_args()

    size = Size(
        sessions=args.sessions,
        tool_invocations=args.tool_invocations,
        citations=args.citations,
        long_tool_calls=args.long_tool_calls,
        seed=args.seed,
    )
    if size.sessions < 2 or size.long_tool_calls > size.tool_invocations:
        raise SystemExit(
            "Need 2+ sessions and --long-tool-calls <= --tool-invocations."
        )
    database_url = _database_url(args.server, args.database)
    secret_key = secrets.token_urlsafe(50)
    setup_django(database_url, secret_key)
    info = ensure_dataset(args, size)
    if args.generate_only:
        return
    sizes = session_sizes(info)
    print(
        f"The ordinary session has {sizes['typical']} events; the long one "
        f"{sizes['long']:,} ({sizes['long_tool_calls']:,} tool calls).",
        flush=True,
    )
    machine = machine_reference()
    print(
        f"Machine reference: a Python loop of 10,000,000 additions "
        f"{machine['python_loop_ms']:.0f} ms; every search text read and tested "
        f"with LIKE {machine['search_text_scan_ms']:.0f} ms (medians of 3).",
        flush=True,
    )
    process, base = serve(args, database_url, secret_key)
    try:
        client = auditor_client(base)
        chosen = [e for e in endpoints(client, info) if re.search(args.only, e.name)]
        print(
            f"Timing {len(chosen)} endpoints on gunicorn ({args.workers} workers), "
            f"{args.requests} rounds of one request each after {args.warmup} "
            f"warm-up (at most {args.max_seconds:.0f} s per endpoint) ...",
            flush=True,
        )
        results = measure(client, chosen, args)
    finally:
        process.terminate()
        process.wait(timeout=30)
        forget_auditor()
    rows = report(results)
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "date": dt.date.today().isoformat(),
                    "machine": machine,
                    "dataset": {
                        **{k: info[k] for k in (*size.signature(), "counts")},
                        "sessions_events": sizes,
                    },
                    "results": rows,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
