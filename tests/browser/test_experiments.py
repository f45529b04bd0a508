"""Issue 27, tried as a new user would, in a real browser: the demo
experiment (ten research questions against demo/research with and without its
domain filter) shows the citation grader's pass rate per revision, marks the
cases where they differ, and leads from a case to both sessions compared and
to the two revisions' diff."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from sessions_app.experiments.demo import seed_demo_experiment
from tooling.demo import seed_demo_catalog

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_demo_experiment_shows_pass_rates_and_differences(
    ui: Any, shot: Any
) -> None:
    seed_demo_catalog()
    experiment = seed_demo_experiment(User.objects.get(username="operator"))
    assert experiment is not None

    ui.go("/audit/experiments/")
    ui.click_and_load(ui.find("#experiments a"))
    assert ui.text("#experiment-status") == "Finished"
    header = ui.text("#experiment-summary thead")
    assert "cites only the allowed domains" in header
    filtered, unfiltered = ui.find_all("#experiment-summary tbody tr")
    assert "100% (10/10)" in filtered.text and "0% (0/10)" in unfiltered.text
    differing = ui.find_all("#experiment-cases tbody tr.differs")
    assert len(differing) == 10
    assert "outside the domains: www.djangoproject.com" in differing[0].text
    shot("experiment-results")

    ui.click_and_load(differing[0].find_element("css selector", "a.compare-case"))
    assert "Revision" in ui.text("#compare-facts")
    ui.go(f"/audit/experiments/{experiment.pk}/")
    ui.click_and_load(ui.find("#targets-diff"))
    assert "config.allowed_domains" in ui.text("#compare-hosted_tools")
