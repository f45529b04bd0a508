"""The demo experiment (``manage.py seed_demo``): ten research questions run
against two revisions of ``demo/research``, with and without its web search's
domain filter; the citation grader tells them apart."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from sessions_app.models import Dataset, DatasetCase, Experiment, Grader
from tooling import releases
from tooling.models import HostedToolDefinition, PromptTemplate

from .running import run_experiment

DATASET = "research-questions"
EXPERIMENT = "Domain filter on vs off"
DOMAINS = ["docs.python.org", "docs.djangoproject.com"]
QUESTIONS = [
    "Which Django release is the current LTS?",
    "How do I add a database index in a Django model?",
    "What does Python's functools.cache do?",
    "How are Django signals dispatched?",
    "What is a Python context manager?",
    "How do I write a custom Django management command?",
    "What does select_for_update do in Django?",
    "How does Python's asyncio event loop schedule tasks?",
    "How do Django migrations detect model changes?",
    "What is the difference between a list and a tuple in Python?",
]
GRADERS = [
    (
        "cites only the allowed domains",
        Grader.Kind.CITATIONS_IN_DOMAINS,
        {"domains": DOMAINS},
        "Every citation is on the Python or Django documentation.",
    ),
    (
        "counts its words",
        Grader.Kind.TOOL_CALLED,
        {"tool": "count_words"},
        "The answer's words were counted before replying.",
    ),
    (
        "answers in JSON",
        Grader.Kind.OUTPUT_SCHEMA,
        {"schema": {"type": "object", "required": ["answer", "sources"]}},
        "The output holds an answer and its sources.",
    ),
]


def _revisions(template: PromptTemplate) -> tuple[str, str]:
    """The prompt's revision as seeded (filtered) and one without the filter,
    frozen from the catalog edited for a moment (nothing of it is kept)."""
    web = HostedToolDefinition.objects.get(name="web_search")
    filtered = releases.draft_revision(template).hash
    with transaction.atomic():
        config = dict(web.config)
        HostedToolDefinition.objects.filter(pk=web.pk).update(
            config={k: v for k, v in config.items() if k != "allowed_domains"}
        )
        unfiltered = releases.draft_revision(template).hash
        HostedToolDefinition.objects.filter(pk=web.pk).update(config=config)
    return filtered, unfiltered


def seed_demo_experiment(user: Any) -> Experiment | None:
    """Create and run the demo experiment (once; ``None`` if it exists)."""
    if Experiment.objects.filter(name=EXPERIMENT).exists():
        return None
    dataset, created = Dataset.objects.get_or_create(
        name=DATASET,
        defaults={
            "description": "Ten questions for demo/research.",
            "created_by": user,
        },
    )
    if created or not dataset.cases.exists():
        DatasetCase.objects.bulk_create(
            DatasetCase(dataset=dataset, position=index + 1, params={"question": q})
            for index, q in enumerate(QUESTIONS)
        )
    graders = [
        Grader.objects.get_or_create(
            name=name, defaults={"kind": kind, "config": config, "description": text}
        )[0]
        for name, kind, config, text in GRADERS
    ]
    template = PromptTemplate.objects.get(namespace="demo", key="research")
    filtered, unfiltered = _revisions(template)
    experiment = Experiment.objects.create(
        name=EXPERIMENT,
        dataset=dataset,
        prompt_ref=template.ref,
        targets=[filtered, unfiltered],
        created_by=user,
    )
    experiment.graders.set(graders)
    run_experiment(experiment, user=user)
    return experiment
