"""An experiment's results: pass rates per grader and target, cost and
latency per target, and each case's runs side by side (with the cases where
the targets' grades differ marked), as the page, the API and the CSV show
them."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from collections import defaultdict
from decimal import Decimal
from typing import Any

from sessions_app.models import AgentSession, Experiment, ExperimentRun
from tooling.spreadsheet import csv_cell


@dataclasses.dataclass(frozen=True)
class TargetSummary:
    target: str
    runs: int
    finished: int
    paused: int
    failed_to_start: int
    pass_rates: dict[str, float | None]  # grader -> share of decided runs that passed
    passed: dict[str, int]
    decided: dict[str, int]
    cost: Decimal
    mean_seconds: float | None

    @property
    def rates_shown(self) -> list[tuple[str, str]]:
        """Each grader's pass rate as text (``—``: nothing decided yet), in
        the graders' order, with passed / decided."""
        return [
            (
                name,
                "—"
                if value is None
                else f"{value:.0%} ({self.passed.get(name, 0)}/{self.decided[name]})",
            )
            for name, value in self.pass_rates.items()
        ]


@dataclasses.dataclass(frozen=True)
class CaseRow:
    case_id: int
    position: int
    params: Any
    runs: list[ExperimentRun | None]  # in the experiment's target order
    differs: bool

    @property
    def compared(self) -> tuple[Any, Any] | None:
        """The first two targets' sessions, when both ran."""
        if len(self.runs) < 2 or self.runs[0] is None or self.runs[1] is None:
            return None
        first, second = self.runs[0].session_id, self.runs[1].session_id
        return (first, second) if first and second else None


@dataclasses.dataclass(frozen=True)
class Results:
    experiment: Experiment
    graders: list[str]
    targets: list[TargetSummary]
    cases: list[CaseRow]


def _seconds(session: AgentSession | None) -> float | None:
    if session is None or session.started_at is None or session.finished_at is None:
        return None
    return (session.finished_at - session.started_at).total_seconds()


def _no_session(run: ExperimentRun) -> str:
    """What the CSV says of a run without its session row."""
    if run.session_id is not None:
        return "purged"  # ended, then removed by purge_sessions
    return f"not started: {run.error}"


def results_of(experiment: Experiment) -> Results:
    graders = list(experiment.graders.values_list("name", flat=True))
    runs = list(
        ExperimentRun.objects.filter(experiment=experiment).select_related("case")
    )
    sessions = {
        session.pk: session
        for session in AgentSession.objects.filter(
            pk__in=[run.session_id for run in runs if run.session_id]
        ).only("pk", "status", "cost", "started_at", "finished_at", "turns")
    }
    for run in runs:
        found = sessions.get(run.session_id) if run.session_id else None
        run.session_row = found  # type: ignore[attr-defined]
    by_target: dict[str, list[ExperimentRun]] = defaultdict(list)
    by_case: dict[int, dict[str, ExperimentRun]] = defaultdict(dict)
    for run in runs:
        by_target[run.target].append(run)
        by_case[run.case_id][run.target] = run
    summaries = [
        _summary(target, by_target[target], graders) for target in experiment.targets
    ]
    cases = []
    for case_id, per_target in by_case.items():
        case = next(iter(per_target.values())).case
        verdicts = {
            tuple(
                ((run.grades or {}).get(name) or {}).get("passed") for name in graders
            )
            for run in per_target.values()
        }
        ordered = [per_target.get(target) for target in experiment.targets]
        ran = next(iter(per_target.values()))  # the parameters it ran with
        cases.append(
            CaseRow(case_id, case.position, ran.params, ordered, len(verdicts) > 1)
        )
    cases.sort(key=lambda row: (row.position, row.case_id))
    return Results(experiment, graders, summaries, cases)


def _summary(
    target: str, runs: list[ExperimentRun], graders: list[str]
) -> TargetSummary:
    passed: dict[str, int] = defaultdict(int)
    decided: dict[str, int] = defaultdict(int)
    seconds = []
    cost = Decimal(0)
    finished = paused = 0
    for run in runs:
        session = getattr(run, "session_row", None)
        if session is not None:
            cost += session.cost or Decimal(0)
            if session.status in AgentSession.TERMINAL:
                finished += 1
            elif session.status == AgentSession.Status.AWAITING_APPROVAL:
                paused += 1
            if (value := _seconds(session)) is not None:
                seconds.append(value)
        elif run.session_id is not None:  # purged (purge_sessions): it had ended
            finished += 1
        for name in graders:
            verdict = ((run.grades or {}).get(name) or {}).get("passed")
            if verdict is not None:
                decided[name] += 1
                passed[name] += bool(verdict)
    return TargetSummary(
        target=target,
        runs=len(runs),
        finished=finished,
        paused=paused,
        failed_to_start=sum(1 for run in runs if run.session_id is None),
        pass_rates={
            name: (passed[name] / decided[name]) if decided[name] else None
            for name in graders
        },
        passed=dict(passed),
        decided=dict(decided),
        cost=cost,
        mean_seconds=round(sum(seconds) / len(seconds), 3) if seconds else None,
    )


def csv_of(results: Results) -> str:
    """One row per case and target: its session, status, cost, seconds and
    each grader's verdict and detail."""
    out = io.StringIO()
    writer = csv.writer(out)
    header = ["case", "params", "target", "session", "status", "cost_usd", "seconds"]
    for name in results.graders:
        header += [f"{name} passed", f"{name} detail"]
    writer.writerow([csv_cell(name) for name in header])
    for row in results.cases:
        for target, run in zip(results.experiment.targets, row.runs, strict=True):
            if run is None:
                continue
            session = getattr(run, "session_row", None)
            line = [
                row.position,
                json.dumps(row.params, ensure_ascii=False, sort_keys=True),
                target,
                run.session_id or "",
                session.status if session else _no_session(run),
                session.cost if session else "",
                _seconds(session) if session else "",
            ]
            for name in results.graders:
                grade = (run.grades or {}).get(name) or {}
                line += [grade.get("passed", ""), grade.get("detail", "")]
            writer.writerow([csv_cell(value) for value in line])
    return out.getvalue()
