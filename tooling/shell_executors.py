"""The local shell executors an operator can name in a shell tool's settings.

A hosted shell with ``environment: local`` runs nothing by itself: its
commands go to the executor registered here under the name its configuration
gives, like a function tool's handler. The registry starts empty apart from
``scratch``, which runs a short allow-list of read-only text programs in a
scratch copy of the session's files (``tooling.runtime.local_shell``); a
deployment registers its own executors from a handler module
(``WINK_HANDLER_MODULES``) with ``register(name, executor)``.
"""

from __future__ import annotations

import re
import shutil
import threading
from collections.abc import Mapping
from types import MappingProxyType

from tooling.runtime.local_shell import LocalShellExecutor, ScratchExecutor

SCRATCH_PROGRAMS: tuple[str, ...] = (
    "cat",
    "echo",
    "head",
    "ls",
    "sort",
    "tail",
    "wc",
)

_NAME = re.compile(r"^[a-z][a-z0-9_.-]{0,63}$")
_lock = threading.Lock()
_executors: dict[str, LocalShellExecutor] = {}
_view: Mapping[str, LocalShellExecutor] = MappingProxyType(_executors)


def register(name: str, executor: LocalShellExecutor) -> None:
    """Make ``executor`` available as ``name``; a name is registered once."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(
            f"Shell executor name {name!r} must be 1-64 lowercase letters, digits, "
            "'_', '.' or '-', starting with a letter."
        )
    if not isinstance(executor, LocalShellExecutor):
        raise TypeError(
            f"Shell executor '{name}' must have a run(command, *, filesystem, "
            "timeout_ms, max_output_length) method."
        )
    with _lock:
        if name in _executors:
            raise ValueError(f"Shell executor '{name}' is already registered.")
        _executors[name] = executor


def unregister(name: str) -> LocalShellExecutor:
    with _lock:
        try:
            return _executors.pop(name)
        except KeyError:
            raise KeyError(f"No shell executor is registered as '{name}'.") from None


def get(name: str) -> LocalShellExecutor:
    try:
        return _executors[name]
    except KeyError:
        raise KeyError(f"No shell executor is registered as '{name}'.") from None


def names() -> tuple[str, ...]:
    return tuple(sorted(_executors))


def registry() -> Mapping[str, LocalShellExecutor]:
    """A read-only, live view of the registered executors (what an adapter
    looks a local shell tool's executor up in)."""
    return _view


def _register_defaults() -> None:
    programs = [name for name in SCRATCH_PROGRAMS if _available(name)]
    register("scratch", ScratchExecutor(programs))


def _available(name: str) -> bool:
    return shutil.which(name) is not None


_register_defaults()
