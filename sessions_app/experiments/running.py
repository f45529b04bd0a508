"""Running an experiment and grading its runs.

``run_experiment`` starts one session per case and target, each a normal
governed run of whoever started the experiment (inline without a broker, on
workers otherwise), and records it (``ExperimentRun``, with the parameters it
ran with); a start refused (a bad case, a parameter over a run start's size
limit, a trust level the user may not start at, a spent budget) is recorded
with why. ``grade_finished`` grades the runs whose sessions have finished and
are not graded yet, each claimed first (a conditional update) so that grades
at the same moment start a model grader's session once, and marks the
experiment finished when none is left: the results page and the API call it,
so results fill in as runs end.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db.models import Q
from django.utils import timezone

from sessions_app import access
from sessions_app.costs.budgets import DailyBudgetExceeded
from sessions_app.models import (
    AgentSession,
    Dataset,
    DatasetCase,
    Experiment,
    ExperimentRun,
    Grader,
)
from sessions_app.runs.starting import start_session
from tooling.forms.editors import quoted
from tooling.models import CatalogRevision, PromptLabel
from tooling.param_size import too_large

from . import grading

# Runs one experiment may start (cases x targets): each is a billed session.
MOST_RUNS = 1000
VIEW_DATASET = "sessions_app.view_dataset"
LABEL = "label:"
# What an experiment runs against: the draft, a label or a revision's hash.
TARGET = re.compile(r"^(draft|label:[a-z][a-z0-9_-]{0,31}|[0-9a-f]{64})$")


def target_kwargs(target: str) -> dict[str, Any]:
    """A target (``draft``, ``label:<name>`` or a hash) as ``start_session``'s
    ``label`` / ``revision``."""
    if target.startswith(LABEL):
        return {"label": target.removeprefix(LABEL)}
    return {"revision": target}


def unknown_targets(prompt_ref: str, targets: list[str]) -> list[str]:
    """Why each of ``targets`` names nothing of prompt ``prompt_ref`` (a label
    it does not have, a hash that is none of its revisions): refused where an
    experiment is entered, not found out run by run (``draft`` always is)."""
    namespace, _, key = prompt_ref.partition("/")
    labels = set(
        PromptLabel.objects.filter(
            prompt__namespace=namespace, prompt__key=key
        ).values_list("name", flat=True)
    )
    hashes = [target for target in targets if not target.startswith(LABEL)]
    revisions = set(
        CatalogRevision.objects.filter(
            pk__in=[h for h in hashes if h != "draft"], prompt_ref=prompt_ref
        ).values_list("pk", flat=True)
    )
    problems = []
    for target in targets:
        if target.startswith(LABEL):
            label = target.removeprefix(LABEL)
            if label not in labels:
                problems.append(f"{prompt_ref} has no label '{label}'.")
        elif target != "draft" and target not in revisions:
            problems.append(f"No revision of {prompt_ref} has the hash '{target}'.")
    return problems


def check_size(dataset: Dataset, targets: list[str]) -> None:
    """Refuse an experiment of ``dataset`` against ``targets`` that would start
    more than ``MOST_RUNS`` runs: before it is created, and again as it runs
    (cases may have been added since)."""
    planned = dataset.cases.count() * len(targets)
    if planned > MOST_RUNS:
        raise ValidationError(
            f"This experiment would start {planned} runs; at most {MOST_RUNS} per "
            "experiment (split the dataset or name fewer targets)."
        )


def run_experiment(experiment: Experiment, *, user: Any) -> list[ExperimentRun]:
    """Start every case against every target (module docstring); once: a
    second call finds the experiment no longer new and starts nothing."""
    check_size(experiment.dataset, experiment.targets)
    if not experiment.dataset.cases.exists():  # it would "finish" at once
        raise ValidationError(
            f"The dataset {quoted(experiment.dataset.name)} has no cases: add "
            "some before running an experiment of it."
        )
    claimed = Experiment.objects.filter(
        pk=experiment.pk, status=Experiment.Status.NEW
    ).update(status=Experiment.Status.RUNNING)
    if not claimed:
        raise ValidationError(ALREADY_RUN)
    experiment.status = Experiment.Status.RUNNING
    runs = []
    for case in experiment.dataset.cases.all():
        for target in experiment.targets:
            run = ExperimentRun(
                experiment=experiment, case=case, target=target, params=case.params
            )
            run.error = _refused(user, case) or ""
            if not run.error:
                try:
                    run.session = start_session(
                        prompt_ref=experiment.prompt_ref,
                        params=case.params,
                        user=user,
                        trust_level=case.trust_level,
                        **target_kwargs(target),
                    )
                except ValidationError as error:
                    run.error = " ".join(error.messages)
                except DailyBudgetExceeded as error:
                    run.error = error.message
            run.save()
            runs.append(run)
    grade_finished(experiment, user=user, model_graders=True)
    return runs


def _refused(user: Any, case: DatasetCase) -> str | None:
    """Why ``user`` may not start ``case``, before its run is started: a trust
    level above theirs, or a parameter over a run start's size limit (a case
    stored before cases were held to it)."""
    if not access.may_start_at(user, case.trust_level):
        return f"You may not start sessions at trust level '{case.trust_level}'."
    # (params not an object: start_session refuses them, saying so)
    oversized = too_large(case.params) if isinstance(case.params, dict) else None
    return None if oversized is None else f"The parameter {oversized}"


def may_change(user: Any, experiment: Experiment) -> bool:
    """Its author, while new: what it runs is what its author chose (it runs
    under their name), and a run experiment keeps what it ran."""
    return (
        experiment.status == Experiment.Status.NEW
        and access.is_user(user)
        and experiment.created_by_id == user.pk
    )


def is_runner(user: Any, experiment: Experiment) -> bool:
    """Its author, who may start sessions: who runs and grades it."""
    return experiment.created_by_id == user.pk and access.may_start(user)


def may_run(user: Any, experiment: Experiment) -> bool:
    """Its author, who may start sessions and read its dataset, while new."""
    return (
        experiment.status == Experiment.Status.NEW
        and is_runner(user, experiment)
        and user.has_perm(VIEW_DATASET)
    )


def may_grade(user: Any, experiment: Experiment) -> bool:
    """Its author, who may start sessions (model graders start some), while
    runs wait for grades."""
    return experiment.status == Experiment.Status.RUNNING and is_runner(
        user, experiment
    )


def not_gradable(experiment: Experiment) -> str | None:
    """Why an experiment's runner cannot grade it now, or ``None``."""
    if experiment.status == Experiment.Status.NEW:
        return "This experiment has not been run yet: nothing to grade."
    if experiment.status == Experiment.Status.FINISHED:
        return "Every run of this experiment is graded: nothing is left to grade."
    return None


