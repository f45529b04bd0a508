"""Datasets, graders and experiments (sessions_app/experiments): the demo
experiment tells two revisions apart; every deterministic grader on crafted
sessions; a model-graded grader's own recorded session; paused runs counted as
such; the pages, the CSV (no formula injection), case imports (all or none),
add to dataset, the API; who may see and run what."""

from __future__ import annotations

import csv
import io
import re
import time
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from sessions_app import services
from sessions_app.experiments import grader_config, grading
from sessions_app.experiments.cases import import_cases
from sessions_app.experiments.demo import seed_demo_experiment
from sessions_app.experiments.results import csv_of, results_of
from sessions_app.experiments.running import grade_finished, run_experiment
from sessions_app.models import (
    AgentSession,
    Dataset,
    DatasetCase,
    Experiment,
    ExperimentRun,
    Grader,
)
from tests.sessions_app.factories import (
    AgentSessionFactory,
    ApprovalRequestFactory,
    CitationFactory,
    PolicyDenialFactory,
    ProviderCallFactory,
    ToolInvocationFactory,
    UserFactory,
)
from tests.tooling.factories import (
    PromptTemplateFactory,
    SectionDefinitionFactory,
    add_sections,
)
from tooling import releases
from tooling.demo import seed_demo_catalog
from tooling.models import PromptTemplate

pytestmark = pytest.mark.django_db

Kind = Grader.Kind


def runner(name: str = "alice") -> User:
    user = UserFactory.create(username=name, is_staff=True)
    user.groups.add(Group.objects.get(name="Runners"))
    return user


def auditor() -> User:
    user = UserFactory.create(username="auditor", is_staff=True)
    user.groups.add(Group.objects.get(name="Auditors"))
    return user


@pytest.fixture
def demo() -> Experiment:
    seed_demo_catalog()
    experiment = seed_demo_experiment(runner())
    assert experiment is not None
    return experiment


def test_the_demo_experiment_tells_the_two_revisions_apart(demo):
    results = results_of(demo)

    filtered, unfiltered = results.targets
    assert (filtered.runs, filtered.finished, unfiltered.finished) == (10, 10, 10)
    assert filtered.pass_rates["cites only the allowed domains"] == 1.0
    assert unfiltered.pass_rates["cites only the allowed domains"] == 0.0
    assert filtered.pass_rates["counts its words"] == 1.0
    assert unfiltered.pass_rates["answers in JSON"] == 1.0
    assert all(row.differs for row in results.cases)
    assert demo.status == Experiment.Status.FINISHED
    # each run is a normal session of its author, on its revision
    run = ExperimentRun.objects.filter(
        experiment=demo, target=unfiltered.target
    ).first()
    assert run is not None and run.session_id is not None
    session = AgentSession.objects.get(pk=run.session_id)
    assert session.revision_id == unfiltered.target
    assert session.created_by == demo.created_by
    assert seed_demo_experiment(None) is None  # once


def test_an_experiment_runs_once(demo):
    with pytest.raises(ValidationError, match="already been run"):
        run_experiment(demo, user=demo.created_by)


def test_the_csv_has_a_row_per_run_and_no_formula(demo):
    case = DatasetCase.objects.filter(dataset=demo.dataset).first()
    assert case is not None
    DatasetCase.objects.filter(pk=case.pk).update(params={"question": "=1+1"})
    rows = list(csv.reader(io.StringIO(csv_of(results_of(demo)))))
    assert len(rows) == 1 + 20
    assert rows[0][:4] == ["case", "params", "target", "session"]
    assert all(not cell.startswith(("=", "+", "@")) for row in rows for cell in row)


def test_the_csv_shows_bidi_controls_as_marks(demo):
    """As the page and the cost CSV do: a spreadsheet would reorder the text."""
    run = ExperimentRun.objects.filter(experiment=demo).first()
    assert run is not None  # (the parameters it ran with)
    ExperimentRun.objects.filter(pk=run.pk).update(params={"question": "ab\u202ecd"})
    grader = demo.graders.first()
    assert grader is not None
    Grader.objects.filter(pk=grader.pk).update(name="=HYPERLINK(1)\u202e")
    text = csv_of(results_of(demo))
    assert "\u202e" not in text
    assert "ab[U+202E]cd" in text and "'=HYPERLINK(1)[U+202E]" in text


def session_with(**fields: Any) -> AgentSession:
    return AgentSessionFactory.create(**fields)


def grade(kind: str, config: dict[str, Any], session: AgentSession) -> bool | None:
    grader = Grader(name="g", kind=kind, config=config)
    case = DatasetCase(params={}, expected_output="")
    return grading.grade(grader, session, case, None).passed


def test_tool_graders():
    session = session_with()
    ToolInvocationFactory.create(session=session, name="search", sequence=1)
    ToolInvocationFactory.create(session=session, name="answer", sequence=2)
    assert grade(Kind.TOOL_CALLED, {"tool": "search"}, session) is True
    assert grade(Kind.TOOL_CALLED, {"tool": "deploy"}, session) is False
    assert grade(Kind.TOOL_NOT_CALLED, {"tool": "deploy"}, session) is True
    assert grade(Kind.TOOL_NOT_CALLED, {"tool": "search"}, session) is False
    assert grade(Kind.CALLED_BEFORE, {"first": "search", "then": "answer"}, session)
    assert not grade(Kind.CALLED_BEFORE, {"first": "answer", "then": "search"}, session)
    assert not grade(Kind.CALLED_BEFORE, {"first": "search", "then": "deploy"}, session)


def test_policy_and_approval_graders():
    session = session_with()
    PolicyDenialFactory.create(session=session, policy_name="no-deploys", sequence=1)
    ApprovalRequestFactory.create(session=session, tool_name="deploy")
    assert grade(Kind.DENIED_BY_POLICY, {"policy": "no-deploys"}, session) is True
    assert grade(Kind.DENIED_BY_POLICY, {"policy": "other"}, session) is False
    assert grade(Kind.APPROVAL_REQUESTED, {}, session) is True
    assert grade(Kind.APPROVAL_REQUESTED, {"tool": "other"}, session) is False
    assert grade(Kind.APPROVAL_REQUESTED, {}, session_with()) is False


def test_output_graders():
    structured = session_with(output={"answer": "5.2"}, output_text='{"answer": "5.2"}')
    schema = {"schema": {"type": "object", "required": ["answer"]}}
    assert grade(Kind.OUTPUT_SCHEMA, schema, structured) is True
    wanting = {"schema": {"type": "object", "required": ["sources"]}}
    assert grade(Kind.OUTPUT_SCHEMA, wanting, structured) is False
    plain = session_with(output=None, output_text="Django 5.2 is the LTS.")
    assert grade(Kind.OUTPUT_SCHEMA, schema, plain) is False  # not JSON
    assert grade(Kind.OUTPUT_REGEX, {"pattern": r"\d\.\d"}, plain) is True
    assert grade(Kind.OUTPUT_REGEX, {"pattern": r"^LTS"}, plain) is False
    assert grade(Kind.OUTPUT_CONTAINS, {"text": "django"}, plain) is True
    sensitive = {"text": "django", "case_sensitive": True}
    assert grade(Kind.OUTPUT_CONTAINS, sensitive, plain) is False


def test_citation_cost_and_turn_graders():
    session = session_with(cost=Decimal("0.02"), turns=3)
    call = ProviderCallFactory.create(session=session, turn=1)
    CitationFactory.create(
        session=session, provider_call=call, url="https://docs.python.org/3/x"
    )
    domains = {"domains": ["python.org"]}
    assert grade(Kind.CITATIONS_IN_DOMAINS, domains, session) is True  # a subdomain
    CitationFactory.create(
        session=session, provider_call=call, url="https://evil.example/x"
    )
    assert grade(Kind.CITATIONS_IN_DOMAINS, domains, session) is False
    assert grade(Kind.COST_AT_MOST, {"usd": "0.05"}, session) is True
    assert grade(Kind.COST_AT_MOST, {"usd": 0.01}, session) is False
    assert grade(Kind.TURNS_AT_MOST, {"turns": 3}, session) is True
    assert grade(Kind.TURNS_AT_MOST, {"turns": 2}, session) is False


