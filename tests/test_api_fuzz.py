"""Schemathesis against the live API schema, in-process.

Every operation of ``/api/schema/`` is fuzzed against Django's WSGI
application (no server), with a fixed seed and a bounded number of examples:
positive data (what the schema allows) and negative data (what it does not).
No response may be a server error, and each must agree with the schema: a
documented status code, the documented content type, headers and body; negative
data must be refused. Calls without credentials, or with an unknown token, must
be 401s that agree with the schema too.

The caller may do everything the API allows (Runners, Auditors, the trusted
level, cancelling any session) and the database holds the demo catalog and
finished runs, so the fuzzer reaches real resources: path parameters come from
the schema and from the seeded rows (which must fit the documented parameter,
or no client following the schema could name them). Each request runs in a
savepoint rolled back afterwards, so neither its writes nor a database error
that aborts PostgreSQL's transaction leak into the next one.

Failures are collected across operations; the test fails once, listing each
distinct one with the first request that showed it: operation, check, request,
response and the server's traceback (the API logs "Unexpected error on ..."
before it answers a JSON 500).
"""

from __future__ import annotations

import logging
import re
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import jsonschema_rs
import pytest
import schemathesis
from django.contrib.auth.models import Group, Permission
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections, transaction
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from rest_framework.authtoken.models import Token
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Ok
from schemathesis.errors import FailureGroup
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from sessions_app import services
from sessions_app.models import (
    AgentSession,
    ApprovalRequest,
    Citation,
    Dataset,
    DatasetCase,
    Experiment,
    Grader,
    ToolInvocation,
)
from tests.sessions_app.factories import UserFactory
from tooling.demo import seed_demo_catalog
from tooling.history.recording import record
from tooling.history.snapshot import snapshot
from tooling.models import (
    CatalogChange,
    CatalogRevision,
    HostedToolDefinition,
    PromptTemplate,
    Release,
    ToolDefinition,
)

pytestmark = pytest.mark.django_db

SCHEMA_PATH = "/api/schema/"
# Examples per operation and mode. The module must stay well under a minute
# (about 20 s on SQLite on two cores): lower these, never the operations.
EXAMPLES = {GenerationMode.POSITIVE: 25, GenerationMode.NEGATIVE: 12}
UNAUTHENTICATED_EXAMPLES = 2  # each sent without a token, then with an unknown one
UNKNOWN_TOKEN = "Token 0123456789abcdef0123456789abcdef01234567"
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,  # judges negative data only
]
HYPOTHESIS = hypothesis_settings(
    derandomize=True,  # a fixed seed: the same requests on every run
    database=None,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],  # failures are collected, not shrunk
    suppress_health_check=list(HealthCheck),
    print_blob=False,
)
SHORT = 600  # characters of a body shown in the report
TRACEBACK_LINES = 40


# -- the caller, the data, the application and its log -----------------------------


@pytest.fixture
def caller():
    """A user who may do everything the API allows."""
    user = UserFactory.create(username="fuzzer")
    user.groups.add(
        Group.objects.get(name="Runners"),
        Group.objects.get(name="Auditors"),
        Group.objects.get(name="Approvers"),
        Group.objects.get(name="Releasers"),
    )
    user.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label="sessions_app",
            codename__in=["start_trusted_session", "cancel_any_session"],
        )
    )
    return user


@pytest.fixture
def seeded(caller):
    """The demo catalog, two finished runs (tool calls, citations) and one
    waiting for approval; one is another user's, which the caller sees as an
    auditor."""
    seed_demo_catalog()
    services.start_session(prompt_ref="demo/release", user=caller)
    services.start_session(prompt_ref="demo/research")
    services.start_session(prompt_ref="demo/ship", user=caller)
    assert ToolInvocation.objects.exists() and Citation.objects.exists()
    assert ApprovalRequest.objects.exists()
    tool = ToolDefinition.objects.first()
    assert tool is not None
    record(tool, before=None, after=snapshot(tool), user=caller, reason="seeded")
    dataset = Dataset.objects.create(name="fuzz")
    DatasetCase.objects.create(dataset=dataset, params={"question": "Why?"})
    grader = Grader.objects.create(
        name="fuzz", kind=Grader.Kind.TOOL_CALLED, config={"tool": "count_words"}
    )
    experiment = Experiment.objects.create(
        name="fuzz",
        dataset=dataset,
        prompt_ref="demo/research",
        targets=["draft"],
        created_by=caller,
    )
    experiment.graders.add(grader)
    # one pending release (someone else's: the caller may decide it)
    prompt = PromptTemplate.objects.get(namespace="demo", key="research")
    other = UserFactory.create(username="requester")
    Release.objects.create(
        prompt=prompt,
        prompt_ref=prompt.ref,
        label="production",
        to_revision=CatalogRevision.objects.filter(prompt_ref=prompt.ref).get(),
        requested_by=other,
        requested_by_name="requester",
    )


