"""Adding cases to a dataset (``sessions_app.experiments.cases``): what a hostile
QA round found. Positions that overflowed (a 500, and the dataset could never
take a case again), values of the wrong type read as empty, a dataset too
large for any experiment (and for its admin page), concurrent imports at one
position, old-Mac line endings, and messages that hid why."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, connections
from django.urls import reverse
from rest_framework.test import APIClient

from sessions_app.experiments.cases import MOST_CASES, import_cases
from sessions_app.models import Dataset, DatasetCase
from sessions_app.models.experiments import MOST_POSITION
from tests.sessions_app.factories import AgentSessionFactory, UserFactory

pytestmark = pytest.mark.django_db


def cases_at(dataset: Dataset) -> list[int]:
    return list(dataset.cases.order_by("position").values_list("position", flat=True))


def many(dataset: Dataset, count: int) -> None:
    DatasetCase.objects.bulk_create(
        DatasetCase(dataset=dataset, position=index + 1) for index in range(count)
    )


def writer() -> User:
    user = UserFactory.create(username="writer", is_staff=True)
    user.groups.add(Group.objects.get(name="Runners"))
    user.user_permissions.add(
        *Permission.objects.filter(
            codename__in=[
                "add_dataset",
                "view_dataset",
                "change_dataset",
                "add_datasetcase",
                "change_datasetcase",
            ]
        )
    )
    return User.objects.get(pk=user.pk)


# -- positions -------------------------------------------------------------------


def test_the_api_refuses_a_position_past_the_largest():
    api = APIClient()
    api.force_login(writer())
    body = {"name": "d", "cases": [{"params": {}, "position": MOST_POSITION + 1}]}
    response = api.post("/api/datasets/", body, format="json")
    assert response.status_code == 400, response.content
    assert "position" in str(response.json()["errors"])
    assert not Dataset.objects.exists()


def test_a_dataset_at_the_largest_position_says_so_instead_of_failing(client):
    """Its next case's position overflowed (SQLite: OverflowError, a 500 on
    both the import and the session page's Add to dataset)."""
    user = writer()
    dataset = Dataset.objects.create(name="full")
    DatasetCase.objects.create(dataset=dataset, position=MOST_POSITION)
    with pytest.raises(ValidationError, match="would go past 2147483647"):
        import_cases(dataset, b"params\n{}\n", "c.csv")
    session = AgentSessionFactory.create(created_by=user, params={"q": "x"})
    client.force_login(user)
    added = client.post(
        reverse("sessions_app:session-add-to-dataset", args=[session.pk]),
        {"dataset": dataset.pk},
        follow=True,
    )
    assert added.status_code == 200
    assert "would go past 2147483647" in added.content.decode()
    assert cases_at(dataset) == [MOST_POSITION]


# -- how many ----------------------------------------------------------------------


def test_a_dataset_holds_at_most_the_cases_an_experiment_can_run(admin_client):
    api = APIClient()
    api.force_login(writer())
    cases: list[dict[str, Any]] = [{"params": {}}] * (MOST_CASES + 1)
    response = api.post("/api/datasets/", {"name": "d", "cases": cases}, format="json")
    assert response.status_code == 400
    assert f"at most {MOST_CASES} cases" in str(response.json()["errors"]["cases"])

    dataset = Dataset.objects.create(name="nearly")
    many(dataset, MOST_CASES - 1)
    with pytest.raises(ValidationError, match=r"holds 999, and 2 would be added"):
        import_cases(dataset, b"params\n{}\n{}\n", "c.csv")
    assert len(import_cases(dataset, b"params\n{}\n", "c.csv")) == 1

    # the admin's inline: a case added past the limit is refused
    url = reverse("admin:sessions_app_dataset_change", args=[dataset.pk])
    page = admin_client.get(url)
    formset = page.context["inline_admin_formsets"][0].formset
    data: dict[str, Any] = {"name": "nearly", "description": ""}
    prefix = formset.prefix
    forms = list(formset.forms)
    data[f"{prefix}-TOTAL_FORMS"] = str(len(forms) + 1)
    data[f"{prefix}-INITIAL_FORMS"] = str(formset.initial_form_count())
    for index, form in enumerate(forms):
        for name, field in form.fields.items():
            value = form.initial.get(name, field.initial)
            if name == "params":
                value = "{}"
            data[f"{prefix}-{index}-{name}"] = "" if value is None else value
    added = len(forms)
    data[f"{prefix}-{added}-params"] = '{"new": 1}'
    data[f"{prefix}-{added}-trust_level"] = "standard"
    data[f"{prefix}-{added}-position"] = "5000"
    refused = admin_client.post(url, data)
    assert refused.status_code == 200
    assert f"A dataset holds at most {MOST_CASES} cases" in refused.content.decode()
    assert dataset.cases.count() == MOST_CASES