@pytest.mark.parametrize(
    ("kind", "config", "message"),
    [
        (Kind.TOOL_CALLED, {}, '"tool"'),
        (Kind.OUTPUT_REGEX, {"pattern": "("}, "not valid"),
        (Kind.OUTPUT_SCHEMA, {"schema": {"type": "nope"}}, "not a valid JSON schema"),
        (Kind.CITATIONS_IN_DOMAINS, {"domains": []}, "list of domains"),
        (Kind.COST_AT_MOST, {"usd": "-1"}, "amount"),
        (Kind.COST_AT_MOST, {"usd": "NaN"}, "amount"),
        (Kind.TURNS_AT_MOST, {"turns": True}, "whole number"),
        (Kind.MODEL_GRADED, {"prompt": "nonamespace"}, "namespace/key"),
        (Kind.OUTPUT_CONTAINS, {"text": "a\x00b"}, '"text"'),
    ],
)
def test_misconfigured_graders_are_refused(kind, config, message):
    with pytest.raises(ValidationError, match=message):
        grader_config.check_config(kind, config)
    assert grade(kind, config, session_with()) is False  # graded as misconfigured


@pytest.mark.parametrize(
    "usd", ["99999999999999999999999999", 1e-300, "0.00000000001", 100_000_001]
)
def test_a_cost_grader_takes_an_amount_a_sessions_cost_can_hold(usd):
    """The sessions' cost filters refuse past $100,000,000 or 10 decimal
    places; a grader took any amount (found by hostile QA)."""
    api = api_of_datasets_and_graders()
    body = {"name": "g", "kind": "cost_at_most", "config": {"usd": usd}}
    refused = api.post("/api/graders/", body, format="json")
    assert refused.status_code == 400, refused.content
    assert refused.json()["errors"]["config"] == [
        '"usd" must be at most 100,000,000, with at most 10 decimal places.'
    ]
    # trailing zeros are no places (from a hostile review)
    for index, amount in enumerate(
        ["100000000", "0.0000000001", 1e-10, "0.10000000000", "100000000.00"]
    ):
        body = {"name": f"g{index}", "kind": "cost_at_most", "config": {"usd": amount}}
        assert api.post("/api/graders/", body, format="json").status_code == 201


def test_a_grader_config_entered_names_a_prompt_that_exists_and_real_domains():
    """What would fail every grade is refused where it is entered (a stored
    grader's grades still say why they failed)."""
    seed_demo_catalog()
    judge_prompt()
    grader_config.check_entered_config(Kind.MODEL_GRADED, {"prompt": "graders/judge"})
    for ref in ("no/such", " demo/research", "demo/research\u202e"):
        with pytest.raises(ValidationError, match="no prompt template is named"):
            grader_config.check_entered_config(Kind.MODEL_GRADED, {"prompt": ref})
    grader_config.check_entered_config(
        Kind.CITATIONS_IN_DOMAINS, {"domains": ["https://docs.python.org/", "x.org"]}
    )
    for value in ("\u202e.com", "python .org"):
        with pytest.raises(ValidationError, match="is not a domain"):
            grader_config.check_entered_config(
                Kind.CITATIONS_IN_DOMAINS, {"domains": ["x.org", value]}
            )
    api = api_of_datasets_and_graders()
    body = {"name": "g", "kind": "model_graded", "config": {"prompt": "no/such"}}
    response = api.post("/api/graders/", body, format="json")
    assert response.status_code == 400
    assert "no prompt template is named" in str(response.json())


@pytest.mark.parametrize(
    ("kind", "config", "message"),
    [
        (Kind.OUTPUT_CONTAINS, {"text": "x", "case_sensitive": "false"}, "true or"),
        (Kind.OUTPUT_CONTAINS, {"text": "x", "case_sensitive": 0}, "true or false"),
        (Kind.APPROVAL_REQUESTED, {"tool": 5}, '"tool" must be a non-empty text'),
        (Kind.APPROVAL_REQUESTED, {"tool": ""}, '"tool" must be a non-empty text'),
    ],
)
def test_an_optional_config_value_of_the_wrong_type_is_refused_where_entered(
    kind: str, config: dict[str, Any], message: str
):
    """``"case_sensitive": "false"`` (text) graded case-sensitively, the
    opposite of what was meant, and a tool named by a number matched no
    request: both without a word (found by hostile QA)."""
    with pytest.raises(ValidationError, match=message):
        grader_config.check_entered_config(kind, config)
    api = api_of_datasets_and_graders()
    body = {"name": "g", "kind": str(kind), "config": config}
    response = api.post("/api/graders/", body, format="json")
    assert response.status_code == 400 and message in str(response.json())
    for good in ({"text": "x", "case_sensitive": False}, {"text": "x"}):
        grader_config.check_entered_config(Kind.OUTPUT_CONTAINS, good)
    grader_config.check_entered_config(Kind.APPROVAL_REQUESTED, {"tool": "deploy"})


@pytest.mark.parametrize(
    "usd", ["1_000", "\u0661\u0662", "1e400", "1E-2", " 5", "5 ", "+5", "5."]
)
def test_a_cost_grader_takes_an_amount_written_plainly_only(usd):
    """Python's Decimal read these (Arabic-Indic 12 as 12, 1e400 as at most
    $1E+400); other programs reading the stored config do not."""
    api = api_of_datasets_and_graders()
    body = {"name": "g", "kind": "cost_at_most", "config": {"usd": usd}}
    refused = api.post("/api/graders/", body, format="json")
    assert refused.status_code == 400, refused.content
    (message,) = refused.json()["errors"]["config"]
    assert message.startswith('"usd" must be an amount'), message
    assert not Grader.objects.exists()
    session = session_with(cost=Decimal("0.02"))
    # a stored grader's amount is read as it always was: its grades go on
    stored = grade(Kind.COST_AT_MOST, {"usd": usd}, session)
    assert stored is (Decimal("0.02") <= Decimal(usd.strip()))
    for index, amount in enumerate(["0.05", ".05", "12", 0.05, 12, 1e-7]):
        body = {"name": f"g{index}", "kind": "cost_at_most", "config": {"usd": amount}}
        assert api.post("/api/graders/", body, format="json").status_code == 201
    assert grade(Kind.COST_AT_MOST, {"usd": ".05"}, session) is True
    assert grade(Kind.COST_AT_MOST, {"usd": 1e-7}, session) is False


def judge_prompt(key: str = "judge", **params: Any) -> PromptTemplate:
    """A grader's prompt (``graders/<key>``) taking what a grade gives it, and
    ``params`` besides (or instead)."""
    section = SectionDefinitionFactory.create(
        template="Does this answer: $output\nmatch: $expected\n($params)",
        default_params={"output": "", "expected": "", "params": "", **params},
    )
    prompt = PromptTemplateFactory.create(namespace="graders", key=key)
    add_sections(prompt, section)
    return prompt


GIVEN = {"output": "", "expected": "", "params": ""}


@pytest.mark.parametrize(
    ("declared", "error"),
    [
        (GIVEN, None),
        (GIVEN | {"output": None}, None),  # required: a grade gives it
        (GIVEN | {"tone": "strict"}, None),  # one more, with a default
        (
            {"output": "", "params": ""},
            'does not take "expected" (it takes: "output", "params")',
        ),
        (GIVEN | {"tone": None}, 'requires "tone", which a grade does not give'),
        (GIVEN | {"output": 0}, 'takes "output" as integer: a grade gives each as'),
    ],
)
def test_a_model_graders_prompt_must_take_what_a_grade_gives_it(
    declared: dict[str, Any], error: str | None
) -> None:
    section = SectionDefinitionFactory.create(
        template="Judge $output", default_params=declared
    )
    prompt = PromptTemplateFactory.create(namespace="graders", key="judge")
    add_sections(prompt, section)
    config = {"prompt": prompt.ref}
    if error is None:
        grader_config.check_entered_config(Kind.MODEL_GRADED, config)
        return
    with pytest.raises(ValidationError, match=re.escape(error)):
        grader_config.check_entered_config(Kind.MODEL_GRADED, config)
    api = api_of_datasets_and_graders()
    body = {"name": "g", "kind": "model_graded", "config": config}
    response = api.post("/api/graders/", body, format="json")
    assert response.status_code == 400
    assert error in str(response.json())


