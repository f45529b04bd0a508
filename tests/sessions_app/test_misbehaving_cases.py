"""The misbehaving provider's cases that also run on a worker
(``misbehaving_cases.py``), run inline: the reference outcome the worker run
(``tests/integration/test_misbehaving_worker.py``) must match."""

from __future__ import annotations

import json

import pytest

from tests.sessions_app.misbehaving import RELEASE, ScriptedProvider, read_pages, run
from tests.sessions_app.misbehaving_cases import CASE_NAME, CASES, Case
from tooling.demo import seed_demo_catalog

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_case_ends_as_expected_inline(case: Case, api_client, admin_client):
    seed_demo_catalog()
    # As the worker's client: two retries.
    provider = ScriptedProvider(*case.replies, max_retries=2)

    session = run(RELEASE, provider, params=case.params)

    assert session.attempts == 1
    for request in provider.requests:  # the worker's server finds the case so
        assert CASE_NAME.findall(json.dumps(request)) == [case.name]
    pages = read_pages(session, api_client, admin_client)
    case.check(session, provider.requests, pages)
    if case.inline is not None:
        case.inline(session, provider.requests, pages)