@pytest.fixture
def app():
    """Django's WSGI application. It answers in this thread, on this test's
    connection; like Django's test client, requests must not close that
    connection (it holds the test's transaction)."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield get_wsgi_application()
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


class ServerLog(logging.Handler):
    """The errors the server logs with a traceback while it answers."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.errors: list[tuple[str, str]] = []  # (exception type, traceback)

    def emit(self, record: logging.LogRecord) -> None:
        if not record.exc_info or record.exc_info[0] is None:
            return
        kind = record.exc_info[0]
        trace = logging.Formatter().formatException(record.exc_info)
        self.errors.append(
            (
                f"{kind.__module__}.{kind.__qualname__}",
                f"{record.getMessage()}\n{trace}",
            )
        )

    def take(self) -> list[tuple[str, str]]:
        errors, self.errors = self.errors, []
        return errors


@pytest.fixture
def server_log() -> Iterator[ServerLog]:
    handler = ServerLog()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)


# -- findings ----------------------------------------------------------------------


def _short(value: Any) -> str:
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="backslashreplace")
    text = str(value)
    return text if len(text) <= SHORT else f"{text[:SHORT]}... ({len(text)} chars)"


def _indent(text: str) -> str:
    return "\n".join(f"    {line}" for line in text.splitlines())


def short_traceback(text: str) -> str:
    """The log message, then the last frames of the last exception."""
    message, _, trace = text.partition("\n")
    for chained in (
        "\n\nDuring handling of the above exception",
        "\n\nThe above exception was the direct cause",
    ):
        trace = trace.rsplit(chained, 1)[-1]
    lines = [
        line
        for line in trace.splitlines()[1:]  # past "Traceback (most recent ...)"
        if line.strip(" ^~")  # no blank or caret lines
    ]
    if len(lines) > TRACEBACK_LINES:
        lines = ["  ...", *lines[-TRACEBACK_LINES:]]
    return "\n".join([message, "Traceback (most recent call last):", *lines])


def describe_request(case: schemathesis.Case, response: schemathesis.Response) -> str:
    sent = response.request
    lines = [f"{sent.method} {sent.url}"]
    if case.query:
        lines.append(f"query (decoded): {_short(repr(case.query))}")
    if sent.body is not None:
        content_type = sent.headers.get("Content-Type", "")
        lines.append(f"body ({_short(content_type)}): {_short(sent.body)}")
    if sent.headers.get("Cookie"):
        lines.append(f"cookie: {_short(sent.headers['Cookie'])}")
    return "\n".join(lines)


def describe_response(response: schemathesis.Response) -> str:
    content_type = ", ".join(response.headers.get("content-type", []))
    return f"{response.status_code} ({content_type}): {_short(response.content)}"


@dataclass
class Finding:
    operation: str
    check: str
    detail: str
    request: str = ""
    response: str = ""
    traceback: str = ""
    count: int = 1

    def render(self) -> str:
        parts = [f"{self.operation} -- {self.check} (x{self.count})"]
        parts.append(_indent(self.detail))
        for name, text in (
            ("request", self.request),
            ("response", self.response),
            ("server traceback", self.traceback),
        ):
            if text:
                parts.append(_indent(f"{name}:\n{_indent(text)}"))
        return "\n".join(parts)


@dataclass
class Findings:
    """Distinct failures, each with the first request that showed it."""

    found: dict[tuple[str, ...], Finding] = field(default_factory=dict)
    statuses: dict[str, Counter[int]] = field(
        default_factory=lambda: defaultdict(Counter)
    )

    def add(self, key: tuple[str, ...], finding: Finding) -> None:
        if key in self.found:
            self.found[key].count += 1
        else:
            self.found[key] = finding

    def report(self) -> str:
        requests = sum(sum(counts.values()) for counts in self.statuses.values())
        failures = "\n\n".join(finding.render() for finding in self.found.values())
        reached = "\n".join(
            f"    {label}: "
            + ", ".join(f"{code} x{n}" for code, n in sorted(counts.items()))
            for label, counts in self.statuses.items()
        )
        return (
            f"{len(self.found)} distinct failure(s) in {requests} requests:\n\n"
            f"{failures}\n\nStatus codes answered, per operation:\n{reached}"
        )


# -- sending and checking ----------------------------------------------------------


class _Undo(Exception):
    def __init__(self, response: schemathesis.Response) -> None:
        self.response = response


def send(case: schemathesis.Case, findings: Findings) -> schemathesis.Response:
    """The case's request, in a savepoint rolled back afterwards."""
    try:
        with transaction.atomic():
            raise _Undo(case.call())
    except _Undo as undo:
        findings.statuses[case.operation.label][undo.response.status_code] += 1
        return undo.response