def test_a_grader_whose_prompt_cannot_run_leaves_the_grade_pending_not_failed():
    """A grader entered before its prompt changed: the grade is the
    grader's problem, not a fail of the run it grades."""
    seed_demo_catalog()
    grader = Grader(
        name="judge", kind=Kind.MODEL_GRADED, config={"prompt": "demo/research"}
    )
    graded = session_with(output_text="Django 5.2")

    verdict = grading.grade(grader, graded, DatasetCase(expected_output="5.2"), None)

    assert verdict.passed is None and verdict.session is None
    assert verdict.detail.startswith("The grader's prompt could not run: Unknown")
    assert verdict.detail.endswith("Correct the grader or its prompt, then Grade now.")
    assert (
        not AgentSession.objects.filter(prompt_ref="demo/research")
        .exclude(pk=graded.pk)
        .exists()
    )


def test_a_model_graded_grader_records_its_own_session():
    seed_demo_catalog()
    section = SectionDefinitionFactory.create(
        template="Does this answer: $output\nmatch: $expected\n($params)",
        default_params={"output": "", "expected": "", "params": ""},
    )
    prompt = PromptTemplateFactory.create(namespace="graders", key="judge")
    add_sections(prompt, section)
    graded = session_with(output_text="Django 5.2")
    grader = Grader(name="judge", kind=Kind.MODEL_GRADED, config={"prompt": prompt.ref})

    verdict = grading.grade(grader, graded, DatasetCase(expected_output="5.2"), None)

    assert verdict.session is not None
    judge = AgentSession.objects.get(pk=verdict.session)
    assert judge.prompt_ref == "graders/judge"
    assert "Django 5.2" in judge.rendered_prompt and "5.2" in judge.params["expected"]
    assert verdict.passed is (judge.output_text.strip().upper().startswith("PASS"))


def test_runs_waiting_for_approval_are_counted_as_paused():
    seed_demo_catalog()
    user = runner()
    dataset = Dataset.objects.create(name="ship")
    DatasetCase.objects.create(dataset=dataset, params={})
    grader = Grader.objects.create(
        name="asked", kind=Kind.APPROVAL_REQUESTED, config={}
    )
    experiment = Experiment.objects.create(
        name="ship it",
        dataset=dataset,
        prompt_ref="demo/ship",
        targets=["draft"],
        created_by=user,
    )
    experiment.graders.add(grader)

    run_experiment(experiment, user=user)

    summary = results_of(experiment).targets[0]
    assert summary.paused == 1 and summary.pass_rates["asked"] is None
    assert experiment.status == Experiment.Status.RUNNING  # not done yet
    assert grade_finished(experiment, user=user) == 1  # graded again, still paused


def test_a_case_that_cannot_start_is_recorded_with_why():
    seed_demo_catalog()
    user = runner()
    dataset = Dataset.objects.create(name="bad")
    DatasetCase.objects.create(dataset=dataset, params={"nope": 1})
    experiment = Experiment.objects.create(
        name="x", dataset=dataset, prompt_ref="demo/research", targets=["draft"]
    )
    (run,) = run_experiment(experiment, user=user)
    assert run.session_id is None and "nope" in run.error
    assert results_of(experiment).targets[0].failed_to_start == 1


def test_cases_import_from_csv_and_json_all_or_none():
    dataset = Dataset.objects.create(name="d")
    DatasetCase.objects.create(dataset=dataset, position=4, params={})
    added = import_cases(
        dataset,
        b'params,trust_level,expected_output\n"{""q"": 1}",trusted,yes\n{},,\n',
        "cases.csv",
    )
    assert [(c.position, c.params, c.trust_level) for c in added] == [
        (5, {"q": 1}, "trusted"),
        (6, {}, "standard"),
    ]
    added = import_cases(dataset, b'[{"params": {"q": 2}, "notes": "n"}]', "c.json")
    assert added[0].notes == "n"
    with pytest.raises(ValidationError, match="Row 3: params is not JSON"):
        import_cases(dataset, b"params\n{}\n{oops\n", "cases.csv")
    with pytest.raises(ValidationError, match="Item 2: trust_level"):
        import_cases(
            dataset,
            b'[{"params": {}}, {"params": {}, "trust_level": "root"}]',
            "c.json",
        )
    with pytest.raises(ValidationError, match=r"Item 1: .*NUL"):
        import_cases(dataset, b'[{"params": {"q": "a\\u0000"}}]', "c.json")
    with pytest.raises(ValidationError, match="Unknown column"):
        import_cases(dataset, b"params,secret\n{},1\n", "cases.csv")
    with pytest.raises(ValidationError, match="Row 2: params is not JSON"):
        import_cases(dataset, b"params\n" + b"x" * 200_000 + b"\n", "cases.csv")
    with pytest.raises(ValidationError) as nested:
        import_cases(dataset, b"[" * 5000 + b"]" * 5000, "c.json")
    assert nested.value.messages == [
        "The file is not valid JSON: Must not be nested more than 64 levels deep."
    ]
    # found by a hostile review: Python's advice on its digits limit, and a
    # column name whose space could not be seen
    with pytest.raises(ValidationError) as digits:
        import_cases(dataset, b'[{"params": {"n": ' + b"9" * 5000 + b"}}]", "c.json")
    assert digits.value.messages == [
        "The file is not valid JSON: A number has too many digits."
    ]
    with pytest.raises(ValidationError) as spaced:
        import_cases(dataset, b"params, trust_level\n{},standard\n", "cases.csv")
    assert spaced.value.messages == [
        "Unknown column(s): ' trust_level'; expected params, trust_level, "
        "expected_output, notes."
    ]
    # a key twice: refused, as by the API (Python's decoder keeps the last)
    with pytest.raises(ValidationError, match='the key "q" appears twice'):
        import_cases(dataset, b'[{"params": {"q": "a", "q": "b"}}]', "c.json")
    with pytest.raises(ValidationError, match='the key "notes" appears twice'):
        import_cases(dataset, b'[{"params": {}, "notes": "a", "notes": "b"}]', "c.json")
    with pytest.raises(ValidationError, match=r'Row 2: .*the key "q" appears twice'):
        import_cases(dataset, b'params\n"{""q"": 1, ""q"": 2}"\n', "cases.csv")
    assert dataset.cases.count() == 4


def test_a_run_whose_session_was_purged_reads_purged_and_still_counts(
    client, demo, monkeypatch
):
    """``purge_sessions`` removes ended sessions; their experiment runs keep
    their grades and count as finished, and read "purged" (not "not started")
    on the page and in the CSV, without a link to a session that is gone."""
    run = ExperimentRun.objects.filter(experiment=demo).first()
    assert run is not None and run.session_id is not None
    # two days later (a purge keeps the sessions of today: they hold the
    # day's spend against the daily budgets)
    later = timezone.now() + timedelta(days=2)
    with monkeypatch.context() as patched:
        patched.setattr(timezone, "now", lambda: later)
        call_command("purge_sessions", "--older-than", "1d", stdout=io.StringIO())
    assert not AgentSession.objects.filter(pk=run.session_id).exists()
    results = results_of(demo)
    assert [t.finished for t in results.targets] == [10, 10]
    assert results.targets[0].failed_to_start == 0
    rows = list(csv.reader(io.StringIO(csv_of(results))))
    statuses = {row[4] for row in rows[1:]}
    assert statuses == {"purged"}
    client.force_login(demo.created_by)
    html = client.get(reverse("sessions_app:experiment-detail", args=[demo.pk]))
    text = html.content.decode()
    assert "purged" in text and "not started" not in text
    assert reverse("sessions_app:session-detail", args=[run.session_id]) not in text


