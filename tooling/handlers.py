"""The handler registry: the only Python code a catalog tool can be bound to.

Operators pick a handler by key in the admin; they can never type an import
path. Each entry is a runtime ``Tool`` carrying the handler, its types, its
default name and description, and whether it accepts overrides.

Handlers come from the modules named in the ``WINK_HANDLER_MODULES`` setting
(the product's own by default), loaded when the app is ready. Each module
defines ``register_handlers(registry)`` and registers its tools there. A module
that cannot be imported, has no such function, fails in it, registers nothing
or registers a key already held is refused whole, with an error naming it (the
``tooling.E001`` system check reports it; ``docs/handlers.md``).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable, Iterator
from typing import Any, Final

from tooling.runtime import Tool

#: The function each handler module defines: ``register_handlers(registry)``.
REGISTER_FUNCTION: Final = "register_handlers"

MAX_MODULE_PATH_LENGTH: Final = 255

#: ``ToolDefinition.handler_key`` holds at most this many characters.
MAX_KEY_LENGTH: Final = 100

#: ``group.name``: dot-separated words of letters, digits, ``_`` and ``-``.
KEY_PATTERN: Final = re.compile(r"[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*")


class HandlerRegistry:
    def __init__(self) -> None:
        self._tools: dict[str, Tool[Any, Any]] = {}
        #: changes whenever a handler is registered or removed (prompts built
        #: from a revision are cached until it does: assembly.revision_prompt)
        self.version = 0

    def register(self, key: str, tool: Tool[Any, Any]) -> None:
        if not isinstance(key, str):
            raise TypeError(
                f"A handler key must be a string; got {type(key).__name__}."
            )
        if len(key) > MAX_KEY_LENGTH:
            raise ValueError(
                f"Handler key {_shortened(key)!r} is longer than {MAX_KEY_LENGTH} "
                "characters."
            )
        if not KEY_PATTERN.fullmatch(key):
            raise ValueError(
                f"Handler key {key!r} must be dot-separated words of letters, "
                "digits, '_' and '-' (such as 'acme.shout')."
            )
        if not isinstance(tool, Tool):
            raise TypeError(
                f"Handler '{key}' must be a tooling.runtime.Tool; "
                f"got {type(tool).__name__}."
            )
        if key in self._tools:
            raise ValueError(f"Handler '{key}' is already registered.")
        if tool.handler is None:
            raise ValueError(f"Handler '{key}' has no handler function.")
        self._tools[key] = tool
        self.version += 1

    def register_group(self, group: str, tools: Iterable[Tool[Any, Any]]) -> None:
        for tool in tools:
            self.register(f"{group}.{tool.name}", tool)

    def unregister(self, key: str) -> Tool[Any, Any]:
        """Remove a handler; catalog revisions that name it can no longer run."""
        try:
            tool = self._tools.pop(key)
        except KeyError:
            raise KeyError(f"No handler is registered as '{key}'.") from None
        self.version += 1
        return tool

    def get(self, key: str) -> Tool[Any, Any]:
        try:
            return self._tools[key]
        except KeyError:
            raise KeyError(f"No handler is registered as '{key}'.") from None

    def __contains__(self, key: object) -> bool:
        return key in self._tools

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._tools))

    def __len__(self) -> int:
        return len(self._tools)

    def choices(self) -> list[tuple[str, str]]:
        return [(key, f"{key}: {self._tools[key].description}") for key in self]


class HandlerModuleError(Exception):
    """A handler module could not register its handlers; none of them were.

    ``module`` is the entry as configured (cut short when long), or ``None``
    when the setting itself is not a list.
    """

    def __init__(self, module: str | None, message: str) -> None:
        where = (
            "WINK_HANDLER_MODULES" if module is None else f"Handler module {module!r}"
        )
        super().__init__(f"{where}: {message}")
        self.module = module
        self.message = message


def load_handler_modules(
    modules: object, registry: HandlerRegistry
) -> list[HandlerModuleError]:
    """Register the handlers of each module into ``registry``, in order.

    A module whose handlers cannot all be registered adds none of them, and
    the others still load; the errors are returned, one per refused module.
    """
    if isinstance(modules, str) or not isinstance(modules, list | tuple):
        return [
            HandlerModuleError(
                None,
                f"must be a list of dotted module paths; got {type(modules).__name__}.",
            )
        ]
    origins: dict[str, str] = {}
    errors: list[HandlerModuleError] = []
    loaded: set[str] = set()
    for module in modules:
        try:
            if isinstance(module, str) and module in loaded:
                raise HandlerModuleError(module, "listed more than once.")
            staged = _stage(module)
            for key in staged:
                if key in registry:
                    holder = origins.get(key, "an earlier registration")
                    raise HandlerModuleError(
                        module,
                        f"handler '{key}' is already registered by {holder}; "
                        "each key must be registered once.",
                    )
        except HandlerModuleError as error:
            errors.append(error)
            continue
        for key in staged:
            registry.register(key, staged.get(key))
            origins[key] = f"module {module!r}"
        loaded.add(module)
    return errors


def _stage(module: object) -> HandlerRegistry:
    """The module's handlers, registered into a registry of their own."""
    if not isinstance(module, str):
        raise HandlerModuleError(
            None, f"each entry must be a string; got {type(module).__name__}."
        )
    if not _is_dotted_path(module):
        raise HandlerModuleError(
            _shortened(module),
            "not a dotted module path (such as 'acme.handlers').",
        )
    try:
        imported = importlib.import_module(module)
    except ModuleNotFoundError as error:
        if error.name is not None and (
            module == error.name or module.startswith(f"{error.name}.")
        ):
            raise HandlerModuleError(module, "no such module.") from error
        raise HandlerModuleError(
            module, f"importing it failed: {type(error).__name__}: {error}"
        ) from error
    except Exception as error:
        raise HandlerModuleError(
            module, f"importing it failed: {type(error).__name__}: {error}"
        ) from error
    register = getattr(imported, REGISTER_FUNCTION, None)
    if not callable(register):
        raise HandlerModuleError(
            module, f"it defines no {REGISTER_FUNCTION}(registry) function."
        )
    staged = HandlerRegistry()
    try:
        register(staged)
    except Exception as error:
        raise HandlerModuleError(
            module,
            f"{REGISTER_FUNCTION}() failed: {type(error).__name__}: {error}",
        ) from error
    if not len(staged):
        raise HandlerModuleError(module, "it registered no handler.")
    return staged


def _is_dotted_path(value: str) -> bool:
    return len(value) <= MAX_MODULE_PATH_LENGTH and all(
        part.isidentifier() for part in value.split(".")
    )


def _shortened(value: str) -> str:
    return value if len(value) <= 80 else f"{value[:77]}..."


#: The product's registry, filled from ``WINK_HANDLER_MODULES`` when the app
#: is ready (``tooling.apps``).
registry = HandlerRegistry()
