"""The planning tool suite: a session-scoped todo list the model maintains.

Four tools share one state slice (``PLAN_STATE_KEY``) holding an immutable
``Plan``:

- ``planning_setup_plan`` creates (or replaces) the plan, numbering its
  steps from 1;
- ``planning_add_step`` appends steps to the active plan;
- ``planning_update_step`` renames a step or changes its status; when every
  step is done the plan becomes ``completed``;
- ``planning_read_plan`` returns the plan as it stands.

The plan is a reduction of events (seed 003): each changing tool publishes
its params (``SetupPlan``, ``AddStep``, ``UpdateStep``) through its context,
and the reducers in ``PLAN_REDUCERS`` (which ``PlanningToolsSection``
registers, and the handlers name too, so the tools work in any section)
compute the new ``Plan``; publishing a ``Plan`` replaces it outright.

Step ids come from the plan's ``next_step_id`` counter, so an id is never
handed out twice within a plan. Once a plan is completed, adding and updating
are refused; ``planning_setup_plan`` starts a new plan (ids restart at 1).

Every invalid event raises ``ToolValidationError`` in its reducer before the
state is written; the executor reports it as "Tool validation failed:
<message>" and rolls the session back, so a failed call never leaves a
half-changed plan (nor delivers its events).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable
from typing import Any, Final, Literal

from .context import ToolContext
from .errors import ToolValidationError
from .reducers import Reducer
from .results import ToolResult
from .sections import EnabledPredicate, MarkdownSection
from .session import SessionProtocol
from .tools import Tool, ToolExample

StepStatus = Literal["pending", "in_progress", "done"]
PlanStatus = Literal["active", "completed"]

PLAN_STATE_KEY: Final = "plan"
MAX_TEXT_LENGTH: Final = 500


def _plural(count: int, noun: str = "step") -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


@dataclasses.dataclass(frozen=True, slots=True)
class PlanStep:
    """One work item of a plan."""

    step_id: int = dataclasses.field(
        metadata={"description": "Stable integer id of the step (never reused)."}
    )
    title: str = dataclasses.field(
        metadata={"description": "Short summary of the work (<= 500 characters)."}
    )
    status: StepStatus = dataclasses.field(
        metadata={"description": "Progress: pending, in_progress or done."}
    )

    def render(self) -> str:
        return f"{self.step_id} [{self.status}] {self.title}"


@dataclasses.dataclass(frozen=True, slots=True)
class Plan:
    """An immutable snapshot of the session's plan.

    ``next_step_id`` is the id the next added step receives; it only grows,
    which is what keeps step ids unique for the life of the plan.
    """

    objective: str = dataclasses.field(
        metadata={"description": "What the plan should accomplish."}
    )
    status: PlanStatus = dataclasses.field(
        metadata={"description": "Lifecycle state: active or completed."}
    )
    steps: tuple[PlanStep, ...] = dataclasses.field(
        metadata={"description": "The steps, in the order they were added."}
    )
    next_step_id: int = dataclasses.field(
        metadata={"description": "Id the next added step will receive."}
    )

    def __post_init__(self) -> None:
        highest = max((step.step_id for step in self.steps), default=0)
        if self.next_step_id <= highest:
            raise ValueError(
                f"next_step_id ({self.next_step_id}) must be greater than every "
                f"step id (highest: {highest})."
            )
        ids = [step.step_id for step in self.steps]
        if len(ids) != len(set(ids)):
            raise ValueError("Plan step ids must be unique.")

    def render(self) -> str:
        lines = [f"Objective: {self.objective}", f"Status: {self.status}", ""]
        if self.steps:
            lines.extend(step.render() for step in self.steps)
        else:
            lines.append("<no steps>")
        return "\n".join(lines)

    def step(self, step_id: int) -> PlanStep | None:
        return next((s for s in self.steps if s.step_id == step_id), None)


# --------------------------------------------------------------------------
# Tool parameters
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class SetupPlan:
    """Create or replace the plan."""

    objective: str = dataclasses.field(
        metadata={"description": "What the plan should accomplish (<= 500 chars)."}
    )
    initial_steps: tuple[str, ...] = dataclasses.field(
        default=(),
        metadata={"description": "Optional step titles to start the plan with."},
    )


@dataclasses.dataclass(frozen=True, slots=True)
class AddStep:
    """Append steps to the active plan."""

    steps: tuple[str, ...] = dataclasses.field(
        metadata={"description": "Titles of the steps to append (at least one)."}
    )


@dataclasses.dataclass(frozen=True, slots=True)
class UpdateStep:
    """Change the title and/or status of one step."""

    step_id: int = dataclasses.field(
        metadata={"description": "Id of the step to update."}
    )
    title: str | None = dataclasses.field(
        default=None,
        metadata={"description": "New title, or null to keep the current one."},
    )
    status: Literal["pending", "in_progress", "done"] | None = dataclasses.field(
        default=None,
        metadata={
            "description": "New status (pending, in_progress or done), or null to "
            "keep the current one."
        },
    )


@dataclasses.dataclass(frozen=True, slots=True)
class ReadPlan:
    """Read the current plan (no arguments)."""


# --------------------------------------------------------------------------
# Validation helpers
# --------------------------------------------------------------------------


def _normalise_text(value: str, label: str) -> str:
    stripped = value.strip()
    if not stripped:
        raise ToolValidationError(f"{label} must not be empty.")
    if len(stripped) > MAX_TEXT_LENGTH:
        raise ToolValidationError(f"{label} must be <= {MAX_TEXT_LENGTH} characters.")
    return stripped


def _normalise_titles(titles: Iterable[str]) -> tuple[str, ...]:
    return tuple(_normalise_text(title, "Title") for title in titles)


def current_plan(session: SessionProtocol) -> Plan | None:
    """The plan stored in ``session``, if there is one."""
    value = session.get_state(PLAN_STATE_KEY)
    return value if isinstance(value, Plan) else None


def _require_plan(plan: Plan | None) -> Plan:
    if plan is None:
        raise ToolValidationError("No plan is currently initialised.")
    return plan


def _require_active(plan: Plan) -> None:
    if plan.status != "active":
        raise ToolValidationError(
            f"Plan must be active. Current status: {plan.status}."
        )


# --------------------------------------------------------------------------
# Reducers: the plan is a reduction of these events
# --------------------------------------------------------------------------


def reduce_plan(current: Plan | None, event: Plan) -> Plan:
    """A published ``Plan`` replaces the current one."""
    del current
    return event


def reduce_setup_plan(current: Plan | None, event: SetupPlan) -> Plan:
    """Create or replace the plan; steps are numbered from 1."""
    del current
    objective = _normalise_text(event.objective, "Objective")
    titles = _normalise_titles(event.initial_steps)
    steps = tuple(
        PlanStep(step_id=index, title=title, status="pending")
        for index, title in enumerate(titles, start=1)
    )
    return Plan(
        objective=objective, status="active", steps=steps, next_step_id=len(steps) + 1
    )


def reduce_add_step(current: Plan | None, event: AddStep) -> Plan:
    """Append steps to the active plan with fresh ids."""
    plan = _require_plan(current)
    _require_active(plan)
    titles = _normalise_titles(event.steps)
    if not titles:
        raise ToolValidationError("Provide at least one step to add.")
    highest = max((step.step_id for step in plan.steps), default=0)
    first_id = max(plan.next_step_id, highest + 1)
    added = tuple(
        PlanStep(step_id=step_id, title=title, status="pending")
        for step_id, title in enumerate(titles, start=first_id)
    )
    return Plan(
        objective=plan.objective,
        status="active",
        steps=plan.steps + added,
        next_step_id=first_id + len(added),
    )


def reduce_update_step(current: Plan | None, event: UpdateStep) -> Plan:
    """Rename a step and/or change its status; all done completes the plan."""
    plan = _require_plan(current)
    _require_active(plan)
    title = _normalise_text(event.title, "Title") if event.title is not None else None
    if title is None and event.status is None:
        raise ToolValidationError("Provide a new title or status to update a step.")
    step = plan.step(event.step_id)
    if step is None:
        raise ToolValidationError(f"Step {event.step_id} does not exist.")
    replacement = dataclasses.replace(
        step,
        title=title if title is not None else step.title,
        status=event.status if event.status is not None else step.status,
    )
    steps = tuple(replacement if s.step_id == step.step_id else s for s in plan.steps)
    status: PlanStatus = (
        "completed" if all(s.status == "done" for s in steps) else "active"
    )
    return dataclasses.replace(plan, steps=steps, status=status)


PLAN_REDUCERS: Final[tuple[Reducer, ...]] = (
    Reducer(Plan, PLAN_STATE_KEY, reduce_plan),
    Reducer(SetupPlan, PLAN_STATE_KEY, reduce_setup_plan),
    Reducer(AddStep, PLAN_STATE_KEY, reduce_add_step),
    Reducer(UpdateStep, PLAN_STATE_KEY, reduce_update_step),
)


# --------------------------------------------------------------------------
# Handlers: each publishes its params as the event and returns the new plan
# --------------------------------------------------------------------------


def _publish(context: ToolContext, event: object) -> Plan:
    # The reducers are named here too, so the tools work in any section.
    context.publish(event, reducers=PLAN_REDUCERS)
    return _require_plan(current_plan(context.session))


def setup_plan(params: SetupPlan, *, context: ToolContext) -> ToolResult[Plan]:
    """Create or replace the plan; steps are numbered from 1."""
    plan = _publish(context, params)
    return ToolResult.ok(plan, f"Plan initialised with {_plural(len(plan.steps))}.")


def add_step(params: AddStep, *, context: ToolContext) -> ToolResult[Plan]:
    """Append steps to the active plan with fresh ids."""
    plan = _publish(context, params)
    return ToolResult.ok(plan, f"Added {_plural(len(params.steps))}.")


def update_step(params: UpdateStep, *, context: ToolContext) -> ToolResult[Plan]:
    """Rename a step and/or change its status; all done completes the plan."""
    plan = _publish(context, params)
    return ToolResult.ok(plan, f"Step {params.step_id} updated.")


def read_plan(params: ReadPlan, *, context: ToolContext) -> ToolResult[Plan]:
    """Return the current plan unchanged (nothing is published)."""
    del params
    plan = _require_plan(current_plan(context.session))
    if plan.steps:
        message = f"Retrieved the current plan with {_plural(len(plan.steps))}."
    else:
        message = "Retrieved the current plan (no steps recorded)."
    return ToolResult.ok(plan, message)


# --------------------------------------------------------------------------
# Tools
# --------------------------------------------------------------------------

_EXAMPLE_OBJECTIVE = "Publish the catalog migration guide"


def _example_plan(*steps: tuple[str, StepStatus]) -> Plan:
    return Plan(
        objective=_EXAMPLE_OBJECTIVE,
        status="active",
        steps=tuple(
            PlanStep(step_id=index, title=title, status=status)
            for index, (title, status) in enumerate(steps, start=1)
        ),
        next_step_id=len(steps) + 1,
    )


def planning_tools() -> tuple[Tool[Any, Any], ...]:
    """The four planning tools, in a stable order."""
    setup: Tool[SetupPlan, Plan] = Tool(
        name="planning_setup_plan",
        description=(
            "Create or replace the session plan with an objective and optional "
            "initial steps. Step ids start at 1."
        ),
        handler=setup_plan,
        accepts_overrides=False,
        examples=(
            ToolExample(
                description="Start a plan with an objective and two steps.",
                input=SetupPlan(
                    objective=_EXAMPLE_OBJECTIVE,
                    initial_steps=("Audit existing guides", "List breaking changes"),
                ),
                output=_example_plan(
                    ("Audit existing guides", "pending"),
                    ("List breaking changes", "pending"),
                ),
            ),
        ),
    )
    add: Tool[AddStep, Plan] = Tool(
        name="planning_add_step",
        description=(
            "Append one or more steps to the active plan. New steps are pending "
            "and get fresh ids."
        ),
        handler=add_step,
        accepts_overrides=False,
        examples=(
            ToolExample(
                description="Append a follow-up step to a one-step plan.",
                input=AddStep(steps=("Review with the team",)),
                output=_example_plan(
                    ("Audit existing guides", "done"),
                    ("Review with the team", "pending"),
                ),
            ),
        ),
    )
    update: Tool[UpdateStep, Plan] = Tool(
        name="planning_update_step",
        description=(
            "Change the title and/or status of one step by id. The plan completes "
            "when every step is done."
        ),
        handler=update_step,
        accepts_overrides=False,
        examples=(
            ToolExample(
                description="Mark step 1 as in progress.",
                input=UpdateStep(step_id=1, status="in_progress"),
                output=_example_plan(
                    ("Audit existing guides", "in_progress"),
                    ("List breaking changes", "pending"),
                ),
            ),
        ),
    )
    read: Tool[ReadPlan, Plan] = Tool(
        name="planning_read_plan",
        description="Return the current plan: objective, status and every step.",
        handler=read_plan,
        accepts_overrides=False,
        read_only=True,
    )
    return (setup, add, update, read)


# --------------------------------------------------------------------------
# Strategies and the section
# --------------------------------------------------------------------------


class PlanningStrategy(enum.Enum):
    """How the model should think while it works through the plan."""

    REACT = "react"
    PLAN_ACT_REFLECT = "plan_act_reflect"
    GOAL_DECOMPOSE_ROUTE_SYNTHESISE = "goal_decompose_route_synthesise"

    @property
    def guidance(self) -> str:
        return _GUIDANCE[self]


_GUIDANCE: Final[dict[PlanningStrategy, str]] = {
    PlanningStrategy.REACT: (
        "Work in a reason-act-observe loop: think about the next step, call one "
        "tool, read what it returned, then decide what to do next. Keep the plan "
        "current as you go: mark a step in_progress when you start it and done "
        "as soon as its observation confirms it."
    ),
    PlanningStrategy.PLAN_ACT_REFLECT: (
        "Plan first, then act, then reflect: outline every step with "
        "planning_setup_plan before calling any other tool, work through the "
        "steps in order, and after each one update its status and reflect on "
        "whether the remaining steps still make sense, adding or renaming steps "
        "when they do not."
    ),
    PlanningStrategy.GOAL_DECOMPOSE_ROUTE_SYNTHESISE: (
        "Restate the goal in your own words and use it as the objective. "
        "Decompose it into concrete, independent sub-problems, one step each. "
        "Route every sub-problem to the tool best suited to it, and when all "
        "steps are done, synthesise their results into one coherent answer."
    ),
}

PLANNING_INSTRUCTIONS: Final = """\
Use the planning tools for multi-step or stateful work; skip them for a task
that takes a single step.