def test_the_pages_show_results_to_the_author_and_auditors(client, demo):
    url = reverse("sessions_app:experiment-detail", args=[demo.pk])
    client.force_login(demo.created_by)
    html = client.get(url).content.decode()
    assert "cites only the allowed domains" in html and "0% (0/10)" in html
    assert "100% (10/10)" in html and "the targets differ" in html
    assert reverse("sessions_app:experiment-csv", args=[demo.pk]) in html
    csv_page = client.get(reverse("sessions_app:experiment-csv", args=[demo.pk]))
    assert csv_page["Content-Type"].startswith("text/csv")

    client.force_login(runner("bob"))
    assert client.get(url).status_code == 404
    assert (
        "Domain filter"
        not in client.get(reverse("sessions_app:experiment-list")).content.decode()
    )
    client.force_login(auditor())
    assert client.get(url).status_code == 200


def test_the_author_runs_a_new_experiment_from_its_page(client):
    seed_demo_catalog()
    user = runner()
    user.user_permissions.add(Permission.objects.get(codename="view_dataset"))
    dataset = Dataset.objects.create(name="one")
    DatasetCase.objects.create(dataset=dataset, params={"question": "Why?"})
    DatasetCase.objects.create(dataset=dataset, params={"nope": 1})  # cannot start
    experiment = Experiment.objects.create(
        name="new",
        dataset=dataset,
        prompt_ref="demo/research",
        targets=["draft"],
        created_by=user,
    )
    client.force_login(user)
    page = client.get(reverse("sessions_app:experiment-detail", args=[experiment.pk]))
    assert 'id="run-experiment"' in page.content.decode()
    ran = client.post(
        reverse("sessions_app:experiment-run", args=[experiment.pk]), follow=True
    )
    assert "Started 1 run(s). 1 could not start: the results say why." in (
        ran.content.decode()
    )
    experiment.refresh_from_db()
    assert experiment.status == Experiment.Status.FINISHED
    assert ExperimentRun.objects.filter(experiment=experiment).count() == 2
    # a double click: the author is told it ran, not "only its author" (a 403)
    again = client.post(
        reverse("sessions_app:experiment-run", args=[experiment.pk]), follow=True
    )
    assert again.status_code == 200
    assert "This experiment has already been run." in again.content.decode()
    assert ExperimentRun.objects.filter(experiment=experiment).count() == 2
    graded = client.post(
        reverse("sessions_app:experiment-grade", args=[experiment.pk]), follow=True
    )
    assert "nothing is left to grade" in graded.content.decode()
    api = APIClient()
    api.force_login(user)
    late = api.post(f"/api/experiments/{experiment.pk}/grade/", {}, format="json")
    assert late.status_code == 409
    assert "nothing is left to grade" in late.json()["detail"]


def test_an_experiment_run_from_its_page_counts_against_the_start_limit(client):
    """The page started runs the API's start limit did not count (found by a
    hostile review): past the limit it starts nothing and says so."""
    from django.core.cache import cache
    from django.test import override_settings
    from rest_framework.settings import api_settings

    from tooling.api.throttling import StartSlot

    cache.clear()
    seed_demo_catalog()
    user = runner()
    user.user_permissions.add(Permission.objects.get(codename="view_dataset"))
    dataset = Dataset.objects.create(name="one")
    DatasetCase.objects.create(dataset=dataset, params={"question": "Why?"})
    experiment = Experiment.objects.create(
        name="new",
        dataset=dataset,
        prompt_ref="demo/research",
        targets=["draft"],
        created_by=user,
    )
    client.force_login(user)
    rates = {"session-start": "1/minute"}
    with override_settings(
        REST_FRAMEWORK={**api_settings.user_settings, "DEFAULT_THROTTLE_RATES": rates}
    ):
        assert StartSlot.take(user).wait is None  # the one start of the minute
        ran = client.post(
            reverse("sessions_app:experiment-run", args=[experiment.pk]), follow=True
        )
    assert "You have started as many runs as you may for now" in (ran.content.decode())
    assert not ExperimentRun.objects.filter(experiment=experiment).exists()
    cache.clear()


def test_a_session_is_added_to_a_dataset_from_its_page(client):
    user = runner()
    user.user_permissions.add(Permission.objects.get(codename="add_datasetcase"))
    dataset = Dataset.objects.create(name="kept")
    session = AgentSessionFactory.create(created_by=user, params={"topic": "tides"})
    client.force_login(user)
    assert (
        'id="add-to-dataset"' in client.get(session.get_absolute_url()).content.decode()
    )
    client.post(
        reverse("sessions_app:session-add-to-dataset", args=[session.pk]),
        {"dataset": dataset.pk},
    )
    (case,) = dataset.cases.all()
    assert case.params == {"topic": "tides"} and case.source_session_id == session.pk
    other = AgentSessionFactory.create()
    refused = client.post(
        reverse("sessions_app:session-add-to-dataset", args=[other.pk]),
        {"dataset": dataset.pk},
    )
    assert refused.status_code == 404


def test_the_api_creates_datasets_graders_and_runs_experiments():
    seed_demo_catalog()
    user = runner()
    user.user_permissions.add(
        *Permission.objects.filter(
            codename__in=["add_dataset", "view_dataset", "add_grader", "add_experiment"]
        )
    )
    api = APIClient()
    api.force_login(user)

    dataset = api.post(
        "/api/datasets/",
        {"name": "qs", "cases": [{"params": {"question": "Why?"}}]},
        format="json",
    )
    assert dataset.status_code == 201, dataset.json()
    # the list says how many cases; the dataset's own URL has them
    (listed,) = api.get("/api/datasets/").json()["results"]
    assert listed["case_count"] == 1 and "cases" not in listed
    one = api.get(f"/api/datasets/{listed['id']}/").json()
    assert [case["params"] for case in one["cases"]] == [{"question": "Why?"}]
    bad = api.post(
        "/api/graders/",
        {"name": "g", "kind": "output_regex", "config": {}},
        format="json",
    )
    assert bad.status_code == 400 and "config" in bad.json()["errors"]
    good = api.post(
        "/api/graders/",
        {"name": "words", "kind": "tool_called", "config": {"tool": "count_words"}},
        format="json",
    )
    assert good.status_code == 201
    created = api.post(
        "/api/experiments/",
        {
            "name": "api",
            "dataset": "qs",
            "prompt": "demo/research",
            "targets": ["draft"],
            "graders": ["words"],
        },
        format="json",
    )
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["targets"][0]["pass_rates"] == {"words": 1.0}
    experiment = body["experiment"]["id"]
    assert api.get(f"/api/experiments/{experiment}/csv/").status_code == 200
    refused = api.post(
        "/api/experiments/",
        {
            "name": "x",
            "dataset": "qs",
            "prompt": "demo/research",
            "targets": ["nope"],
            "graders": [],
        },
        format="json",
    )
    assert refused.status_code == 400
    assert refused.json()["errors"]["targets.0"] == [
        "Enter 'draft', 'label:<name>' (a label is 1 to 32 lower-case letters, "
        "digits, '-' or '_', starting with a letter) or a revision's hash (64 "
        "characters, digits and a-f)."
    ]
    outsider = APIClient()
    outsider.force_login(runner("bob"))
    assert outsider.get(f"/api/experiments/{experiment}/").status_code == 404
    assert outsider.get("/api/datasets/").status_code == 403


def test_importing_cases_needs_to_change_the_dataset(client):
    """Adding cases is not enough: the import changes the dataset, so it needs
    "Can change dataset" too; without both, any id is a 403 (none looked up)."""
    dataset = Dataset.objects.create(name="d")
    staff = User.objects.create_user("casewriter", password="pw", is_staff=True)
    staff.user_permissions.add(
        Permission.objects.get(codename="add_datasetcase"),
        Permission.objects.get(codename="view_dataset"),
    )
    client.force_login(staff)
    change = reverse("admin:sessions_app_dataset_change", args=[dataset.pk])
    assert "import-cases-link" not in client.get(change).content.decode()
    url = reverse("admin:sessions_app_dataset_import", args=[dataset.pk])
    upload = b'params\n"{""question"": ""Why?""}"\n'
    refused = client.post(url, {"file": SimpleUploadedFile("c.csv", upload)})
    assert refused.status_code == 403 and not dataset.cases.exists()
    missing = reverse("admin:sessions_app_dataset_import", args=[dataset.pk + 99])
    assert client.get(missing).status_code == 403
    staff.user_permissions.add(Permission.objects.get(codename="change_dataset"))
    staff = User.objects.get(pk=staff.pk)  # (permissions are cached per user)
    client.force_login(staff)
    imported = client.post(url, {"file": SimpleUploadedFile("c.csv", upload)})
    assert imported.status_code == 302 and dataset.cases.count() == 1
    assert client.get(missing).status_code == 404
    assert "import-cases-link" in client.get(change).content.decode()