def test_the_admins_limit_counts_the_cases_held_not_the_forms_posted(admin_client):
    """Posting only a new form (INITIAL_FORMS=0) went past the limit: the
    forms posted were counted (found by a hostile review)."""
    dataset = Dataset.objects.create(name="full")
    many(dataset, MOST_CASES)
    url = reverse("admin:sessions_app_dataset_change", args=[dataset.pk])
    prefix = "cases"
    data = {
        "name": "full",
        "description": "",
        f"{prefix}-TOTAL_FORMS": "1",
        f"{prefix}-INITIAL_FORMS": "0",
        f"{prefix}-0-params": '{"new": 1}',
        f"{prefix}-0-trust_level": "standard",
        f"{prefix}-0-position": "5000",
    }
    refused = admin_client.post(url, data)
    assert refused.status_code == 200
    assert f"these would be {MOST_CASES + 1}" in refused.content.decode()
    assert dataset.cases.count() == MOST_CASES


def test_the_admins_limit_locks_the_dataset_while_it_counts(admin_client):
    """An import meanwhile waits for the admin's save (PostgreSQL: the
    dataset's row is locked, as ``append_cases`` locks it)."""
    if connection.vendor == "sqlite":
        pytest.skip(
            "SQLite has no row locks (its IMMEDIATE transactions serialise "
            "writers); PostgreSQL takes SELECT ... FOR UPDATE"
        )
    from django.db import connection as db
    from django.test.utils import CaptureQueriesContext

    dataset = Dataset.objects.create(name="locked")
    url = reverse("admin:sessions_app_dataset_change", args=[dataset.pk])
    data = {
        "name": "locked",
        "description": "",
        "cases-TOTAL_FORMS": "1",
        "cases-INITIAL_FORMS": "0",
        "cases-0-params": '{"new": 1}',
        "cases-0-trust_level": "standard",
        "cases-0-position": "1",
    }
    with CaptureQueriesContext(db) as queries:
        assert admin_client.post(url, data).status_code == 302
    locks = [
        query["sql"]
        for query in queries.captured_queries
        if "FOR UPDATE" in query["sql"] and "sessions_app_dataset" in query["sql"]
    ]
    assert locks, [query["sql"] for query in queries.captured_queries]


# -- what a row says -------------------------------------------------------------


@pytest.mark.parametrize(
    ("item", "named"),
    [
        ({"expected_output": 0}, "expected_output must be text"),
        ({"notes": False}, "notes must be text"),
        ({"notes": []}, "notes must be text"),
        ({"expected_output": {}, "notes": 1}, "expected_output and notes must be"),
        ({"trust_level": 0}, "trust_level must be one of"),
        ({"trust_level": False}, "trust_level must be one of"),
    ],
)
def test_a_json_value_of_the_wrong_type_is_refused_not_read_as_empty(
    item: dict[str, Any], named: str
):
    dataset = Dataset.objects.create(name="d")
    body = f'[{{"params": {{}}}}, {{"params": {{"q": "a"}}, {str(item)[1:-1]}}}]'
    body = body.replace("'", '"').replace("False", "false")
    with pytest.raises(ValidationError, match=f"Item 2: {named}"):
        import_cases(dataset, body.encode(), "c.json")
    assert not dataset.cases.exists()


