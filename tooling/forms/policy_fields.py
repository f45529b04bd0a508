"""The typed fields of the policy form: tools picked from the catalog's, and
the rows of dependencies, call limits and approval rules; and the fieldsets
that show them, one per kind (``policy_fieldsets``). Each field's value
is the part of the config it writes, canonical (``policy_configs``); its
errors name the row (and line) they concern, every row's at once."""

from __future__ import annotations

import abc
import re
from collections.abc import Iterable, Mapping
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from tooling.models import HostedToolDefinition, PolicyDefinition, ToolDefinition
from tooling.runtime.limits import MAX_CALLS_PER_RUN
from tooling.runtime.planning import planning_tools

from .editors import (
    Column,
    PostedRows,
    RowsWidget,
    cell_list,
    cell_text,
    changed,
    quoted,
    rows_to_read,
    text_problem,
)
from .policy_conditions import condition_lines, parse_conditions
from .policy_configs import KIND_FIELDS, same

NOT_A_TOOL = (
    "{value} is not a tool of the catalog (a function, hosted or planning tool); "
    "a tool not in the catalog yet is named in the JSON (Edit the configuration: "
    "as JSON)."
)

ChoiceList = list[tuple[str, Any]]
Kind = PolicyDefinition.Kind
_WHOLE = re.compile(r"-?[0-9]{1,12}")


def tool_choices(also: Iterable[str] = ()) -> ChoiceList:
    """The names a policy may govern, grouped: the catalog's function tools,
    hosted tools and the planning tools, then ``also`` (names a saved config
    holds that the catalog does not)."""
    functions = sorted(ToolDefinition.objects.values_list("name", flat=True))
    hosted = sorted(HostedToolDefinition.objects.values_list("name", "kind"))
    planning = [tool.name for tool in planning_tools()]
    known = {*functions, *(name for name, _ in hosted), *planning}
    missing = sorted(set(also) - known)
    groups: ChoiceList = [
        ("Function tools", [(name, name) for name in functions]),
        ("Hosted tools", [(name, f"{name} ({kind})") for name, kind in hosted]),
        ("Planning tools", [(name, name) for name in planning]),
    ]
    if missing:
        groups.append(
            (
                "Not in the catalog",
                [(name, f"{name} (not in the catalog)") for name in missing],
            )
        )
    return [group for group in groups if group[1]]


def choice_names(choices: ChoiceList) -> set[str]:
    return {name for _, group in choices for name, _ in group}


class ToolNamesField(forms.MultipleChoiceField):
    """Tools picked from the catalog's; the value sorted, without repeats."""

    default_error_messages = {
        "invalid_choice": NOT_A_TOOL.replace("{value}", "'%(value)s'")
    }

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("widget", forms.SelectMultiple(attrs={"size": 8}))
        super().__init__(**kwargs)

    def clean(self, value: Any) -> list[str]:
        return sorted(set(super().clean(value)))

    def has_changed(self, initial: Any, data: Any) -> bool:
        return sorted(set(initial or [])) != sorted(set(data or []))