def test_the_admin_creates_graders_experiments_and_imports_cases(client):
    seed_demo_catalog()
    root = User.objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(root)
    refused = client.post(
        reverse("admin:sessions_app_grader_add"),
        {"name": "g", "kind": "output_regex", "config": '{"pattern": "("}'},
    )
    assert refused.status_code == 200 and "not valid" in refused.content.decode()
    client.post(
        reverse("admin:sessions_app_grader_add"),
        {"name": "words", "kind": "tool_called", "config": '{"tool": "count_words"}'},
    )
    grader = Grader.objects.get(name="words")
    dataset = Dataset.objects.create(name="d")
    imported = client.post(
        reverse("admin:sessions_app_dataset_import", args=[dataset.pk]),
        {"file": SimpleUploadedFile("c.csv", b'params\n"{""question"": ""Why?""}"\n')},
    )
    assert imported.status_code == 302 and dataset.cases.count() == 1
    bad = client.post(
        reverse("admin:sessions_app_dataset_import", args=[dataset.pk]),
        {"file": SimpleUploadedFile("c.csv", b"params\n{oops\n")},
    )
    assert "Row 2: params is not JSON" in bad.content.decode()

    wrong = client.post(
        reverse("admin:sessions_app_experiment_add"),
        {
            "name": "e",
            "dataset": dataset.pk,
            "prompt_ref": "demo/research",
            "targets_text": "draft\nproduction\nproduction",
            "graders": [grader.pk],
        },
    )
    # each named once (found by hostile QA: 'production', 'production')
    assert (
        wrong.context["adminform"]
        .form.errors["targets_text"][0]
        .startswith("Not a target: 'production'. Write")
    )
    several = client.post(
        reverse("admin:sessions_app_experiment_add"),
        {
            "name": "e",
            "dataset": dataset.pk,
            "prompt_ref": "demo/\u202eresearch",
            "targets_text": "draft\n  draft \nlabel:\n\u202edraft",
            "graders": [grader.pk],
        },
    )
    form = several.context["adminform"].form
    # every mistake at once, a bidi control escaped in the message
    assert form.errors["targets_text"] == [
        "Not a target: 'label:', '\\u202edraft'. Write draft, label:<name> or a "
        "revision's 64-digit hash, one per line.",
        "Name each target once: 'draft' more than once.",
    ]
    assert form.errors["prompt_ref"] == [
        "No prompt template is named 'demo/\\u202eresearch'."
    ]
    assert "\u202e" not in str(form.errors)  # (the boxes keep what was typed)
    unknown = client.post(
        reverse("admin:sessions_app_experiment_add"),
        {
            "name": "e",
            "dataset": dataset.pk,
            "prompt_ref": "demo/research",
            "targets_text": "draft\nlabel:production\n" + "0" * 64,
            "graders": [grader.pk],
        },
    )
    errors = unknown.context["adminform"].form.errors["targets_text"]
    assert errors == [
        "demo/research has no label 'production'.",
        f"No revision of demo/research has the hash '{'0' * 64}'.",
    ]
    research = PromptTemplate.objects.get(namespace="demo", key="research")
    assert releases.seed_label(research, "production", note="first")
    client.post(
        reverse("admin:sessions_app_experiment_add"),
        {
            "name": "e",
            "dataset": dataset.pk,
            "prompt_ref": "demo/research",
            "targets_text": "draft\nlabel:production",
            "graders": [grader.pk],
        },
    )
    experiment = Experiment.objects.get(name="e")
    assert experiment.targets == ["draft", "label:production"]
    assert experiment.created_by == root and experiment.status == "new"


def test_an_experiment_refused_from_its_page_gives_its_start_back(client, monkeypatch):
    """Too many runs: refused, and the start slot it took is freed (the
    limit counts runs started)."""
    from django.core.cache import cache
    from django.test import override_settings
    from rest_framework.settings import api_settings

    from tooling.api.throttling import StartSlot

    cache.clear()
    seed_demo_catalog()
    monkeypatch.setattr("sessions_app.experiments.running.MOST_RUNS", 1)
    user = runner()
    user.user_permissions.add(Permission.objects.get(codename="view_dataset"))
    dataset = Dataset.objects.create(name="two")
    for question in ("Why?", "How?"):
        DatasetCase.objects.create(dataset=dataset, params={"question": question})
    experiment = Experiment.objects.create(
        name="big",
        dataset=dataset,
        prompt_ref="demo/research",
        targets=["draft"],
        created_by=user,
    )
    client.force_login(user)
    rates = {"session-start": "1/minute"}
    with override_settings(
        REST_FRAMEWORK={**api_settings.user_settings, "DEFAULT_THROTTLE_RATES": rates}
    ):
        refused = client.post(
            reverse("sessions_app:experiment-run", args=[experiment.pk]), follow=True
        )
        assert "would start 2 runs; at most 1" in refused.content.decode()
        assert StartSlot.take(user).wait is None  # the minute's one start is free
    cache.clear()


def test_an_experiment_of_too_many_runs_is_refused_before_any_starts(monkeypatch):
    monkeypatch.setattr("sessions_app.experiments.running.MOST_RUNS", 3)
    dataset = Dataset.objects.create(name="big")
    DatasetCase.objects.bulk_create(
        DatasetCase(dataset=dataset, position=i) for i in range(2)
    )
    experiment = Experiment.objects.create(
        name="big", dataset=dataset, prompt_ref="demo/research", targets=["draft", "x"]
    )
    with pytest.raises(ValidationError, match="would start 4 runs; at most 3"):
        run_experiment(experiment, user=None)
    experiment.refresh_from_db()
    assert experiment.status == Experiment.Status.NEW
    assert not ExperimentRun.objects.exists()


def test_a_case_at_a_trust_level_its_runner_may_not_start_is_refused():
    seed_demo_catalog()
    user = runner()
    dataset = Dataset.objects.create(name="trusted")
    DatasetCase.objects.create(dataset=dataset, params={}, trust_level="trusted")
    experiment = Experiment.objects.create(
        name="t", dataset=dataset, prompt_ref="demo/research", targets=["draft"]
    )
    (run,) = run_experiment(experiment, user=user)
    assert run.session_id is None and "trust level 'trusted'" in run.error
    assert not AgentSession.objects.filter(trust_level="trusted").exists()


def test_a_catastrophic_pattern_fails_the_grade_in_bounded_time():
    session = session_with(output_text="a" * 40 + "b")
    grader = Grader(name="slow", kind=Kind.OUTPUT_REGEX, config={"pattern": "^(a|a)*$"})
    verdict = grading.grade(grader, session, DatasetCase(), None)
    assert verdict.passed is False and "took more than" in verdict.detail


@pytest.mark.parametrize(
    ("keyword", "ref", "shown"),
    [
        ("$ref", "#/$defs/nowhere", '"/$defs/nowhere"'),
        ("$ref", "http://127.0.0.1:9/x", '"http://127.0.0.1:9/x"'),
        # found by hostile QA: an anchor was named "$ref" ""
        ("$ref", "#nowhere", '"#nowhere"'),
        ("$dynamicRef", "#x", '"#x"'),
    ],
)
def test_a_schema_that_refers_nowhere_is_refused(keyword, ref, shown):
    """In words, not by an internal class name (_WrappedReferencingError)."""
    with pytest.raises(ValidationError) as refused:
        grader_config.check_config(Kind.OUTPUT_SCHEMA, {"schema": {keyword: ref}})
    assert refused.value.messages == [
        f'"schema" cannot be applied: its "{keyword}" {shown} names nothing in the '
        "schema (only references inside it are followed: remote ones are not "
        "fetched)."
    ]