def test_null_and_empty_values_take_the_defaults():
    dataset = Dataset.objects.create(name="d")
    body = b'[{"params": {}, "expected_output": null, "notes": "", "trust_level": ""}]'
    (case,) = import_cases(dataset, body, "c.json")
    assert (case.expected_output, case.notes, case.trust_level) == ("", "", "standard")


def test_a_number_too_large_for_a_float_is_named():
    dataset = Dataset.objects.create(name="d")
    with pytest.raises(ValidationError) as refused:
        import_cases(dataset, b'[{"params": {"n": 1e400}}]', "c.json")
    assert refused.value.messages == [
        "The file is not valid JSON: A number is too large (a float is at most "
        "about 1.8e308)."
    ]


def test_a_csv_with_old_mac_line_endings_is_read():
    dataset = Dataset.objects.create(name="d")
    body = b'params,notes\r"{""q"": 1}",one\r"{""q"": 2}","two\rlines"\r'
    added = import_cases(dataset, body, "c.csv")
    assert [(case.params, case.notes) for case in added] == [
        ({"q": 1}, "one"),
        ({"q": 2}, "two\rlines"),
    ]


def test_an_unknown_column_message_names_the_first_five():
    dataset = Dataset.objects.create(name="d")
    header = "params," + ",".join(f"c{index}" for index in range(5000))
    with pytest.raises(ValidationError) as refused:
        import_cases(dataset, header.encode() + b"\n", "c.csv")
    (message,) = refused.value.messages
    assert "'c0', 'c1', 'c2', 'c3', 'c4' and 4995 more" in message
    assert "c5'" not in message


def test_add_to_dataset_says_which_field_was_refused(client):
    user = writer()
    dataset = Dataset.objects.create(name="d")
    session = AgentSessionFactory.create(created_by=user, params={"q": "x"})
    client.force_login(user)
    url = reverse("sessions_app:session-add-to-dataset", args=[session.pk])
    nul = client.post(
        url, {"dataset": dataset.pk, "expected_output": "ok\x00x"}, follow=True
    )
    assert "Expected output: Null characters are not allowed." in nul.content.decode()
    long = client.post(
        url, {"dataset": dataset.pk, "expected_output": "x" * 100_001}, follow=True
    )
    assert "Expected output: Ensure this value has at most 100000" in (
        long.content.decode()
    )
    none = client.post(url, {"dataset": ""}, follow=True)
    assert "Dataset: Pick a dataset." in none.content.decode()
    assert not dataset.cases.exists()


# -- at the same time --------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_imports_arriving_together_never_share_a_position():
    if connection.vendor == "sqlite":
        pytest.skip(
            "SQLite's shared in-memory test database locks tables between "
            "threads (its IMMEDIATE transactions serialise writers in "
            "production); PostgreSQL locks the dataset's row"
        )
    dataset = Dataset.objects.create(name="together")
    DatasetCase.objects.create(dataset=dataset, position=1)
    body = b"params\n" + b"{}\n" * 50
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []

    def add() -> None:
        try:
            barrier.wait(timeout=30)
            import_cases(Dataset.objects.get(pk=dataset.pk), body, "c.csv")
        except BaseException as error:  # reported below
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=add) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors
    assert cases_at(dataset) == list(range(1, 202))


def test_an_import_page_shows_why_a_file_is_refused(client):
    user = writer()
    dataset = Dataset.objects.create(name="d")
    client.force_login(user)
    url = reverse("admin:sessions_app_dataset_import", args=[dataset.pk])
    upload = SimpleUploadedFile("c.json", b'[{"params": {}, "notes": false}]')
    page = client.post(url, {"file": upload})
    assert page.status_code == 200
    assert "Item 1: notes must be text." in page.content.decode()
    # a file's bytes are the file's: its own message, not the form's 400
    latin = SimpleUploadedFile("c.csv", b"params,notes\n{},caf\xe9\n")
    page = client.post(url, {"file": latin})
    assert page.status_code == 200
    assert "The file is not UTF-8 text." in page.content.decode()
