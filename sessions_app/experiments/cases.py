"""Dataset cases from a CSV or JSON upload.

CSV: a header row naming ``params`` (a JSON object), and optionally
``trust_level``, ``expected_output`` and ``notes``. JSON: a list of objects
with the same keys. Every row is checked first and nothing is added when one
is wrong: the error names the row and the column.
"""

from __future__ import annotations

import contextlib
import csv
import io
import threading
from collections.abc import Iterable, Iterator
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max

from sessions_app.models import Dataset, DatasetCase, validate_case_params
from sessions_app.models.experiments import MOST_POSITION
from tooling.models import TrustLevel
from tooling.storable_json import loads, validate_storable_json

from .running import MOST_RUNS

MOST_BYTES = 2 * 1024 * 1024
# A dataset's most cases: an experiment runs each case against each target, at
# most MOST_RUNS runs, so a dataset past it could never be run (and its admin
# page renders every case as a form: 20,000 took two minutes).
MOST_CASES = MOST_RUNS
# The most names an unknown-column message lists.
MOST_NAMED = 5
COLUMNS = ("params", "trust_level", "expected_output", "notes")
EXTRA = "\x00extra"  # where a CSV row's cells beyond the header go


def _rows(content: bytes, filename: str) -> list[dict[str, Any]]:
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValidationError("The file is not UTF-8 text.") from None
    if filename.lower().endswith(".json"):
        try:
            rows = loads(text)
        except ValueError as error:
            reason = str(error).removesuffix(".")
            raise ValidationError(f"The file is not valid JSON: {reason}.") from None
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise ValidationError("The JSON must be a list of objects.")
        return rows
    try:
        with _fields_as_large_as_a_file():
            # newline="": the reader itself splits rows, at "\r\n", "\n" or a
            # lone "\r" (Excel's "CSV (Macintosh)"), and keeps those in quotes
            rows = io.StringIO(text, newline="")
            return _csv_rows(csv.DictReader(rows, restkey=EXTRA))
    except csv.Error as error:
        raise ValidationError(f"The CSV cannot be read: {error}.") from None


# Python's csv reads a field of at most 128 KiB unless told otherwise, and only
# process-wide (no reader has a limit of its own): while one import reads, the
# limit is the most a file may hold (so no field is refused that an accepted
# file can hold); nothing else in the project reads CSV.
_FIELD_LIMIT = threading.Lock()


@contextlib.contextmanager
def _fields_as_large_as_a_file() -> Iterator[None]:
    with _FIELD_LIMIT:
        before = csv.field_size_limit(max(MOST_BYTES, csv.field_size_limit()))
        try:
            yield
        finally:
            csv.field_size_limit(before)


def _named(names: Iterable[str]) -> str:
    """The first ``MOST_NAMED`` of ``names``, and how many more."""
    listed = list(names)
    shown = ", ".join(listed[:MOST_NAMED])
    more = len(listed) - MOST_NAMED
    return f"{shown} and {more} more" if more > 0 else shown


def _csv_rows(reader: csv.DictReader[str]) -> list[dict[str, Any]]:
    if not reader.fieldnames or "params" not in reader.fieldnames:
        raise ValidationError('The CSV needs a header row with a "params" column.')
    unknown = [name for name in reader.fieldnames if name not in COLUMNS]
    if unknown:
        raise ValidationError(
            f"Unknown column(s): {_named(repr(name) for name in unknown)}; "
            f"expected {', '.join(COLUMNS)}."
        )
    twice = sorted(
        {name for name in reader.fieldnames if reader.fieldnames.count(name) > 1}
    )
    if twice:
        raise ValidationError(
            f"The header names {', '.join(twice)} more than once: name each column "
            "once."
        )
    rows: list[dict[str, Any]] = []
    for number, row in enumerate(reader, start=2):
        if EXTRA in row:
            raise ValidationError(
                f"Row {number} has more cells than the header "
                f"({len(reader.fieldnames)} column(s)): remove the extra cells, or "
                "quote a cell that holds a comma."
            )
        try:
            params = loads(row.get("params") or "{}")
        except ValueError as error:
            raise ValidationError(
                f"Row {number}: params is not JSON ({error})."
            ) from None
        rows.append({**row, "params": params})
    return rows


