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
from collections.abc import Iterator
from typing import Any

from django.core.exceptions import ValidationError

from sessions_app.models import Dataset, DatasetCase, validate_case_params
from tooling.models import TrustLevel
from tooling.storable_json import loads, validate_storable_json

MOST_BYTES = 2 * 1024 * 1024
MOST_CASES = 10_000
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
            return _csv_rows(csv.DictReader(io.StringIO(text), restkey=EXTRA))
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


def _csv_rows(reader: csv.DictReader[str]) -> list[dict[str, Any]]:
    if not reader.fieldnames or "params" not in reader.fieldnames:
        raise ValidationError('The CSV needs a header row with a "params" column.')
    unknown = [name for name in reader.fieldnames if name not in COLUMNS]
    if unknown:
        raise ValidationError(
            f"Unknown column(s): {', '.join(repr(name) for name in unknown)}; "
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


def _case(
    dataset: Dataset, row: dict[str, Any], where: str, position: int
) -> DatasetCase:
    unknown = [key for key in row if key not in COLUMNS]
    if unknown:
        raise ValidationError(
            f"{where}: unknown key(s) {', '.join(map(str, unknown))}."
        )
    params = row.get("params", {})
    try:
        validate_case_params(params)
    except ValidationError as error:
        raise ValidationError(f"{where}: {' '.join(error.messages)}") from None
    trust = row.get("trust_level") or TrustLevel.STANDARD
    if trust not in TrustLevel.values:
        raise ValidationError(
            f"{where}: trust_level must be one of {', '.join(TrustLevel.values)}."
        )
    texts = {key: row.get(key) or "" for key in ("expected_output", "notes")}
    if any(not isinstance(value, str) for value in texts.values()):
        raise ValidationError(f"{where}: expected_output and notes must be text.")
    try:
        validate_storable_json({"params": params, **texts})
    except ValidationError as error:
        raise ValidationError(f"{where}: {' '.join(error.messages)}") from None
    return DatasetCase(
        dataset=dataset, position=position, params=params, trust_level=trust, **texts
    )


def import_cases(dataset: Dataset, content: bytes, filename: str) -> list[DatasetCase]:
    """Add the file's cases after the dataset's last one (all or none)."""
    if len(content) > MOST_BYTES:
        raise ValidationError(f"The file is larger than {MOST_BYTES // 1024} KiB.")
    rows = _rows(content, filename)
    if not rows:
        raise ValidationError("The file holds no case.")
    if len(rows) > MOST_CASES:
        raise ValidationError(f"At most {MOST_CASES} cases per file.")
    last = (
        dataset.cases.order_by("-position").values_list("position", flat=True).first()
    )
    start = (last or 0) + 1
    is_json = filename.lower().endswith(".json")
    cases = [
        _case(
            dataset,
            row,
            f"Item {index + 1}" if is_json else f"Row {index + 2}",
            start + index,
        )
        for index, row in enumerate(rows)
    ]
    return DatasetCase.objects.bulk_create(cases)