def where(detail: str) -> str:
    """What a failure is about, without the values that showed it: the invalid
    component of negative data, the schema location of a response mismatch."""
    for line in detail.splitlines():
        if line.startswith("Invalid component:"):
            names = sorted(set(re.findall(r"`([^`]+)`", line.split(" - ", 1)[0])))
            place = re.search(r" in (\w+)", line)
            return f"{names} in {place.group(1) if place else '?'}"
        if line.startswith("Schema at "):
            return line
    return ""


def validate(
    case: schemathesis.Case,
    response: schemathesis.Response,
    findings: Findings,
    server_log: ServerLog,
    extra: tuple[tuple[str, str], ...] = (),
) -> None:
    """Run each check; record its failures, and ``extra`` ones (check, detail)."""
    failures = list(extra)
    for check in CHECKS:
        try:
            case.validate_response(response, checks=[check])
        except FailureGroup as group:
            failures += [
                (check.__name__, f"{failure.title}\n{failure.message}")
                for failure in group.exceptions
            ]
    errors = server_log.take()
    if errors and not failures:  # logged, yet answered: still worth a look
        failures.append(("server_log", "The server logged an error."))
    cause = errors[-1][0] if errors else ""  # tells server errors apart
    label = case.operation.label
    for check_name, detail in failures:
        findings.add(
            (label, check_name, str(response.status_code), cause, where(detail)),
            Finding(
                operation=label,
                check=check_name,
                detail=detail.strip(),
                request=describe_request(case, response),
                response=describe_response(response),
                traceback=short_traceback(errors[-1][1]) if errors else "",
            ),
        )


# -- what to send ------------------------------------------------------------------


def seeded_path_parameters() -> dict[str, list[dict[str, Any]]]:
    """Path parameters naming seeded rows, per path."""
    sessions = AgentSession.objects.values_list("pk", flat=True)
    prompts = PromptTemplate.objects.values_list("namespace", "key")
    revisions = list(CatalogRevision.objects.values_list("hash", flat=True))
    by_release = [{"id": pk} for pk in Release.objects.values_list("pk", flat=True)]
    by_experiment = [
        {"id": pk} for pk in Experiment.objects.values_list("pk", flat=True)
    ]
    by_session = [{"id": str(pk)} for pk in sessions]
    by_prompt = [{"namespace": namespace, "key": key} for namespace, key in prompts]
    by_approval = [
        {"id": str(pk)} for pk in ApprovalRequest.objects.values_list("pk", flat=True)
    ]
    return {
        "/api/sessions/{id}/": by_session,
        "/api/sessions/{id}/cancel/": by_session,
        "/api/sessions/{id}/events/": by_session,
        "/api/sessions/{id}/provider-calls/": by_session,
        "/api/sessions/{id}/tool-invocations/": by_session,
        "/api/sessions/{id}/replay/": by_session,
        "/api/sessions/{id}/compare/{other}/": [
            {"id": str(a), "other": str(b)} for a in sessions for b in sessions
        ][:4],
        "/api/tool-invocations/{id}/": [
            {"id": pk} for pk in ToolInvocation.objects.values_list("pk", flat=True)
        ][:3],
        "/api/citations/{id}/": [
            {"id": pk} for pk in Citation.objects.values_list("pk", flat=True)
        ][:3],
        "/api/tools/{name}/": [
            {"name": name}
            for name in ToolDefinition.objects.values_list("name", flat=True)
        ][:3],
        "/api/hosted-tools/{name}/": [
            {"name": name}
            for name in HostedToolDefinition.objects.values_list("name", flat=True)
        ],
        "/api/prompts/{namespace}/{key}/": by_prompt,
        "/api/prompts/{namespace}/{key}/preview/": by_prompt,
        "/api/approvals/{id}/": by_approval,
        "/api/approvals/{id}/approve/": by_approval,
        "/api/approvals/{id}/deny/": by_approval,
        "/api/catalog-changes/{id}/": [
            {"id": str(pk)} for pk in CatalogChange.objects.values_list("pk", flat=True)
        ],
        "/api/revisions/{hash}/": [{"hash": digest} for digest in revisions],
        "/api/releases/{id}/": by_release,
        "/api/datasets/{id}/": [
            {"id": pk} for pk in Dataset.objects.values_list("pk", flat=True)
        ],
        "/api/graders/{id}/": [
            {"id": pk} for pk in Grader.objects.values_list("pk", flat=True)
        ],
        "/api/experiments/{id}/": by_experiment,
        "/api/experiments/{id}/csv/": by_experiment,
        "/api/experiments/{id}/grade/": by_experiment,
        "/api/releases/{id}/approve/": by_release,
        "/api/releases/{id}/reject/": by_release,
        "/api/releases/{id}/withdraw/": by_release,
        "/api/revisions/{hash}/compare/{other}/": [
            {"hash": digest, "other": other}
            for digest in revisions
            for other in ["live", revisions[0]]
        ],
    }


