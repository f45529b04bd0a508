"""The pieces the catalog's structured editors share: a table of rows an
operator fills in (``RowsWidget``: policy rules, dependencies and limits, a
tool's examples), and the checks every value typed into them passes.

A rows editor posts ``<name>-<index>-<column>`` per cell and
``<name>-<index>-remove`` per row; its blank rows are there to fill without
JavaScript, and ``rows_editor.js`` adds more. A fully blank or removed row is
left out. A field using it decides what a row means (``parse_row``) and names
the row (its number, from 1, as shown) in every error, all rows at once.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from django import forms
from django.core.exceptions import ValidationError
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from tooling.runtime.text import BIDI_CONTROLS, storable_text
from tooling.storable_json import (
    UNSTORABLE,
    StorableJSONFormField,
    text_matches,
    walk_json,
)

from .fields import widget_id

#: The most rows an editor takes (an example list, rules, limits): far more
#: than a catalog entry needs, few enough that a hostile post stays cheap.
#: Blank and removed rows do not count; a post of more than ``MAX_POSTED_ROWS``
#: rows in all is refused unread.
MAX_ROWS = 200
MAX_POSTED_ROWS = 4 * MAX_ROWS
TOO_MANY_ROWS = f"At most {MAX_ROWS} rows."
#: Bidirectional controls (``BIDI_CONTROLS``, Trojan Source): a value holding
#: one may show as another (``production`` followed by U+202E ...); no catalog
#: value needs them.
BIDI = "Must not contain bidirectional control characters"


def quoted(value: Any, limit: int = 60) -> str:
    """``value`` for a message: its ``repr`` (control characters escaped),
    cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def text_problem(text: str) -> str | None:
    """What makes typed ``text`` unfit to store or to show, or ``None``."""
    if storable_text(text)[1]:
        return UNSTORABLE
    found = BIDI_CONTROLS.search(text)
    if found:
        return f"{BIDI} (U+{ord(found.group()):04X})."
    return None


def one_line(text: str) -> bool:
    """Whether a text box can show ``text``: a browser drops the line breaks
    of a text input's value, so a text holding one is shown otherwise."""
    return "\n" not in text and "\r" not in text


def bidi_paths(value: Any) -> list[str]:
    """The dotted paths in the JSON value ``value`` whose text (a key or a
    string) holds a bidirectional control."""
    return [
        path or "the value itself"
        for item, path in walk_json(value)
        if text_matches(item, lambda text: bool(BIDI_CONTROLS.search(text)))
    ]


def bidi_problem(value: Any) -> str | None:
    """What makes the JSON value ``value`` unfit for the catalog beyond what
    every catalog JSON field refuses (``storable_json``): bidirectional
    controls, naming where (at most five places)."""
    paths = bidi_paths(value)
    if not paths:
        return None
    where = ", ".join(BIDI_CONTROLS.sub("\ufffd", path) for path in paths[:5])
    return f"{BIDI} (at {where})."


def validate_no_bidi(value: Any) -> None:
    """A JSON field's validator: ``bidi_problem`` as an error."""
    problem = bidi_problem(value)
    if problem:
        raise ValidationError(problem, code="bidi")


def validate_no_bidi_text(value: Any) -> None:
    """A text field's validator for bidirectional controls alone (a
    ``CharField`` refuses NUL itself): ``Must not contain ... (U+202E).``"""
    found = BIDI_CONTROLS.search(value) if isinstance(value, str) else None
    if found:
        raise ValidationError(f"{BIDI} (U+{ord(found.group()):04X}).", code="bidi")


def validate_text(value: Any) -> None:
    """A text field's validator: ``text_problem`` as an error."""
    if isinstance(value, str):
        problem = text_problem(value)
        if problem:
            raise ValidationError(problem, code="unstorable")


def raw_json_area(
    name: str, text: str, base_id: str, note: str, *, rows: int
) -> SafeString:
    """An editor's value as JSON ``text`` in one text area named like the
    field, ``note`` above it: for a value the editor cannot show."""
    area = forms.Textarea(attrs={"rows": rows, "cols": 80, "class": "vLargeTextField"})
    return format_html(
        '<p class="rows-editor-raw-note">{}</p>{}',
        note,
        area.render(name, text, {"id": base_id}),
    )