# What its runner is told running it again (a double click, another tab).
ALREADY_RUN = "This experiment has already been run."


FINISHED = (*AgentSession.TERMINAL, AgentSession.Status.AWAITING_APPROVAL)


def grade_finished(
    experiment: Experiment, *, user: Any, model_graders: bool = False
) -> int:
    """Grade the runs whose sessions ended (or wait for an approval: graded
    as such, again once they end); how many were graded. Model-graded
    graders start sessions of their own, billed to ``user``: only when asked
    (``model_graders``: the run itself, or its author's *Grade now*), never
    when someone merely reads the results; until then they stay pending.

    Each run is claimed before it is graded (``_claim``), so grades at the same
    moment (two *Grade now*, a page read) grade it one at a time, each from
    the grades the last one wrote: a model grader's session is started once,
    and then looked at again. A run another grade holds is left to it."""
    graders = list(experiment.graders.all())
    pending = list(
        ExperimentRun.objects.filter(experiment=experiment, session__isnull=False)
        .filter(graded_at__isnull=True)
        .select_related("case")
    )
    graded = 0
    sessions = AgentSession.objects.in_bulk(
        [run.session_id for run in pending if run.session_id is not None]
    )
    lease = _grading_lease(graders, model_graders)
    for run in pending:
        session = sessions.get(run.session_id) if run.session_id else None
        if session is None:
            # purged (purge_sessions) before it was graded: it had ended, and
            # nothing is left to grade; its grades so far are what it keeps
            graded += ExperimentRun.objects.filter(
                pk=run.pk, graded_at__isnull=True
            ).update(graded_at=timezone.now())
            continue
        if session.status not in FINISHED:
            continue
        claim = _claim(run, lease)
        if claim is None:
            continue
        try:
            verdicts = {
                grader.name: grading.grade(
                    grader,
                    session,
                    run.case,
                    user,
                    (run.grades or {}).get(grader.name),
                    start=model_graders,
                )
                for grader in graders
            }
        except BaseException:
            # released at once: the next grade need not wait out the lease
            ExperimentRun.objects.filter(pk=run.pk, grading_until=claim).update(
                grading_until=None
            )
            raise
        grades = {name: verdict.as_dict() for name, verdict in verdicts.items()}
        final = session.status in AgentSession.TERMINAL and not any(
            verdict.pending for verdict in verdicts.values()
        )
        # written, and the claim released, only by the claim's holder
        graded += ExperimentRun.objects.filter(
            pk=run.pk, graded_at__isnull=True, grading_until=claim
        ).update(
            grades=grades,
            graded_at=timezone.now() if final else None,
            grading_until=None,
        )
    left = ExperimentRun.objects.filter(
        experiment=experiment, session__isnull=False, graded_at__isnull=True
    ).exists()
    if not left and experiment.status != Experiment.Status.FINISHED:
        Experiment.objects.filter(pk=experiment.pk).update(
            status=Experiment.Status.FINISHED
        )
        experiment.status = Experiment.Status.FINISHED
    return graded


# How long a grade may hold a run: the deterministic graders are quick (a
# pattern searches for half a second at most); a model grader's run, inline
# without a broker, may take a run's whole time limit.
GRADING_SECONDS = 60


def _grading_lease(graders: list[Grader], model_graders: bool) -> timedelta:
    """How long a claim holds: long enough for every grader of a run to
    finish, each model grader's session (when they start) within a run's time
    limit and its grace."""
    starting = (
        sum(grader.kind == Grader.Kind.MODEL_GRADED for grader in graders)
        if model_graders
        else 0
    )
    per_run = int(settings.WINK_RUN_MAX_SECONDS) + int(
        settings.WINK_RUN_TIME_LIMIT_GRACE
    )
    return timedelta(seconds=GRADING_SECONDS + starting * per_run)


def _claim(run: ExperimentRun, lease: timedelta) -> datetime | None:
    """Claim ``run`` for a grade until ``now + lease`` (the claim's token: only
    its holder writes the grades and releases it), and read its grades as the
    last grade left them; ``None`` when another grade holds it or it was
    graded meanwhile. A claim past its deadline is of a grade whose process
    died (or raised) before it wrote: it is taken again, and that grade is
    done again (a model grader's session it started and never recorded is
    left unread)."""
    now = timezone.now()
    until = now + lease
    claimed = (
        ExperimentRun.objects.filter(pk=run.pk, graded_at__isnull=True)
        .filter(Q(grading_until__isnull=True) | Q(grading_until__lte=now))
        .update(grading_until=until)
    )
    if not claimed:
        return None
    run.grades = (
        ExperimentRun.objects.filter(pk=run.pk).values_list("grades", flat=True).get()
    )
    return until