def test_a_schema_whose_references_never_end_is_refused():
    with pytest.raises(ValidationError) as refused:
        grader_config.check_config(Kind.OUTPUT_SCHEMA, {"schema": {"$ref": "#"}})
    assert refused.value.messages == [
        '"schema" cannot be applied: its references lead back to themselves '
        "without end."
    ]


def test_the_csv_header_is_no_formula_either(demo):
    Grader.objects.filter(name="counts its words").update(name="=HYPERLINK(1)")
    header = next(csv.reader(io.StringIO(csv_of(results_of(demo)))))
    assert "'=HYPERLINK(1) passed" in header


def test_reading_results_starts_no_model_grader_and_its_author_grades_now(client):
    seed_demo_catalog()
    section = SectionDefinitionFactory.create(
        template="Grade: $output ($expected, $params)",
        default_params={"output": "", "expected": "", "params": ""},
    )
    judge = PromptTemplateFactory.create(namespace="graders", key="judge")
    add_sections(judge, section)
    author = runner()
    dataset = Dataset.objects.create(name="j")
    case = DatasetCase.objects.create(dataset=dataset, params={})
    grader = Grader.objects.create(
        name="judge", kind=Kind.MODEL_GRADED, config={"prompt": judge.ref}
    )
    experiment = Experiment.objects.create(
        name="j",
        dataset=dataset,
        prompt_ref="demo/research",
        targets=["draft"],
        created_by=author,
        status=Experiment.Status.RUNNING,
    )
    experiment.graders.add(grader)
    graded = session_with(created_by=author)
    ExperimentRun.objects.create(
        experiment=experiment, case=case, target="draft", session=graded
    )
    url = reverse("sessions_app:experiment-detail", args=[experiment.pk])

    client.force_login(auditor())
    assert "pending" in client.get(url).content.decode()
    assert not AgentSession.objects.filter(prompt_ref=judge.ref).exists()
    assert (
        client.post(reverse("sessions_app:experiment-grade", args=[experiment.pk]))
    ).status_code == 403

    client.force_login(author)
    client.post(reverse("sessions_app:experiment-grade", args=[experiment.pk]))
    verdict = AgentSession.objects.get(prompt_ref=judge.ref)
    assert verdict.created_by == author
    run = ExperimentRun.objects.get(experiment=experiment)
    assert (run.grades or {})["judge"]["session"] == str(verdict.pk)


def test_with_workers_the_results_fill_in_as_runs_finish(settings, client):
    """Sessions queued for a worker (no broker in tests: the test runs them as
    a worker would); reading the results grades those that ended."""
    settings.CELERY_TASK_ALWAYS_EAGER = False
    seed_demo_catalog()
    user = runner()
    user.user_permissions.add(Permission.objects.get(codename="view_dataset"))
    dataset = Dataset.objects.create(name="queued")
    DatasetCase.objects.bulk_create(
        DatasetCase(dataset=dataset, position=i, params={"question": f"Q{i}?"})
        for i in range(2)
    )
    grader = Grader.objects.create(
        name="words", kind=Kind.TOOL_CALLED, config={"tool": "count_words"}
    )
    experiment = Experiment.objects.create(
        name="q",
        dataset=dataset,
        prompt_ref="demo/research",
        targets=["draft"],
        created_by=user,
    )
    experiment.graders.add(grader)

    runs = run_experiment(experiment, user=user)
    started = [run.session_id for run in runs if run.session_id is not None]
    assert len(started) == 2
    assert set(
        AgentSession.objects.filter(pk__in=started).values_list("status", flat=True)
    ) == {"queued"}
    client.force_login(user)
    url = reverse("sessions_app:experiment-detail", args=[experiment.pk])
    assert client.get(url).context["results"].targets[0].finished == 0

    services.run_session(session_id=runs[0].session_id)
    summary = client.get(url).context["results"].targets[0]
    assert (summary.finished, summary.decided["words"]) == (1, 1)
    experiment.refresh_from_db()
    assert experiment.status == Experiment.Status.RUNNING
    services.run_session(session_id=runs[1].session_id)
    client.get(url)
    experiment.refresh_from_db()
    assert experiment.status == Experiment.Status.FINISHED


def experiment_staff(name: str) -> User:
    """Staff who may add and change experiments in the admin."""
    user = runner(name)
    user.user_permissions.add(
        *Permission.objects.filter(
            codename__in=[
                "view_experiment",
                "add_experiment",
                "change_experiment",
                "delete_experiment",
                "view_dataset",
            ]
        )
    )
    return user


def test_the_experiment_admin_shows_and_changes_only_its_authors_own(
    client: Any,
) -> None:
    seed_demo_catalog()
    author, other = experiment_staff("alice"), experiment_staff("bob")
    dataset = Dataset.objects.create(name="d")
    grader = Grader.objects.create(name="g", kind=Kind.APPROVAL_REQUESTED)
    experiment = Experiment.objects.create(
        name="alice's",
        dataset=dataset,
        prompt_ref="demo/research",
        targets=["draft"],
        created_by=author,
    )
    change = reverse("admin:sessions_app_experiment_change", args=[experiment.pk])
    delete = reverse("admin:sessions_app_experiment_delete", args=[experiment.pk])
    edited = {
        "name": "alice's",
        "dataset": dataset.pk,
        "prompt_ref": "demo/ship",
        "targets_text": "draft",
        "graders": [grader.pk],
    }

    client.force_login(other)
    listed = client.get(reverse("admin:sessions_app_experiment_changelist"))
    assert "alice&#x27;s" not in listed.content.decode()
    assert client.get(change).status_code == 404
    assert client.post(change, edited).status_code == 404
    assert client.post(delete, {"post": "yes"}).status_code == 404
    experiment.refresh_from_db()
    assert experiment.prompt_ref == "demo/research"

    client.force_login(auditor())  # sees every experiment, changes none
    assert client.get(change).status_code == 200
    assert client.post(change, edited).status_code == 403

    client.force_login(author)
    assert client.post(change, edited).status_code == 302
    experiment.refresh_from_db()
    assert experiment.prompt_ref == "demo/ship"


@pytest.mark.parametrize(
    "schema",
    [
        {"properties": {"answer": {"pattern": "^(a|a)*$"}}},
        {"patternProperties": {"^(a|a)*$": {}}},
        {"patternProperties": {"^(a|a)*$": {}}, "additionalProperties": False},
        {"items": {"pattern": "^(a|a)*$"}},  # the patterns share one deadline
    ],
)
def test_a_catastrophic_schema_pattern_fails_the_grade_in_bounded_time(
    schema: dict[str, Any],
) -> None:
    grader_config.check_config(Kind.OUTPUT_SCHEMA, {"schema": schema})
    slow = "a" * 26 + "b"  # Python's re: 11 s; the regex module: longer
    output: Any = {"answer": slow, slow: 1}
    if "items" in schema:
        # each under half a second (Python's re: 0.15 s), 27 s in all
        output = ["a" * 20 + "b"] * 60
    session = session_with(output=output)
    grader = Grader(name="slow", kind=Kind.OUTPUT_SCHEMA, config={"schema": schema})

    started = time.monotonic()
    verdict = grading.grade(grader, session, DatasetCase(), None)

    assert time.monotonic() - started < 5  # half a second, on a busy machine
    assert verdict.passed is False and "took more than 0.5 s" in verdict.detail


def test_a_schema_pattern_still_decides_the_grade() -> None:
    schema = {
        "properties": {"answer": {"pattern": r"^\d+$"}},
        "patternProperties": {"^x-": {"type": "integer"}},
        "additionalProperties": False,
    }
    assert grade(Kind.OUTPUT_SCHEMA, {"schema": schema}, session_with(output={}))
    good = session_with(output={"answer": "42", "x-a": 1})
    assert grade(Kind.OUTPUT_SCHEMA, {"schema": schema}, good) is True
    for output in ({"answer": "4a"}, {"x-a": "1"}, {"other": 1}):
        bad = session_with(output=output)
        assert grade(Kind.OUTPUT_SCHEMA, {"schema": schema}, bad) is False


