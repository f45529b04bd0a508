"""What DEBUG pages and error reports may show: no credential, ever.

Django's default filter hides settings and request.META entries named like
API|TOKEN|KEY|SECRET|PASS|SIGNATURE, and honours ``sensitive_variables`` and
``sensitive_post_parameters`` only when DEBUG is off. Here, DEBUG on or off:

- settings and request variables are hidden by name as Django does, and also
  anything named like a URL, DSN, database, broker, result backend, auth,
  cookie or credential (runserver copies the environment into request.META,
  so DATABASE_URL and CELERY_BROKER_URL are there), the Authorization header,
  and the variables MCP header secrets are read from (WINK_MCP_*, or the
  configured prefix and allow-list);
- the decorators are honoured (the login views mark their POST as sensitive);
- in every frame of a traceback, a local named like a password, secret,
  token, key, auth or credential is hidden, and so is a dictionary entry so
  named at any depth (``conn_params["password"]``, ``settings_dict
  ["PASSWORD"]``, the ``kwargs`` of ``connect()``);
- every configured secret value (``secret_values.configured_secrets()``: the
  database passwords, SECRET_KEY, the OpenAI key, broker passwords, MCP header
  values ...) and the request's sensitive POST values (the password just
  typed) are masked wherever they appear: in locals, inside larger strings and
  in the repr of any object, in request data, settings, the exception message
  and its causes. A URL's userinfo and a connection string's password are
  masked too.

``SecretHidingExceptionReporter`` (``DEFAULT_EXCEPTION_REPORTER``) covers what
the filter does not see (the exception's message, its causes, the GET data);
the HTML page, the plain-text page and the report mailed to ADMINS all come
from it.
"""

from __future__ import annotations

import re
from typing import Any

from django.http import HttpRequest, QueryDict
from django.template.defaultfilters import pprint
from django.utils.datastructures import MultiValueDict
from django.views.debug import ExceptionReporter, SafeExceptionReporterFilter

from wink_project.secret_values import (
    URL_USERINFO,
    Masker,
    configured_secrets,
    mcp_header_variable,
)

# Beyond these, a value is masked as the text the page shows for it.
_MAX_DEPTH = 6
_MAX_ITEMS = 2000


