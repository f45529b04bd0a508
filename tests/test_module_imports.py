"""No module of the apps imports a module of the project inside a function.

An import inside a function is how an import cycle hides: the two modules
import each other, and one does it late so that loading works. Every ``.py``
file under ``sessions_app/`` and ``tooling/`` is parsed with ``ast``; an
import of ``sessions_app``, ``tooling`` or ``wink_project`` (or a relative one)
in a function body fails, and so does a literal dynamic one
(``importlib.import_module("tooling.x")``). Allowed: ``AppConfig.ready()`` in
``apps.py`` (Django's place for registering checks and signals) and
``if TYPE_CHECKING:`` blocks. Migrations are history and are not checked.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECKED_PACKAGES = ("sessions_app", "tooling")
PROJECT = frozenset({"sessions_app", "tooling", "wink_project"})


def _is_project(module: str) -> bool:
    return module.split(".", 1)[0] in PROJECT


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported(node: ast.AST) -> list[str]:
    """The project modules ``node`` imports (relative ones with their dots)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if _is_project(alias.name)]
    if isinstance(node, ast.ImportFrom):
        module = node.module or ""
        if node.level:
            return ["." * node.level + module]
        return [module] if _is_project(module) else []
    if isinstance(node, ast.Call) and node.args:
        func = node.func
        dynamic = (isinstance(func, ast.Name) and func.id == "__import__") or (
            isinstance(func, ast.Attribute) and func.attr == "import_module"
        )
        first = node.args[0]
        if (
            dynamic
            and isinstance(first, ast.Constant)
            and isinstance(first.value, str)
            and _is_project(first.value)
        ):
            return [first.value]
    return []


class _FunctionImports(ast.NodeVisitor):
    def __init__(self, *, in_apps_module: bool) -> None:
        self.in_apps_module = in_apps_module
        self.depth = 0
        self.found: list[str] = []

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if self.in_apps_module and node.name == "ready":
            return  # AppConfig.ready(): registering checks and signals
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node):
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def generic_visit(self, node: ast.AST) -> None:
        if self.depth and isinstance(node, ast.stmt | ast.expr):
            self.found.extend(f"{node.lineno}: {m}" for m in _imported(node))
        super().generic_visit(node)


def imports_in_functions(
    source: str, filename: str = "<source>", *, in_apps_module: bool = False
) -> list[str]:
    """``"<line>: <module>"`` for every project import inside a function."""
    visitor = _FunctionImports(in_apps_module=in_apps_module)
    visitor.visit(ast.parse(source, filename=filename))
    return visitor.found


def _python_files() -> list[Path]:
    files: list[Path] = []
    for package in CHECKED_PACKAGES:
        files.extend(
            path
            for path in sorted((ROOT / package).rglob("*.py"))
            if "migrations" not in path.relative_to(ROOT).parts
        )
    return files


def test_module_imports_scanner_flags_project_imports_in_functions() -> None:
    source = "\n".join(
        [
            "import os",
            "from sessions_app import access",
            "if TYPE_CHECKING:",
            "    from tooling.models import Tool",
            "def f():",
            "    import json",
            "    from django.db import models",
            "    from sessions_app import services",
            "    import tooling.assembly",
            "    from .catalog import x",
            "    importlib.import_module('wink_project.urls')",
            "    importlib.import_module(name)",
            "    if TYPE_CHECKING:",
            "        from tooling import y",
            "    def inner():",
            "        from wink_project import settings",
            "class C:",
            "    async def m(self):",
            "        from . import z",
            "    def ready(self):",
            "        from sessions_app import checks",
        ]
    )
    assert imports_in_functions(source) == [
        "8: sessions_app",
        "9: tooling.assembly",
        "10: .catalog",
        "11: wink_project.urls",
        "16: wink_project",
        "19: .",
        "21: sessions_app",
    ]


def test_module_imports_ready_is_allowed_in_apps_modules_only() -> None:
    source = "class Config:\n    def ready(self):\n        from tooling import checks\n"
    assert imports_in_functions(source, in_apps_module=True) == []
    assert imports_in_functions(source) == ["3: tooling"]


def test_module_imports_checked_packages_contain_python_files() -> None:
    names = {path.relative_to(ROOT).as_posix() for path in _python_files()}
    assert "sessions_app/services.py" in names
    assert "sessions_app/approvals/decisions.py" in names
    assert "tooling/assembly/edits.py" in names
    assert not any("/migrations/" in name for name in names)


@pytest.mark.parametrize(
    "path",
    _python_files(),
    ids=lambda path: path.relative_to(ROOT).as_posix(),
)
def test_module_imports_none_of_the_project_inside_a_function(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    found = imports_in_functions(
        source, str(path), in_apps_module=path.name == "apps.py"
    )
    assert found == [], (
        "imports of the project inside a function (an import cycle hiding?); "
        "import at the top of the module and cut the cycle instead"
    )
