"""``make bench-scale``'s dataset builder (``bench/scale.py``) writes ``COPY``
text for every audit model: each column it does not generate takes the
field's default, which must be rendered as PostgreSQL's text format reads it
(a new field with a ``Decimal`` default once broke the generation)."""

from __future__ import annotations

import datetime as dt
import importlib.util
import sys
import uuid
from decimal import Decimal
from pathlib import Path
from types import ModuleType

import pytest

from sessions_app.models import (
    AgentSession,
    Citation,
    PolicyDenial,
    ProviderCall,
    StateChange,
    ToolInvocation,
)

SCALE = Path(__file__).resolve().parents[1] / "bench" / "scale.py"


@pytest.fixture(scope="module")
def scale() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_scale", SCALE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look themselves up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "\\N"),
        (True, "t"),
        (False, "f"),
        (Decimal("0.0000000001"), "1E-10"),
        (Decimal(0), "0"),
        (7, "7"),
        (1.5, "1.5"),
        (uuid.UUID(int=1), "00000000-0000-0000-0000-000000000001"),
        (dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC), "2026-01-02T03:04:05+00:00"),
        (dt.date(2026, 1, 2), "2026-01-02"),
        ("tab\there\nand \\", "tab\\there\\nand \\\\"),
        ({"a": [1, None]}, '{"a":[1,null]}'),
    ],
)
def test_a_value_is_written_as_copy_reads_it(scale, value, text):
    assert scale._field_text(value) == text


@pytest.mark.parametrize(
    "model",
    [AgentSession, ProviderCall, ToolInvocation, Citation, PolicyDenial, StateChange],
    ids=lambda model: model.__name__,
)
def test_every_default_of_every_audit_model_can_be_written(scale, model, tmp_path):
    table = scale.Table(model, [], tmp_path / "rows.tsv")
    table.close()
    columns = table.sql[table.sql.index("(") + 1 : table.sql.index(")")].split(", ")
    # one value per column the generator leaves to the default
    assert len(table.default_text.split("\t")) - 1 == len(columns)
