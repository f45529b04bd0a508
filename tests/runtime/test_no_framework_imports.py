"""The runtime (and the offline provider) must never import Django, DRF or Celery.

Every ``.py`` file under ``tooling/runtime/`` and ``tooling/offline/`` is parsed
with ``ast``; ``import x``, ``from x import y`` and literal dynamic imports
(``__import__("x")``, ``importlib.import_module("x")``) are checked.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECKED_PACKAGES = ("tooling/runtime", "tooling/offline")
FORBIDDEN = frozenset({"django", "rest_framework", "celery"})


def _top(module: str) -> str:
    return module.split(".", 1)[0]


def _dynamic_import_target(node: ast.Call) -> str | None:
    func = node.func
    is_dunder = isinstance(func, ast.Name) and func.id == "__import__"
    is_importlib = isinstance(func, ast.Attribute) and func.attr == "import_module"
    if not (is_dunder or is_importlib) or not node.args:
        return None
    first = node.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value
    return None


def forbidden_imports(source: str, filename: str = "<source>") -> list[str]:
    """``"<line>: <module>"`` for every forbidden import in ``source``."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
        elif isinstance(node, ast.Call):
            target = _dynamic_import_target(node)
            modules = [target] if target else []
        if modules:
            assert isinstance(node, ast.stmt | ast.expr)
            found.extend(f"{node.lineno}: {m}" for m in modules if _top(m) in FORBIDDEN)
    return found


def _python_files() -> list[Path]:
    files: list[Path] = []
    for package in CHECKED_PACKAGES:
        files.extend(sorted((ROOT / package).rglob("*.py")))
    return files


def test_no_framework_imports_scanner_flags_every_import_form() -> None:
    source = "\n".join(
        [
            "import os",
            "import django",
            "import rest_framework.serializers as s",
            "from celery import shared_task",
            "from django.db import models",
            "from . import django",
            "__import__('celery.app')",
            "importlib.import_module('rest_framework')",
            "importlib.import_module(name)",
            "from djangoish import thing",
        ]
    )
    assert forbidden_imports(source) == [
        "2: django",
        "3: rest_framework.serializers",
        "4: celery",
        "5: django.db",
        "7: celery.app",
        "8: rest_framework",
    ]


def test_no_framework_imports_checked_packages_contain_python_files() -> None:
    files = _python_files()
    names = {path.relative_to(ROOT).as_posix() for path in files}
    assert "tooling/runtime/execution/executor.py" in names
    assert "tooling/runtime/adapters/openai/adapter.py" in names
    assert any(name.startswith("tooling/offline/") for name in names)


@pytest.mark.parametrize(
    "path",
    _python_files(),
    ids=lambda path: path.relative_to(ROOT).as_posix(),
)
def test_no_framework_imports_in_module(path: Path) -> None:
    assert forbidden_imports(path.read_text(encoding="utf-8"), str(path)) == []


def test_no_framework_imports_at_runtime() -> None:
    code = (
        "import sys, tooling.runtime, tooling.offline\n"
        f"bad = sorted({{m.split('.')[0] for m in sys.modules}} & {set(FORBIDDEN)!r})\n"
        "print(','.join(bad))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert done.stdout.strip() == ""