def test_a_schema_of_unevaluated_and_pattern_properties_is_refused() -> None:
    schema = {
        "allOf": [{"patternProperties": {"^x": {}}}],
        "unevaluatedProperties": False,
    }
    with pytest.raises(ValidationError, match='use "additionalProperties"'):
        grader_config.check_config(Kind.OUTPUT_SCHEMA, {"schema": schema})


def test_a_grader_that_graded_runs_is_neither_deleted_nor_changed(
    client: Any, demo: Experiment
) -> None:
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    grader = Grader.objects.get(name="counts its words")
    change = reverse("admin:sessions_app_grader_change", args=[grader.pk])
    delete = reverse("admin:sessions_app_grader_delete", args=[grader.pk])
    before = (grader.name, grader.kind, grader.config)
    form = {
        "name": grader.name,
        "kind": grader.kind,
        "config": '{"tool": "count_words"}',
    }

    confirm = client.get(delete).content.decode()
    assert "it graded the runs of “Domain filter on vs off”" in confirm
    client.post(delete, {"post": "yes"})
    for edit in (
        {"name": "renamed"},
        {"kind": Kind.TOOL_NOT_CALLED},
        # the posted initial value is not trusted: the stored row is
        {"config": '{"tool": "search"}', "initial-config": '{"tool": "search"}'},
    ):
        refused = client.post(change, {**form, **edit}).content.decode()
        assert "Create a new grader instead" in refused
    assert client.post(change, {**form, "description": "why"}).status_code == 302

    grader.refresh_from_db()
    assert (grader.name, grader.kind, grader.config) == before
    assert grader.description == "why"
    assert results_of(demo).targets[0].pass_rates["counts its words"] == 1.0


def test_a_grader_no_experiment_ran_with_stays_editable(client: Any) -> None:
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    grader = Grader.objects.create(
        name="g", kind=Kind.TOOL_CALLED, config={"tool": "a"}
    )
    dataset = Dataset.objects.create(name="d")
    Experiment.objects.create(
        name="new", dataset=dataset, prompt_ref="demo/research", targets=["draft"]
    ).graders.add(grader)
    change = reverse("admin:sessions_app_grader_change", args=[grader.pk])
    renamed = {"name": "h", "kind": Kind.TOOL_CALLED, "config": '{"tool": "b"}'}
    assert client.post(change, renamed).status_code == 302
    delete = reverse("admin:sessions_app_grader_delete", args=[grader.pk])
    client.post(delete, {"post": "yes"})
    assert not Grader.objects.exists()


def test_a_case_whose_params_are_not_an_object_is_refused(client: Any) -> None:
    user = runner()
    user.user_permissions.add(
        *Permission.objects.filter(codename__in=["add_dataset", "view_dataset"])
    )
    api = APIClient()
    api.force_login(user)
    refused = api.post(
        "/api/datasets/", {"name": "dsL", "cases": [{"params": [1, 2]}]}, format="json"
    )
    assert refused.status_code == 400
    assert "Params must be a JSON object" in str(refused.json()["errors"])
    assert not Dataset.objects.exists()

    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    dataset = Dataset.objects.create(name="d")
    inline = {
        "name": "d",
        "created_at_0": "2026-11-30",
        "created_at_1": "08:00:00",
        "cases-TOTAL_FORMS": "1",
        "cases-INITIAL_FORMS": "0",
        "cases-0-position": "1",
        "cases-0-params": "[1, 2]",
        "cases-0-trust_level": "standard",
    }
    change = reverse("admin:sessions_app_dataset_change", args=[dataset.pk])
    page = client.post(change, inline)
    assert page.status_code == 200
    assert "Params must be a JSON object" in page.content.decode()
    assert not dataset.cases.exists()
    with pytest.raises(ValidationError, match="Row 2: Params must be a JSON object"):
        import_cases(dataset, b"params\n[1]\n", "cases.csv")


def api_of_datasets_and_graders() -> APIClient:
    user = runner()
    user.user_permissions.add(
        *Permission.objects.filter(
            codename__in=["add_dataset", "view_dataset", "add_grader", "view_grader"]
        )
    )
    api = APIClient()
    api.force_login(user)
    return api


@pytest.mark.parametrize(
    ("url", "body", "field"),
    [
        ("/api/datasets/", {"name": "d", "colour": "red"}, "colour"),
        ("/api/datasets/", {"name": "d", "cases": [{"parms": {}}]}, "cases.0.parms"),
        ("/api/graders/", {"name": "g", "kind": "tool_called", "tol": "x"}, "tol"),
    ],
)
def test_an_unknown_field_is_refused_by_name(
    url: str, body: dict[str, Any], field: str
) -> None:
    refused = api_of_datasets_and_graders().post(url, body, format="json")
    assert refused.status_code == 400
    errors = refused.json()["errors"]
    assert field in errors and "Unknown field" in str(errors), errors
    assert not Dataset.objects.exists() and not Grader.objects.exists()


@pytest.mark.parametrize(
    ("url", "body", "field", "message"),
    [
        # DRF would write a number as text
        ("/api/datasets/", {"name": 888.5}, "name", "Not a valid string."),
        (
            "/api/datasets/",
            {"name": "d", "cases": [{"params": {}, "expected_output": 5}]},
            "cases.0.expected_output",
            "Not a valid string.",
        ),
        (
            "/api/graders/",
            {"name": 777, "kind": "tool_called", "config": {"tool": "x"}},
            "name",
            "Not a valid string.",
        ),
    ],
)
def test_a_number_for_text_is_refused_by_name(
    url: str, body: dict[str, Any], field: str, message: str
) -> None:
    refused = api_of_datasets_and_graders().post(url, body, format="json")
    assert refused.status_code == 400
    errors = refused.json()["errors"]
    assert field in errors and message in str(errors[field]), errors
    assert not Dataset.objects.exists() and not Grader.objects.exists()


