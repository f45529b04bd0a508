"""Forms whose values are not UTF-8 (wink_project/form_encoding.py): refused
where a view would read them, and at no cost to a request that never reaches a
view (a hostile review: 2.6 MB of "&" cost half a second of CPU before CSRF)."""

from __future__ import annotations

import pytest
from django.test import Client

from wink_project.form_encoding import utf8_form

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("body", "utf8"),
    [
        (b"a=1&b=caf%C3%A9", True),
        (b"a=%F0%9F%99%82+x", True),
        (b"a=%ED%A0%80", False),  # a lone surrogate
        (b"a=caf%E9", False),  # Latin-1
        (b"%FF=1", False),  # in a name
        (b"a=\xff", False),  # raw
        (b"", True),
    ],
)
def test_utf8_form_reads_names_and_values(body: bytes, utf8: bool):
    assert utf8_form(body) is utf8


def test_a_request_refused_before_a_view_is_refused_for_that_first():
    # CSRF refuses it before the form is decoded: a 403, not this 400
    response = Client(enforce_csrf_checks=True).post(
        "/accounts/login/",
        b"username=%FF&password=x",
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 403
    missing = Client().post(
        "/no/such/page/", b"a=%FF", content_type="application/x-www-form-urlencoded"
    )
    assert missing.status_code == 404


def test_a_form_of_too_many_fields_is_left_to_django():
    body = b"username=%FF" + b"&x=1" * 20_000
    response = Client().post(
        "/accounts/login/", body, content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 400
    assert b"not UTF-8" not in response.content  # Django's TooManyFieldsSent


def test_a_signed_in_user_is_refused_on_a_page_that_knows_them(admin_client):
    response = admin_client.post(
        "/accounts/login/",
        b"username=%FF",
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 400
    text = response.content.decode()
    assert "The form held text that is not UTF-8" in text
    assert 'id="bad-request"' not in text  # the reason, not the generic guess