def _case(dataset: Dataset, row: dict[str, Any], where: str) -> DatasetCase:
    unknown = [key for key in row if key not in COLUMNS]
    if unknown:
        raise ValidationError(f"{where}: unknown key(s) {_named(map(str, unknown))}.")
    params = row.get("params", {})
    try:
        validate_case_params(params)
    except ValidationError as error:
        raise ValidationError(f"{where}: {' '.join(error.messages)}") from None
    # a missing or empty value takes the default; a value of another type
    # (0, false, [], {}) is refused, not read as empty
    trust = row.get("trust_level")
    if trust in (None, ""):
        trust = TrustLevel.STANDARD
    if not isinstance(trust, str) or trust not in TrustLevel.values:
        raise ValidationError(
            f"{where}: trust_level must be one of {', '.join(TrustLevel.values)}."
        )
    texts = {key: row.get(key) for key in ("expected_output", "notes")}
    wrong = [key for key, value in texts.items() if not isinstance(value, str | None)]
    if wrong:
        raise ValidationError(f"{where}: {' and '.join(wrong)} must be text.")
    texts = {key: value or "" for key, value in texts.items()}
    try:
        validate_storable_json({"params": params, **texts})
    except ValidationError as error:
        raise ValidationError(f"{where}: {' '.join(error.messages)}") from None
    return DatasetCase(dataset=dataset, params=params, trust_level=trust, **texts)


def append_cases(dataset: Dataset, cases: list[DatasetCase]) -> list[DatasetCase]:
    """Add ``cases`` after ``dataset``'s last one, numbered on from its
    position; all or none. The dataset's row is locked while its cases are
    counted and its last position read (PostgreSQL; SQLite's transactions
    take the write lock as they begin, ``transaction_mode``): imports and
    adds arriving together number their cases one after the other, never
    two at one position."""
    with transaction.atomic():
        list(Dataset.objects.select_for_update().filter(pk=dataset.pk).values("pk"))
        held = dataset.cases.count()
        if held + len(cases) > MOST_CASES:
            raise ValidationError(
                f"A dataset holds at most {MOST_CASES} cases (an experiment runs "
                f"at most {MOST_RUNS}): {dataset.name} holds {held}, and "
                f"{len(cases)} would be added. Split them into another dataset."
            )
        last = dataset.cases.aggregate(last=Max("position"))["last"] or 0
        if last + len(cases) > MOST_POSITION:
            raise ValidationError(
                f"The last case of {dataset.name} is at position {last}: the "
                f"cases added would go past {MOST_POSITION}. Number its cases "
                "lower first."
            )
        for offset, case in enumerate(cases, start=1):
            case.position = last + offset
        return DatasetCase.objects.bulk_create(cases)


def import_cases(dataset: Dataset, content: bytes, filename: str) -> list[DatasetCase]:
    """Add the file's cases after the dataset's last one (all or none)."""
    if len(content) > MOST_BYTES:
        raise ValidationError(f"The file is larger than {MOST_BYTES // 1024} KiB.")
    rows = _rows(content, filename)
    if not rows:
        raise ValidationError("The file holds no case.")
    if len(rows) > MOST_CASES:
        raise ValidationError(
            f"A file holds at most {MOST_CASES} cases (as many as a dataset holds)."
        )
    is_json = filename.lower().endswith(".json")
    cases = [
        _case(dataset, row, f"Item {index + 1}" if is_json else f"Row {index + 2}")
        for index, row in enumerate(rows)
    ]
    return append_cases(dataset, cases)