class PolicyRowsField(forms.Field, abc.ABC):
    """A rows editor whose value is a part of a policy's config. Subclasses
    say what a row means (``parse_row``), what the rows of a value are
    (``rows_of``) and the value of the parsed rows (``value_of``)."""

    columns: tuple[tuple[str, str], ...] = ()
    row_word = "Row"

    def __init__(self, *, widgets: Mapping[str, forms.Widget], **kwargs: Any) -> None:
        columns = [Column(name, label, widgets[name]) for name, label in self.columns]
        kwargs.setdefault("required", False)
        super().__init__(widget=RowsWidget(columns, extra=2), **kwargs)
        self.tool_names: set[str] = set()

    def set_tools(self, choices: ChoiceList) -> None:
        """The catalog's tools, for the tool columns' selects."""
        self.tool_names = choice_names(choices)
        assert isinstance(self.widget, RowsWidget)
        for column in self.widget.columns:
            if isinstance(column.widget, forms.Select):
                blank = (
                    [] if column.widget.allow_multiple_selected else [("", "---------")]
                )
                column.widget.choices = [*blank, *choices]

    def check_tool(self, where: str, name: str) -> str | None:
        if name in self.tool_names:
            return None
        return f"{where}: " + NOT_A_TOOL.replace("{value}", quoted(name))

    @abc.abstractmethod
    def rows_of(self, value: Any) -> list[dict[str, Any]]:
        """The rows that show ``value`` (a saved part of the config, not
        empty), each ``{column: cell}``."""

    @abc.abstractmethod
    def parse_row(self, where: str, row: dict[str, Any]) -> Any:
        """What ``row`` (named ``where`` in errors) means, for ``value_of``;
        a ``ValidationError`` naming every problem of the row."""

    @abc.abstractmethod
    def value_of(self, items: list[Any]) -> Any:
        """The value of the rows parsed to ``items`` (none: the empty value);
        a ``ValidationError`` naming every problem between rows."""

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, PostedRows):
            return value
        rows = PostedRows(self.rows_of(value) if value else [])
        return rows

    def to_python(self, value: Any) -> Any:
        rows = value if isinstance(value, PostedRows) else PostedRows()
        items, problems = [], []
        for number, row in rows_to_read(rows):
            try:
                items.append(self.parse_row(f"{self.row_word} {number}", row))
            except ValidationError as error:
                problems.extend(error.messages)
        if problems:
            raise ValidationError(problems)
        return self.value_of(items)

    def has_changed(self, initial: Any, data: Any) -> bool:
        return changed(self, initial, data, empty=self.value_of([]), same=same)


def _tool_select() -> forms.Select:
    return forms.Select(attrs={"class": "rows-editor-tool"})


class DependencyRowsField(PolicyRowsField):
    """``{"deploy": ["build", "test"]}``: a row per tool that must wait."""

    columns = (("tool", "Tool"), ("after", "Runs only after"))

    def __init__(self, **kwargs: Any) -> None:
        widgets = {
            "tool": _tool_select(),
            "after": forms.SelectMultiple(attrs={"size": 5}),
        }
        super().__init__(widgets=widgets, **kwargs)

    def rows_of(self, value: Any) -> list[dict[str, Any]]:
        return [{"tool": tool, "after": list(after)} for tool, after in value.items()]

    def parse_row(self, where: str, row: dict[str, Any]) -> Any:
        tool, after = cell_text(row, "tool"), cell_list(row, "after")
        problems = []
        if not tool:
            problems.append(f"{where}: pick the tool that must wait.")
        elif not after:
            problems.append(f"{where}: pick the tools {quoted(tool)} runs only after.")
        for name in [tool, *after] if tool else after:
            problem = self.check_tool(where, name)
            if problem:
                problems.append(problem)
        if problems:
            raise ValidationError(problems)
        return where, tool, sorted(set(after))

    def value_of(self, items: list[Any]) -> Any:
        value: dict[str, list[str]] = {}
        problems = []
        for where, tool, after in items:
            if tool in value:
                problems.append(
                    f"{where}: {quoted(tool)} has a row already; give all it runs "
                    "after in one row."
                )
            value[tool] = after
        if problems:
            raise ValidationError(problems)
        return dict(sorted(value.items()))