def changed(
    field: forms.Field,
    initial: Any,
    data: Any,
    *,
    empty: Any,
    same: Callable[[Any, Any], bool],
) -> bool:
    """An editor field's ``has_changed``: whether the value ``data`` makes is
    not the same (``same``) as ``initial`` (either missing: ``empty``). A post
    the field refuses has changed it."""
    try:
        value = field.to_python(data)
    except ValidationError:
        return True
    return not same(initial or empty, value or empty)


class PostedRows(list[dict[str, Any]]):
    """An editor's rows as posted (or as shown), each ``{column: value}``;
    ``present``: the editor was on the posted form; ``truncated``: more rows
    were posted than ``MAX_POSTED_ROWS``."""

    present: bool = False
    truncated: bool = False


class EditorJSONField(StorableJSONFormField):
    """A JSON field edited in boxes or rows, whose widget posts a ``posted``
    (JSON text instead, for a value they cannot show): a form shown again
    shows the editor's post as it was posted."""

    posted: ClassVar[type] = PostedRows

    def bound_data(self, data: Any, initial: Any) -> Any:
        if isinstance(data, self.posted):
            return data
        return super().bound_data(data, initial)


@dataclasses.dataclass
class Column:
    name: str
    label: str
    widget: forms.Widget


_INDEX = re.compile(r"[0-9]{1,4}")