class _Shown:
    """A value the page shows as ``text`` (a masked rendering of an object)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


class SecretHidingReporterFilter(SafeExceptionReporterFilter):
    hidden_settings = re.compile(
        "API|TOKEN|KEY|SECRET|PASS|SIGNATURE|COOKIE|AUTH|CREDENTIAL|URL|DSN|"
        "DATABASE|BROKER|RESULT_BACKEND|^WINK_MCP_",
        flags=re.IGNORECASE,
    )
    # Locals and dictionary keys hidden by name, wherever they are.
    hidden_variables = re.compile(
        "PASS|SECRET|TOKEN|KEY|AUTH|CREDENTIAL|SIGNATURE|COOKIE|DSN|API|SESSIONID",
        flags=re.IGNORECASE,
    )

    def is_active(self, request: HttpRequest | None) -> bool:
        # Django turns its filtering off with DEBUG on; this product never does.
        return True

    # -- what to mask -------------------------------------------------------

    def masker(self, request: HttpRequest | None) -> Masker:
        """Masks the configured secrets and ``request``'s sensitive POST values."""
        return Masker(
            [*configured_secrets(), *self._sensitive_post_values(request)],
            self.cleansed_substitute,
        )

    def _sensitive_post_values(self, request: HttpRequest | None) -> list[str]:
        if request is None:
            return []
        declared = getattr(request, "sensitive_post_parameters", ())
        try:
            posted = request.POST
        except Exception:  # a body that cannot be parsed has no values to hide
            return []
        return [
            value
            for key, values in posted.lists()
            if declared == "__ALL__" or key in declared or self._hidden_name(key)
            for value in values
            if isinstance(value, str)
        ]

    def _hidden_name(self, name: Any) -> bool:
        return isinstance(name, str) and bool(self.hidden_variables.search(name))

    # -- settings and request data -----------------------------------------

    def cleanse_setting(self, key: Any, value: Any) -> Any:
        if isinstance(key, str) and mcp_header_variable(key):
            return self.cleansed_substitute
        cleansed = super().cleanse_setting(key, value)
        if isinstance(cleansed, str):
            return URL_USERINFO.sub(rf"\1{self.cleansed_substitute}@", cleansed)
        return cleansed

    def get_safe_settings(self) -> dict[str, Any]:
        masker = self.masker(None)
        return {
            name: self.cleanse_value(value, masker)
            for name, value in super().get_safe_settings().items()
        }

    def get_safe_request_meta(self, request: HttpRequest) -> dict[str, Any]:
        masker = self.masker(request)
        return {
            name: self.cleanse_value(value, masker)
            for name, value in super().get_safe_request_meta(request).items()
        }

    def get_safe_cookies(self, request: HttpRequest) -> dict[str, Any]:
        masker = self.masker(request)
        return {
            name: self.cleanse_value(value, masker)
            for name, value in super().get_safe_cookies(request).items()
        }

    def get_post_parameters(self, request: HttpRequest | None) -> Any:
        if request is None:
            return {}
        return self.cleanse_value(
            super().get_post_parameters(request), self.masker(request)
        )

    def get_cleansed_multivaluedict(
        self, request: HttpRequest, multivaluedict: QueryDict
    ) -> QueryDict:
        cleansed = super().get_cleansed_multivaluedict(request, multivaluedict)
        hidden = [key for key in cleansed if self._hidden_name(key)]
        if hidden:
            cleansed = cleansed.copy()
            for key in hidden:
                cleansed[key] = self.cleansed_substitute
        return cleansed

    # -- tracebacks ---------------------------------------------------------

    def get_traceback_frame_variables(self, request: Any, tb_frame: Any) -> Any:
        masker = self.masker(request)
        return [
            (
                name,
                self.cleansed_substitute
                if self._hidden_name(name)
                else self.cleanse_value(value, masker),
            )
            for name, value in super().get_traceback_frame_variables(request, tb_frame)
        ]

    def cleanse_value(self, value: Any, masker: Masker, depth: int = 0) -> Any:
        """``value`` with every secret in it masked, as the page shows it:
        the same object when it held none; containers are walked (entries
        with a hidden name masked whole), anything else is masked in the text
        the page shows for it (``pprint``)."""
        if isinstance(value, str):
            return masker.text(value)
        if isinstance(value, bytes):
            return masker.bytes(value)
        if value is None or isinstance(value, bool | int | float):
            return value
        walkable = (
            isinstance(value, MultiValueDict | dict | list | tuple | set | frozenset)
            and depth < _MAX_DEPTH
            and len(value) <= _MAX_ITEMS
        )
        if walkable and isinstance(value, MultiValueDict):
            lists = {
                key: [self.cleansed_substitute]
                if self._hidden_name(key)
                else [self.cleanse_value(item, masker, depth + 1) for item in items]
                for key, items in value.lists()
            }
            if all(
                all(a is b for a, b in zip(lists[k], v, strict=True))
                for k, v in value.lists()
            ):
                return value
            cleansed = value.copy()
            for key, items in lists.items():
                cleansed.setlist(key, items)
            return cleansed
        if walkable and isinstance(value, dict):
            pairs = [
                (
                    self.cleanse_value(key, masker, depth + 1),
                    self.cleansed_substitute
                    if self._hidden_name(key)
                    else self.cleanse_value(item, masker, depth + 1),
                )
                for key, item in value.items()
            ]
            if all(
                new_key is key and new is item
                for (new_key, new), (key, item) in zip(
                    pairs, value.items(), strict=True
                )
            ):
                return value
            return dict(pairs)
        if walkable and isinstance(value, list | tuple | set | frozenset):
            items = [self.cleanse_value(item, masker, depth + 1) for item in value]
            if all(a is b for a, b in zip(items, value, strict=True)):
                return value
            if isinstance(value, list):
                return items
            return tuple(items) if isinstance(value, tuple) else set(items)
        shown = pprint(value)
        masked = masker.text(shown)
        return value if masked is shown else _Shown(masked)


class SecretHidingExceptionReporter(ExceptionReporter):
    """Django's reporter, with the exception's message, its causes, the GET
    data and the URL masked as the filter masks the rest."""

    def get_traceback_data(self) -> dict[str, Any]:
        data = super().get_traceback_data()
        report_filter = self.filter
        if not isinstance(report_filter, SecretHidingReporterFilter):
            report_filter = SecretHidingReporterFilter()
        masker = report_filter.masker(self.request)
        for key in (
            "exception_value",
            "exception_notes",
            "unicode_hint",
            "request_insecure_uri",
        ):
            if isinstance(data.get(key), str):
                data[key] = masker.text(data[key])
        if "request_GET_items" in data:
            data["request_GET_items"] = list(
                report_filter.cleanse_value(self.request.GET, masker).items()
                if self.request is not None
                else []
            )
        for frame in data.get("frames", ()):
            cause = frame.get("exc_cause")
            if cause is None:
                continue
            try:
                text = str(cause)
            except Exception:  # the page then shows what Django shows
                continue
            masked = masker.text(text)
            if masked is not text:
                frame["exc_cause"] = masked
        return data
