"""Errors the offline provider serves the way the real API does."""

from __future__ import annotations

from typing import Any


def error_payload(
    message: str,
    *,
    param: str | None = None,
    code: str | None = None,
    error_type: str = "invalid_request_error",
) -> dict[str, Any]:
    """The body of an OpenAI error response: ``{"error": {...}}``."""
    return {
        "error": {"message": message, "type": error_type, "param": param, "code": code}
    }


class OfflineRequestError(Exception):
    """A request the real API would reject; served as an HTTP error body."""

    def __init__(
        self,
        status: int,
        message: str,
        param: str | None = None,
        *,
        code: str | None = None,
        error_type: str = "invalid_request_error",
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code
        self.error_type = error_type

    def payload(self) -> dict[str, Any]:
        """The JSON error body for this error."""
        return error_payload(
            self.message, param=self.param, code=self.code, error_type=self.error_type
        )