def undocumented_values(operation, values: dict[str, Any]) -> list[str]:
    """How the seeded ``values`` break the operation's documented path
    parameters (a path segment is text: "12" is a valid integer)."""
    problems = []
    for parameter in operation.path_parameters:
        schema = parameter.definition.get("schema", {})
        wire = str(values[parameter.name])
        readings: list[Any] = [wire]
        if wire.lstrip("-").isdigit():
            readings.append(int(wire))
        validator = jsonschema_rs.validator_for(schema, validate_formats=True)
        if not any(validator.is_valid(reading) for reading in readings):
            description = parameter.definition.get("description", "")
            problems.append(
                f"Path parameter `{parameter.name}` is documented as {schema} "
                f"({description!r}), but the resource it names has "
                f"{parameter.name}={wire!r}: a client following the schema "
                "cannot reach it."
            )
    return problems


def running(case: schemathesis.Case, ref: str) -> schemathesis.Case:
    """The generated case, for a prompt that exists."""
    if isinstance(case.body, dict):
        case.body = {**case.body, "prompt": ref}
    return case


def cases(operation, mode: GenerationMode, headers: dict[str, str], seeded_values):
    """The operation's cases: from the schema alone, and naming seeded rows."""
    strategies = [operation.as_strategy(generation_mode=mode, headers=headers)]
    # With the path fixed, negative data needs something else to break.
    breakable = len(operation.query) or len(operation.body)
    if mode is GenerationMode.POSITIVE or breakable:
        strategies += [
            operation.as_strategy(
                generation_mode=mode, headers=headers, path_parameters=values
            )
            for values in seeded_values
        ]
    if operation.label == "POST /api/sessions/" and mode is GenerationMode.POSITIVE:
        refs = [
            f"{ns}/{key}"
            for ns, key in PromptTemplate.objects.values_list("namespace", "key")
        ]
        strategies.append(
            st.tuples(strategies[0], st.sampled_from(refs)).map(
                lambda pair: running(*pair)
            )
        )
    return st.one_of(strategies)


# -- the test ----------------------------------------------------------------------


def test_the_api_agrees_with_its_schema(caller, seeded, app, server_log):
    schema = schemathesis.openapi.from_wsgi(SCHEMA_PATH, app)
    operations = []
    for result in schema.get_all_operations():
        assert isinstance(result, Ok), f"{SCHEMA_PATH}: {result.err()}"
        operations.append(result.ok())
    assert operations, f"{SCHEMA_PATH} lists no operations"
    token = Token.objects.create(user=caller).key
    authenticated = {"Authorization": f"Token {token}"}
    seeded_by_path = seeded_path_parameters()
    findings = Findings()

    for operation in operations:
        label = operation.label
        seeded_values = seeded_by_path.get(operation.path, [])
        if len(operation.path_parameters) and not seeded_values:
            detail = (
                "No seeded row for this path: name one in seeded_path_parameters()."
            )
            findings.add((label, "seed"), Finding(label, "seed", detail))
        for values in seeded_values:
            for problem in undocumented_values(operation, values):
                check = "path_parameter_conformance"
                findings.add((label, check), Finding(label, check, problem))

        for mode, examples in EXAMPLES.items():

            @hypothesis_settings(HYPOTHESIS, max_examples=examples)
            @given(case=cases(operation, mode, authenticated, seeded_values))
            def fuzz(case):
                validate(case, send(case, findings), findings, server_log)

            try:
                fuzz()
            except Unsatisfiable:
                # Nothing of the operation can be made invalid (only plain
                # strings in its path): there is no negative data to send.
                assert mode is GenerationMode.NEGATIVE, label

        @hypothesis_settings(HYPOTHESIS, max_examples=UNAUTHENTICATED_EXAMPLES)
        @given(case=operation.as_strategy())
        def without_credentials(case):
            case.cookies.pop("sessionid", None)
            for credentials in (None, UNKNOWN_TOKEN):
                case.headers.pop("Authorization", None)
                if credentials:
                    case.headers["Authorization"] = credentials
                response = send(case, findings)
                extra: tuple[tuple[str, str], ...] = ()
                if response.status_code != 401:
                    detail = (
                        f"Expected a 401 with credentials {credentials!r}; "
                        f"got {response.status_code}."
                    )
                    extra = (("requires_authentication", detail),)
                validate(case, response, findings, server_log, extra)

        without_credentials()

    if findings.found:
        pytest.fail(findings.report(), pytrace=False)