- Start with `planning_setup_plan` to record the objective and the first steps.
- Append steps with `planning_add_step` when new work appears.
- Change a step's title or status with `planning_update_step`
  (pending, in_progress, done).
- Check progress with `planning_read_plan`.
- Step ids are integers (1, 2, 3 ...) and are never reused.
- The plan completes when every step is done; after that it cannot be changed,
  so call `planning_setup_plan` to start a new one."""


def planning_template(strategy: PlanningStrategy) -> str:
    """The section body for ``strategy``: fixed instructions plus its guidance."""
    return f"{PLANNING_INSTRUCTIONS}\n\n{strategy.guidance}".replace("$", "$$")


class PlanningToolsSection(MarkdownSection):
    """A prompt section that documents and exposes the planning tools."""

    def __init__(
        self,
        *,
        strategy: PlanningStrategy = PlanningStrategy.REACT,
        key: str = "planning",
        title: str = "Planning Tools",
        enabled: bool | EnabledPredicate = True,
    ) -> None:
        self.strategy = PlanningStrategy(strategy)
        super().__init__(
            title=title,
            key=key,
            template=planning_template(self.strategy),
            enabled=enabled,
            tools=planning_tools(),
            accepts_overrides=False,
        )

    def reducers(self) -> tuple[Reducer, ...]:
        """The plan's reducers (``Plan``, ``SetupPlan``, ``AddStep``,
        ``UpdateStep``), registered for every handler of the prompt."""
        return PLAN_REDUCERS


__all__ = [
    "MAX_TEXT_LENGTH",
    "PLANNING_INSTRUCTIONS",
    "PLAN_REDUCERS",
    "PLAN_STATE_KEY",
    "AddStep",
    "Plan",
    "PlanStatus",
    "PlanStep",
    "PlanningStrategy",
    "PlanningToolsSection",
    "ReadPlan",
    "SetupPlan",
    "StepStatus",
    "UpdateStep",
    "add_step",
    "current_plan",
    "planning_template",
    "planning_tools",
    "read_plan",
    "reduce_add_step",
    "reduce_plan",
    "reduce_setup_plan",
    "reduce_update_step",
    "setup_plan",
    "update_step",
]