class LimitRowsField(PolicyRowsField):
    """``{"deploy": 1}``: a row per limited tool."""

    columns = (("tool", "Tool"), ("limit", "Most calls per run"))

    def __init__(self, **kwargs: Any) -> None:
        number = forms.NumberInput(
            attrs={"min": 0, "max": MAX_CALLS_PER_RUN, "step": 1}
        )
        super().__init__(widgets={"tool": _tool_select(), "limit": number}, **kwargs)

    def rows_of(self, value: Any) -> list[dict[str, Any]]:
        return [{"tool": tool, "limit": str(limit)} for tool, limit in value.items()]

    def parse_row(self, where: str, row: dict[str, Any]) -> Any:
        tool, text = cell_text(row, "tool"), cell_text(row, "limit").strip()
        problems = []
        if not tool:
            problems.append(f"{where}: pick the tool to limit.")
        else:
            problems.extend(filter(None, [self.check_tool(where, tool)]))
        limit: int | None = None
        if not text:
            problems.append(f"{where}: give the most calls per run (0: never).")
        elif not _WHOLE.fullmatch(text) or not 0 <= int(text) <= MAX_CALLS_PER_RUN:
            problems.append(
                f"{where}: the most calls per run must be a whole number from 0 to "
                f"{MAX_CALLS_PER_RUN}, not {quoted(text)}."
            )
        else:
            limit = int(text)
        if problems:
            raise ValidationError(problems)
        return where, tool, limit

    def value_of(self, items: list[Any]) -> Any:
        value: dict[str, int] = {}
        problems = []
        for where, tool, limit in items:
            if tool in value:
                problems.append(f"{where}: {quoted(tool)} has a row already.")
            value[tool] = limit
        if problems:
            raise ValidationError(problems)
        return dict(sorted(value.items()))


class RuleRowsField(PolicyRowsField):
    """``[{"tool": "deploy", "when": {"environment": "production"}}]``: a row
    per rule, its conditions a line each."""

    columns = (("tool", "Tool"), ("when", "Only when (argument = value, a line each)"))
    row_word = "Rule"

    def __init__(self, **kwargs: Any) -> None:
        conditions = forms.Textarea(
            attrs={"rows": 3, "cols": 44, "placeholder": "environment = production"}
        )
        super().__init__(widgets={"tool": _tool_select(), "when": conditions}, **kwargs)

    def rows_of(self, value: Any) -> list[dict[str, Any]]:
        return [
            {"tool": rule["tool"], "when": condition_lines(rule.get("when") or {})}
            for rule in value
        ]

    def parse_row(self, where: str, row: dict[str, Any]) -> Any:
        tool, text = cell_text(row, "tool"), cell_text(row, "when")
        problems = []
        when: dict[str, Any] = {}
        if not tool:
            problems.append(f"{where}: pick the tool that needs approval.")
        else:
            problems.extend(filter(None, [self.check_tool(where, tool)]))
        problem = text_problem(text)
        if problem:
            problems.append(f"{where}: {problem}")
        elif len(text) > 20_000:
            problems.append(f"{where}: at most 20000 characters of conditions.")
        else:
            try:
                when = parse_conditions(text, where)
            except ValidationError as error:
                problems.extend(error.messages)
        if problems:
            raise ValidationError(problems)
        return {"tool": tool, "when": when} if when else {"tool": tool}

    def value_of(self, items: list[Any]) -> Any:
        return list(items)


KIND_DESCRIPTIONS = {
    Kind.SEQUENTIAL_DEPENDENCY: "A tool runs only after each tool of its row has "
    "succeeded in the run.",
    Kind.READ_BEFORE_WRITE: "A write tool may overwrite an existing file only "
    "after a read tool has read it. No tools picked: read_file reads, write_file "
    "and edit_file write.",
    Kind.CALL_LIMIT: "The most calls a run may make to each tool (0: never). Only "
    "tools the product runs: function tools, apply_patch, a local shell "
    "(a prompt's hosted tool limits limit the others).",
    Kind.APPROVAL: "Calls that match a rule wait for a human decision before they "
    "run (docs/approvals.md).",
}


def policy_fieldsets() -> list[tuple[str | None, dict[str, Any]]]:
    """The policy admin's fieldsets: the policy, each kind's fields (shown by
    ``policy_kind.js`` only while that kind is chosen), the JSON."""
    kinds = [
        (
            str(label),
            {
                "classes": ["policy-kind", f"kind-{kind}"],
                "fields": list(KIND_FIELDS[kind]),
                "description": KIND_DESCRIPTIONS[Kind(kind)],
            },
        )
        for kind, label in Kind.choices
    ]
    return [
        (None, {"fields": ["name", "kind", "description", "config_source"]}),
        *kinds,
        (
            "Configuration as JSON",
            {
                "classes": ["policy-json"],
                "fields": ["config"],
                "description": "Read only when the configuration is edited as "
                "JSON: for what the fields cannot show.",
            },
        ),
    ]