class RowsWidget(forms.Widget):
    """A table of rows of ``columns``, ``extra`` blank rows after them, a
    *Remove* box per row and (with JavaScript) an *Add a row* button.

    ``render`` takes the rows (``PostedRows``); given text instead, it shows
    that text in one text area named like the field (``raw_note`` above it):
    the field's JSON, when the rows cannot show it."""

    def __init__(
        self,
        columns: Sequence[Column],
        *,
        extra: int = 2,
        add_label: str = "Add a row",
        raw_fallback: bool = False,
        stacked: str = "",
        attrs: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(attrs)
        self.columns = list(columns)
        self.extra = extra
        self.add_label = add_label
        self.raw_fallback = raw_fallback
        #: a row per block, headed "<stacked> <number>" (else a table row)
        self.stacked = stacked
        self.raw_note = ""

    def __deepcopy__(self, memo: dict[int, Any]) -> RowsWidget:
        result = super().__deepcopy__(memo)
        # each form sets its own choices on the columns' widgets
        result.columns = [
            Column(c.name, c.label, copy.deepcopy(c.widget, memo)) for c in self.columns
        ]
        return result

    def column(self, name: str) -> Column:
        return next(column for column in self.columns if column.name == name)

    # -- reading a post ------------------------------------------------------

    def value_from_datadict(self, data: Any, files: Any, name: str) -> Any:
        if self.raw_fallback and name in data:
            return data.get(name)
        prefix = f"{name}-"
        names = {column.name for column in self.columns} | {"remove"}
        indices: set[int] = set()
        for key in data:
            if not isinstance(key, str) or not key.startswith(prefix):
                continue
            number, _, column = key[len(prefix) :].partition("-")
            if column in names and _INDEX.fullmatch(number):
                indices.add(int(number))
        rows = PostedRows()
        rows.present = f"{name}-rows" in data or bool(indices)
        rows.truncated = len(indices) > MAX_POSTED_ROWS
        for index in sorted(indices)[:MAX_POSTED_ROWS]:
            row = {
                column.name: column.widget.value_from_datadict(
                    data, files, f"{name}-{index}-{column.name}"
                )
                for column in self.columns
            }
            row["remove"] = forms.CheckboxInput().value_from_datadict(
                data, files, f"{name}-{index}-remove"
            )
            rows.append(row)
        return rows

    def value_omitted_from_data(self, data: Any, files: Any, name: str) -> bool:
        if self.raw_fallback and name in data:
            return False
        return not self.value_from_datadict(data, files, name).present

    def id_for_label(self, id_: str) -> str:
        return f"{id_}-0-{self.columns[0].name}" if id_ else id_

    # -- showing -------------------------------------------------------------

    def _cells(
        self, name: str, base_id: str, index: str, row: Mapping[str, Any]
    ) -> Any:
        for column in self.columns:
            cell_id = f"{base_id}-{index}-{column.name}"
            widget = column.widget.render(
                f"{name}-{index}-{column.name}",
                row.get(column.name),
                {"id": cell_id, "aria-label": column.label},
            )
            yield column, cell_id, widget

    def _row(
        self, name: str, base_id: str, index: str, number: str, row: Mapping[str, Any]
    ) -> SafeString:
        remove = forms.CheckboxInput(
            attrs={"class": "rows-editor-remove", "aria-label": "Remove this row"}
        ).render(
            f"{name}-{index}-remove",
            bool(row.get("remove")),
            {"id": f"{base_id}-{index}-remove"},
        )
        cells = list(self._cells(name, base_id, index, row))
        if self.stacked:
            return format_html(
                '<div class="rows-editor-row rows-editor-block">'
                '<div class="rows-editor-head">{} <span class="rows-editor-number">'
                '{}</span> <label class="rows-editor-remove-label">{} Remove</label>'
                '</div><div class="rows-editor-cells">{}</div></div>',
                self.stacked,
                number,
                remove,
                format_html_join(
                    "",
                    '<div class="rows-editor-cell rows-editor-{}"><label for="{}">{}'
                    "</label>{}</div>",
                    ((c.name, cell_id, c.label, html) for c, cell_id, html in cells),
                ),
            )
        return format_html(
            '<tr class="rows-editor-row"><td class="rows-editor-number">{}</td>{}'
            "<td>{}</td></tr>",
            number,
            format_html_join(
                "",
                '<td class="rows-editor-cell rows-editor-{}">{}</td>',
                ((c.name, html) for c, _, html in cells),
            ),
            remove,
        )

    def render(
        self,
        name: str,
        value: Any,
        attrs: dict[str, Any] | None = None,
        renderer: Any = None,
    ) -> SafeString:
        base_id = widget_id(name, attrs)
        if isinstance(value, str):
            return raw_json_area(name, value, base_id, self.raw_note, rows=10)
        rows = list(value) if isinstance(value, list) else []
        while rows and is_blank(rows[-1]) and not rows[-1].get("remove"):
            rows.pop()  # shown again: the blank rows come after the others
        rows += [{} for _ in range(self.extra)]
        body = format_html_join(
            "",
            "{}",
            (
                (self._row(name, base_id, str(index), str(index + 1), row),)
                for index, row in enumerate(rows)
            ),
        )
        template = self._row(name, base_id, "__index__", "", {})
        if self.stacked:
            shown = format_html('<div class="rows-editor-rows">{}</div>', body)
        else:
            heads = format_html_join(
                "", "<th>{}</th>", ((column.label,) for column in self.columns)
            )
            shown = format_html(
                '<table class="rows-editor-table"><thead><tr><th>#</th>{}'
                '<th>Remove</th></tr></thead><tbody class="rows-editor-rows">{}'
                "</tbody></table>",
                heads,
                body,
            )
        return format_html(
            '<div class="rows-editor" data-next="{}">{}'
            '<template class="rows-editor-template">{}</template>'
            '<input type="hidden" name="{}-rows" value="{}">'
            '<p><button type="button" class="button rows-editor-add" hidden>{}'
            "</button></p></div>",
            len(rows),
            shown,
            template,
            name,
            len(rows),
            self.add_label,
        )


def is_blank(row: Mapping[str, Any]) -> bool:
    """Whether nothing was typed or picked in ``row`` (its remove box aside)."""
    for key, value in row.items():
        if key == "remove":
            continue
        if isinstance(value, str) and value.strip():
            return False
        if isinstance(value, list | tuple) and any(value):
            return False
    return True


def rows_to_read(rows: PostedRows) -> list[tuple[int, dict[str, Any]]]:
    """The rows that count, each with its number as shown (from 1): not
    removed, not blank. More than ``MAX_ROWS`` of them is an error."""
    if rows.truncated:
        raise ValidationError(TOO_MANY_ROWS)
    counted = [
        (number, row)
        for number, row in enumerate(rows, start=1)
        if not row.get("remove") and not is_blank(row)
    ]
    if len(counted) > MAX_ROWS:
        raise ValidationError(TOO_MANY_ROWS)
    return counted


def cell_text(row: Mapping[str, Any], column: str) -> str:
    value = row.get(column)
    return value if isinstance(value, str) else ""


def cell_list(row: Mapping[str, Any], column: str) -> list[str]:
    value = row.get(column)
    if isinstance(value, list | tuple):
        return [item for item in value if isinstance(item, str)]
    return [value] if isinstance(value, str) and value else []
