"""Refusing to delete catalog rows that saved prompts depend on."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from tooling import assembly
from tooling.assembly.edits import describe


class GuardedDeleteMixin:
    """Deleting rows that saved prompts depend on is refused, naming each
    prompt: the admin lists them as protected, as it does for protected
    foreign keys, and deletes nothing."""

    def rows_deleted_with(self, objs: Any) -> list[Any]:
        return list(objs)

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        deleted, counts, perms_needed, protected = super().get_deleted_objects(  # type: ignore[misc]
            objs, request
        )
        chosen = list(objs)
        edit = assembly.CatalogEdit.deleting(self.rows_deleted_with(chosen))
        problems = assembly.prompts_broken_by(edit)
        if problems:
            action = "Deleting it" if len(chosen) == 1 else "Deleting them"
            protected = [*protected, *describe(problems, action)]
        return deleted, counts, perms_needed, protected