def test_read_only_fields_sent_back_are_ignored() -> None:
    """A client may post what it read: ``id`` and ``created_at`` are not
    the new dataset's (nor its cases' ids)."""
    body = {
        "name": "d",
        "id": 999,
        "created_at": "1999-01-01T00:00:00Z",
        "cases": [{"id": 999, "params": {}}],
    }
    created = api_of_datasets_and_graders().post("/api/datasets/", body, format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["id"] != 999
    assert not created.json()["created_at"].startswith("1999")


def test_a_config_key_its_kind_does_not_use_is_refused_by_name(client: Any) -> None:
    body = {
        "name": "g",
        "kind": "output_contains",
        "config": {"text": "x", "extra": 1},
    }
    refused = api_of_datasets_and_graders().post("/api/graders/", body, format="json")
    assert refused.status_code == 400
    (message,) = refused.json()["errors"]["config"]
    assert message == (
        'The output_contains kind does not use "extra": its config takes '
        '"case_sensitive", "text". Remove it (or correct its spelling).'
    )
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    page = client.post(
        reverse("admin:sessions_app_grader_add"),
        {**body, "config": '{"text": "x", "extra": 1}'},
    )
    assert "does not use &quot;extra&quot;" in page.content.decode()
    assert not Grader.objects.exists()
    # what a stored grader's grades read leaves the key out
    stored = {"text": "x", "extra": 1}
    assert grade(Kind.OUTPUT_CONTAINS, stored, session_with(output_text="x"))


def test_an_experiment_refused_for_its_size_is_not_created(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sessions_app.experiments.running.MOST_RUNS", 3)
    seed_demo_catalog()
    user = runner()
    user.user_permissions.add(
        *Permission.objects.filter(
            codename__in=["view_dataset", "add_experiment", "view_experiment"]
        )
    )
    dataset = Dataset.objects.create(name="big")
    DatasetCase.objects.bulk_create(
        DatasetCase(dataset=dataset, position=i) for i in range(2)
    )
    Grader.objects.create(name="g", kind=Kind.APPROVAL_REQUESTED)
    api = APIClient()
    api.force_login(user)
    body = {
        "name": "big",
        "dataset": "big",
        "prompt": "demo/research",
        "targets": ["draft", "label:production"],
        "graders": ["g"],
    }

    unknown = api.post("/api/experiments/", body, format="json")
    assert unknown.json()["errors"] == {
        "targets": ["demo/research has no label 'production'."]
    }
    research = PromptTemplate.objects.get(namespace="demo", key="research")
    assert releases.seed_label(research, "production", note="first")
    refused = api.post("/api/experiments/", body, format="json")

    assert refused.status_code == 400
    assert "would start 4 runs; at most 3" in str(refused.json())
    assert not Experiment.objects.exists()
    client.force_login(user)
    page = client.post(
        reverse("admin:sessions_app_experiment_add"),
        {
            "name": "big",
            "dataset": dataset.pk,
            "prompt_ref": "demo/research",
            "targets_text": "draft\nlabel:production",
            "graders": [Grader.objects.get().pk],
        },
    )
    assert "would start 4 runs; at most 3" in page.content.decode()
    assert not Experiment.objects.exists()


@pytest.mark.parametrize(
    "url", ["/api/datasets/", "/api/graders/", "/api/experiments/"]
)
def test_the_lists_honour_and_check_page_size(url: str) -> None:
    user = auditor()
    author = runner()
    dataset = Dataset.objects.create(name="d0")
    for i in range(3):
        Dataset.objects.get_or_create(name=f"d{i}")
        Grader.objects.create(name=f"g{i}", kind=Kind.APPROVAL_REQUESTED)
        Experiment.objects.create(
            name=f"e{i}",
            dataset=dataset,
            prompt_ref="demo/research",
            targets=["draft"],
            created_by=author,
        )
    api = APIClient()
    api.force_login(user)

    page = api.get(url, {"page_size": 2}).json()
    assert len(page["results"]) == 2 and page["next"]
    for wrong in ("0", "9999", "abc"):
        refused = api.get(url, {"page_size": wrong})
        assert refused.status_code == 400
        assert refused.json()["errors"]["page_size"] == [
            "Enter a whole number from 1 to 500."
        ]


def test_an_experiment_names_its_dataset_and_graders_as_they_were_typed() -> None:
    seed_demo_catalog()
    user = runner()
    user.user_permissions.add(
        *Permission.objects.filter(
            codename__in=["add_dataset", "view_dataset", "add_grader", "add_experiment"]
        )
    )
    api = APIClient()
    api.force_login(user)
    api.post(
        "/api/graders/",
        {"name": " =1+2", "kind": "approval_requested", "config": {}},
        format="json",
    )
    api.post(
        "/api/datasets/",
        {"name": " qs ", "cases": [{"params": {"question": "Why?"}}]},
        format="json",
    )
    assert Grader.objects.get().name == "=1+2" and Dataset.objects.get().name == "qs"

    created = api.post(
        "/api/experiments/",
        {
            "name": "typed",
            "dataset": " qs ",
            "prompt": "demo/research",
            "targets": ["draft"],
            "graders": [" =1+2"],
        },
        format="json",
    )

    assert created.status_code == 201, created.json()
    assert created.json()["experiment"]["graders"] == ["=1+2"]


def test_an_experiment_of_no_cases_or_a_grader_named_twice_is_refused() -> None:
    """An empty dataset "finished" at once with 0 runs, and a grader named
    twice was quietly taken once while a target named twice was a 400 (found
    by hostile QA): both are 400s that say why, and nothing is left behind."""
    seed_demo_catalog()
    user = runner()
    user.user_permissions.add(
        *Permission.objects.filter(
            codename__in=["add_dataset", "view_dataset", "add_grader", "add_experiment"]
        )
    )
    api = APIClient()
    api.force_login(user)
    api.post(
        "/api/graders/",
        {"name": "asked", "kind": "approval_requested", "config": {}},
        format="json",
    )
    api.post("/api/datasets/", {"name": "empty", "cases": []}, format="json")
    api.post(
        "/api/datasets/",
        {"name": "one", "cases": [{"params": {"question": "Why?"}}]},
        format="json",
    )
    body = {"name": "e", "prompt": "demo/research", "targets": ["draft"]}

    empty = api.post(
        "/api/experiments/",
        {**body, "dataset": "empty", "graders": ["asked"]},
        format="json",
    )
    twice = api.post(
        "/api/experiments/",
        {**body, "dataset": "one", "graders": ["asked", "asked"]},
        format="json",
    )

    assert empty.status_code == 400
    assert "has no cases" in str(empty.json()["errors"])
    assert twice.status_code == 400
    assert twice.json()["errors"]["graders"] == ["Name each grader once."]
    assert not Experiment.objects.exists()


def test_a_csv_field_as_large_as_an_upload_is_imported(settings: Any) -> None:
    # a site whose runs take parameters that large (a case is held to it)
    settings.WINK_API_MAX_PARAM_BYTES = 2 * 1024 * 1024
    dataset = Dataset.objects.create(name="d")
    question = "x" * (2_000_000)
    content = b'params\n"{""question"": ""' + question.encode() + b'""}"\n'
    assert len(content) <= 2 * 1024 * 1024

    (case,) = import_cases(dataset, content, "cases.csv")

    assert case.params == {"question": question}
    assert csv.field_size_limit() == 131072  # as it was, for everyone else


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"params,notes\n{},n,extra\n", "Row 2 has more cells than the header"),
        (b"params,params\n{},{}\n", "The header names params more than once"),
    ],
)
def test_a_csv_not_shaped_as_its_header_is_refused(
    content: bytes, message: str
) -> None:
    dataset = Dataset.objects.create(name="d")
    with pytest.raises(ValidationError, match=message):
        import_cases(dataset, content, "cases.csv")
    assert not dataset.cases.exists()


def test_an_editable_experiment_form_keeps_bidi_characters_as_they_are(
    client: Any,
) -> None:
    # the change form was shown with [U+202E] marks, which a save wrote back
    user = User.objects.create_superuser("alice-bidi", "a@example.com", "pw")
    client.force_login(user)
    prompt = PromptTemplateFactory.create(namespace="demo", key="bidi-notes")
    add_sections(prompt, SectionDefinitionFactory.create())
    dataset = Dataset.objects.create(name="ds-bidi")
    experiment = Experiment.objects.create(
        name="safe\u202ename",
        dataset=dataset,
        prompt_ref=prompt.ref,
        targets=["draft"],
        created_by=user,
    )
    url = reverse("admin:sessions_app_experiment_change", args=[experiment.pk])

    page = client.get(url).content.decode()

    assert "[U+202E]" not in page
    assert 'value="safe\u202ename"' in page


def test_dataset_and_grader_lists_show_bidi_controls_as_marks(
    admin_client: Any,
) -> None:
    Dataset.objects.create(name="qa\u202eds")
    Grader.objects.create(name="qa\u202eg", kind="tool_called", config={"tool": "x"})
    for name in ("dataset", "grader"):
        html = admin_client.get(
            reverse(f"admin:sessions_app_{name}_changelist")
        ).content.decode()
        assert "\u202e" not in html and "[U+202E]" in html, name


def test_a_datasets_creation_time_is_shown_not_typed(admin_client):
    """The lists order by when a row was created: the admin shows it and
    ignores a posted one (0001-01-01 listed a dataset before today's)."""
    from django.utils import timezone

    before = timezone.now()
    response = admin_client.post(
        reverse("admin:sessions_app_dataset_add"),
        {
            "name": "dated",
            "description": "",
            "created_at_0": "0001-01-01",
            "created_at_1": "00:00:00",
            "cases-TOTAL_FORMS": "0",
            "cases-INITIAL_FORMS": "0",
        },
    )
    assert response.status_code == 302, response.content[:2000]
    assert Dataset.objects.get(name="dated").created_at >= before
    change = admin_client.get(
        reverse(
            "admin:sessions_app_dataset_change",
            args=[Dataset.objects.get(name="dated").pk],
        )
    )
    assert 'name="created_at_0"' not in change.content.decode()
