"""Imports a package that is not installed."""

import wink_not_installed_dependency  # noqa: F401


def register_handlers(registry: object) -> None:
    raise AssertionError("never reached")
