"""The function tool form's examples editor: a row per example (a
description, the input and the output as JSON, each with its own errors),
every row's error at once.

It still takes JSON posted under the field's own name (a script, the form
before the editor), and shows a value it cannot show as rows as JSON in one
text area, said so: nothing saved is lost or rewritten unseen.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from tooling.storable_json import (
    TOO_DEEP,
    DuplicateKey,
    StorableJSONFormField,
    StorableJSONValidator,
    json_error_message,
    loads,
)

from .editors import (
    MAX_ROWS,
    Column,
    EditorJSONField,
    PostedRows,
    RowsWidget,
    cell_text,
    changed,
    one_line,
    rows_to_read,
    text_problem,
    validate_no_bidi,
)
from .policy_configs import same

_EXAMPLE_KEYS = ("description", "input", "output")
_TOO_LONG = "Enter valid JSON: a number has too many digits."


class Numbered(list[Any]):
    """Examples, each with the number of its row as shown (for errors)."""

    numbers: tuple[int, ...] = ()


def examples_shown(value: Any) -> bool:
    """Whether rows can show ``value``: a list of at most ``MAX_ROWS`` objects
    with no key but description (a one-line text), input and output."""
    return (
        isinstance(value, list)
        and len(value) <= MAX_ROWS
        and all(
            isinstance(item, Mapping)
            and set(item) <= set(_EXAMPLE_KEYS)
            and isinstance(item.get("description", ""), str)
            and one_line(item.get("description", ""))
            for item in value
        )
    )


def canonical_examples(value: Any) -> list[dict[str, Any]] | None:
    """The examples the rows write for what ``value`` means (a missing input
    or output is ``{}``, the description without surrounding spaces), or
    ``None`` when rows cannot show them."""
    if not examples_shown(value):
        return None
    return [
        {
            "description": item.get("description", "").strip(),
            "input": item.get("input", {}),
            "output": item.get("output", {}),
        }
        for item in value
    ]


def same_examples(before: Any, after: Any) -> bool:
    """Whether two example lists say the same (``canonical_examples``)."""
    if same(before, after):
        return True
    shown = canonical_examples(before)
    return shown is not None and same(shown, canonical_examples(after))


def _pretty(value: Any) -> str:
    indent = 2 if isinstance(value, dict | list) and value else None
    return json.dumps(value, ensure_ascii=False, indent=indent)


_json_checks = StorableJSONValidator()


def _cell_json(where: str, text: str, problems: list[str]) -> Any:
    """The JSON of one cell (blank: ``{}``); its errors, naming ``where``,
    added to ``problems``."""
    if not text.strip():
        return {}
    try:
        value = loads(text)
    except json.JSONDecodeError as error:
        problems.append(f"{where}: {json_error_message(error)}")
        return None
    except DuplicateKey as error:
        problems.append(f"{where}: Enter valid JSON: {error}.")
        return None
    except ValueError as error:  # too deep, or a number too long
        message = str(error) if str(error) == TOO_DEEP else _TOO_LONG
        problems.append(f"{where}: {message}")
        return None
    try:
        _json_checks(value)
        validate_no_bidi(value)
    except ValidationError as error:
        problems.extend(f"{where}: {message}" for message in error.messages)
        return None
    return value


def read_example_rows(
    value: PostedRows,
) -> list[tuple[int, dict[str, Any], list[str]]]:
    """Each posted example row as ``(number as shown, example, its
    problems)``: its description's text and its cells' JSON, each error
    naming the row."""
    rows = []
    for number, row in rows_to_read(value):
        where = f"Example {number}"
        problems: list[str] = []
        description = cell_text(row, "description").strip()
        problem = text_problem(description)
        if problem:
            problems.append(f"{where}, description: {problem}")
        given = {
            part: _cell_json(f"{where}, {part}", cell_text(row, part), problems)
            for part in ("input", "output")
        }
        rows.append((number, {"description": description, **given}, problems))
    return rows


def readable_examples(value: Any) -> list[tuple[int, Any]]:
    """``(number, example)`` of the posted rows that read without a problem
    while another row's do not: they are still checked against the handler,
    so that one submit shows every example's error."""
    if not isinstance(value, PostedRows):
        return []
    try:
        rows = read_example_rows(value)
    except ValidationError:  # too many rows: the field says so
        return []
    return [(number, example) for number, example, problems in rows if not problems]


class ExamplesField(EditorJSONField):
    """``[{"description", "input", "output"}]`` from a row per example, or
    from JSON text."""

    default_validators = [*StorableJSONFormField.default_validators, validate_no_bidi]

    def __init__(self, **kwargs: Any) -> None:
        area = {"rows": 5, "cols": 40, "class": "rows-editor-json"}
        columns = [
            Column(
                "description",
                "Description",
                forms.TextInput(attrs={"class": "vTextField rows-editor-wide"}),
            ),
            Column("input", "Input (JSON)", forms.Textarea(attrs=area)),
            Column("output", "Output (JSON)", forms.Textarea(attrs=area)),
        ]
        widget = RowsWidget(
            columns,
            extra=1,
            add_label="Add an example",
            raw_fallback=True,
            stacked="Example",
        )
        widget.raw_note = (
            "These examples cannot be shown as rows: they are edited as JSON, "
            '[{"description": ..., "input": {...}, "output": {...}}].'
        )
        kwargs["widget"] = widget
        super().__init__(**kwargs)

    def to_python(self, value: Any) -> Any:
        if not isinstance(value, PostedRows):
            return super().to_python(value)
        rows = read_example_rows(value)
        problems = [problem for _, _, found in rows for problem in found]
        if problems:
            raise ValidationError(problems)
        examples = Numbered(example for _, example, _ in rows)
        examples.numbers = tuple(number for number, _, _ in rows)
        return examples

    def has_changed(self, initial: Any, data: Any) -> bool:
        return changed(self, initial, data, empty=[], same=same_examples)

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, PostedRows):
            return value
        if value is None:
            value = []
        if examples_shown(value):
            return PostedRows(
                {
                    "description": item.get("description", ""),
                    "input": _pretty(item.get("input", {})),
                    "output": _pretty(item.get("output", {})),
                }
                for item in value
            )
        return super().prepare_value(value)


def numbered(examples: Any) -> Iterable[tuple[int, Any]]:
    """``(number as shown, example)`` for each of ``examples``."""
    numbers = getattr(examples, "numbers", ()) or range(1, len(examples) + 1)
    return zip(numbers, examples, strict=True)
