"""Remote MCP servers: configuration, typed output, factory and section.

The provider lists the server's tools (``mcp_list_tools``) and calls them
itself (``mcp_call``). With ``require_approval="always"`` the provider asks
first (``mcp_approval_request``): the run pauses until a human decides, and
the decision goes back as an ``mcp_approval_response`` on the next request
(``adapters/openai/approvals.py``); ``"never"`` (the default) calls at once.

A server is a URL (``server_url``) or one of OpenAI's connectors
(``connector_id``, e.g. ``connector_googledrive``), never both. ``headers``
and ``authorization`` (the OAuth access token a connector needs) carry
credentials: they are kept out of ``repr``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal

from ..errors import PromptValidationError
from .base import HostedTool, frozen_tuple
from .mcp_url import check_server_url
from .section import HostedToolSection
from .spec import HostedKindSpec, HostedOption

ApprovalMode = Literal["always", "never"]
APPROVAL_MODES: tuple[str, ...] = ("always", "never")
SERVER_LABEL = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
#: OpenAI's connectors (openai 3.54's ``connector_id`` literal; deprecated for
#: models released after 2026-09-01, per its docstring).
CONNECTOR_IDS: tuple[str, ...] = (
    "connector_dropbox",
    "connector_gmail",
    "connector_googlecalendar",
    "connector_googledrive",
    "connector_microsoftteams",
    "connector_outlookcalendar",
    "connector_outlookemail",
    "connector_sharepoint",
)
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_HEADER_VALUE_FORBIDDEN = re.compile(r"[\r\n\x00]")


def _given(value: object) -> bool:
    return value is not None and not (isinstance(value, str) and not value.strip())


def _check_connector(connector: object) -> str:
    if not isinstance(connector, str) or connector.strip() not in CONNECTOR_IDS:
        raise PromptValidationError(
            f"connector_id {connector!r} is not one of OpenAI's connectors: "
            f"{', '.join(CONNECTOR_IDS)}.",
            placeholder="connector_id",
        )
    return connector.strip()


def _check_authorization(token: object) -> str | None:
    if token is None:
        return None
    if (
        not isinstance(token, str)
        or not token.strip()
        or _HEADER_VALUE_FORBIDDEN.search(token)
    ):
        # The value is secret: never echo it.
        raise PromptValidationError(
            "authorization must be a non-blank access token without line breaks.",
            placeholder="authorization",
        )
    return token.strip()


def _check_headers(headers: object) -> Mapping[str, str]:
    if headers is None:
        return MappingProxyType({})
    if not isinstance(headers, Mapping):
        raise PromptValidationError(
            "headers must be a mapping of header names to string values.",
            placeholder="headers",
        )
    checked: dict[str, str] = {}
    for name, value in headers.items():
        if not isinstance(name, str) or not _HEADER_NAME.fullmatch(name):
            raise PromptValidationError(
                f"Header name {name!r} is not a valid HTTP header name.",
                placeholder="headers",
            )
        if not isinstance(value, str) or _HEADER_VALUE_FORBIDDEN.search(value):
            # The value is secret: name the header, never echo the value.
            raise PromptValidationError(
                f"Header '{name}' must have a string value without line breaks.",
                placeholder="headers",
            )
        if name.lower() in (k.lower() for k in checked):
            raise PromptValidationError(
                f"Header '{name}' is given twice (header names are case-insensitive).",
                placeholder="headers",
            )
        checked[name] = value
    return MappingProxyType(checked)


@dataclasses.dataclass(frozen=True, slots=True)
class McpConfig:
    """Options of one remote MCP server.

    ``server_label`` identifies the server in calls (``^[A-Za-z0-9_-]{1,64}$``).
    The server is either ``server_url`` or ``connector_id`` (one of
    ``CONNECTOR_IDS``), exactly one of them. ``allowed_tools`` restricts which
    of its tools the model sees (empty: all). ``headers`` are sent to a
    server URL (typically ``Authorization``); ``authorization`` is the OAuth
    access token, which a connector requires. Both are secret, immutable and
    excluded from ``repr``.
    """

    server_label: str
    server_url: str = ""
    allowed_tools: tuple[str, ...] = ()
    require_approval: ApprovalMode = "never"
    headers: Mapping[str, str] = dataclasses.field(
        default_factory=lambda: MappingProxyType({}), repr=False
    )
    server_description: str | None = None
    connector_id: str | None = None
    authorization: str | None = dataclasses.field(default=None, repr=False)

    def __post_init__(self) -> None:
        label = self.server_label
        if not isinstance(label, str) or not SERVER_LABEL.fullmatch(label):
            raise PromptValidationError(
                f"server_label {label!r} must match ^[A-Za-z0-9_-]{{1,64}}$: 1-64 "
                "ASCII letters, digits, underscores or hyphens.",
                placeholder="server_label",
            )
        if _given(self.connector_id):
            if _given(self.server_url):
                raise PromptValidationError(
                    "Give either server_url or connector_id, not both: a "
                    "connector is run by OpenAI and has no URL.",
                    placeholder="connector_id",
                )
            object.__setattr__(
                self, "connector_id", _check_connector(self.connector_id)
            )
            object.__setattr__(self, "server_url", "")
        else:
            object.__setattr__(self, "connector_id", None)
            object.__setattr__(self, "server_url", check_server_url(self.server_url))
        if self.allowed_tools is None or isinstance(self.allowed_tools, Mapping):
            raise PromptValidationError(
                "allowed_tools must be a list of tool names.",
                placeholder="allowed_tools",
            )
        names: list[str] = []
        for name in frozen_tuple(self.allowed_tools):
            if not isinstance(name, str) or not name.strip():
                raise PromptValidationError(
                    "allowed_tools entries must be non-blank tool names "
                    f"(got {name!r}).",
                    placeholder="allowed_tools",
                )
            if name.strip() not in names:
                names.append(name.strip())
        object.__setattr__(self, "allowed_tools", tuple(names))
        if self.require_approval not in APPROVAL_MODES:
            raise PromptValidationError(
                f"require_approval '{self.require_approval}' must be 'never' or "
                "'always'.",
                placeholder="require_approval",
            )
        object.__setattr__(self, "headers", _check_headers(self.headers))
        object.__setattr__(
            self, "authorization", _check_authorization(self.authorization)
        )
        if self.connector_id is not None:
            if self.headers:
                raise PromptValidationError(
                    "headers are sent to a server URL; a connector takes its "
                    "access token in authorization instead.",
                    placeholder="headers",
                )
            if self.authorization is None:
                raise PromptValidationError(
                    f"connector_id '{self.connector_id}' needs authorization: "
                    "the OAuth access token of the account the connector reads.",
                    placeholder="authorization",
                )
        description = self.server_description
        if description is not None:
            if not isinstance(description, str):
                raise PromptValidationError(
                    "server_description must be a string.",
                    placeholder="server_description",
                )
            object.__setattr__(self, "server_description", description.strip() or None)


@dataclasses.dataclass(frozen=True, slots=True)
class McpToolCall:
    """One ``mcp_call``: the tool, its arguments (decoded JSON when possible)
    and its output or error."""

    call_id: str
    server_label: str
    name: str
    arguments: Any = None
    output: str | None = None
    error: str | None = None
    status: str = "completed"
    raw_arguments: str = ""
    approval_request_id: str | None = None

    @property
    def succeeded(self) -> bool:
        return self.error is None and self.status == "completed"


@dataclasses.dataclass(frozen=True, slots=True)
class McpApprovalRequest:
    """An ``mcp_approval_request``: the provider asked before calling the
    tool (the run paused for a human decision and answered it)."""

    request_id: str
    server_label: str
    name: str
    arguments: Any = None
    raw_arguments: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class McpResult:
    """What one MCP server did in a run: its calls, the tools it listed, the
    approval requests it made and tool-listing errors."""

    calls: tuple[McpToolCall, ...] = ()
    listed_tools: tuple[str, ...] = ()
    approval_requests: tuple[McpApprovalRequest, ...] = ()
    list_errors: tuple[str, ...] = ()

    def render(self) -> str:
        lines = [f"tools: {', '.join(self.listed_tools) or 'none listed'}"]
        for call in self.calls:
            outcome = call.error if call.error is not None else call.output or ""
            lines.append(f"- {call.name} [{call.status}]: {outcome[:500]}")
        lines.extend(f"- {r.name} [approval requested]" for r in self.approval_requests)
        lines.extend(f"! list_tools failed: {e}" for e in self.list_errors)
        return "\n".join(lines)


def mcp_description(config: McpConfig) -> str:
    return f"Call the tools of the remote MCP server '{config.server_label}'."


def mcp_tool(
    config: McpConfig,
    *,
    name: str = "mcp",
    description: str | None = None,
) -> HostedTool[McpConfig]:
    """A hosted tool for one remote MCP server.

    Tool names are unique per prompt: give each server its own ``name``.
    """
    if not isinstance(config, McpConfig):
        raise PromptValidationError(
            "mcp_tool needs an McpConfig.", placeholder="config"
        )
    return HostedTool(
        kind="mcp",
        name=name,
        description=description if description is not None else mcp_description(config),
        config=config,
    )


def mcp_template(config: McpConfig) -> str:
    lines = [
        f"The tools of the MCP server '{config.server_label}' are available to you;"
        " the provider calls them for you.",
    ]
    if config.connector_id is not None:
        lines.append(f"It is OpenAI's connector {config.connector_id}.")
    if config.server_description:
        lines.append(f"About this server: {config.server_description}")
    if config.allowed_tools:
        lines.append(f"You may use: {', '.join(config.allowed_tools)}.")
    lines.append("Report tool errors instead of inventing results.")
    return "\n".join(lines).replace("$", "$$")


class McpSection(HostedToolSection[McpConfig]):
    """A section that documents and exposes one remote MCP server."""

    default_key = "mcp"
    default_title = "MCP Server"
    tool_factory = mcp_tool

    def section_template(self, config: McpConfig) -> str:
        return mcp_template(config)


__all__ = [
    "APPROVAL_MODES",
    "CONNECTOR_IDS",
    "SERVER_LABEL",
    "ApprovalMode",
    "McpApprovalRequest",
    "McpConfig",
    "McpResult",
    "McpSection",
    "McpToolCall",
    "mcp_description",
    "mcp_template",
    "mcp_tool",
]


# -- The catalog's view of this kind (``spec.HostedKindSpec``).

MCP_SPEC: HostedKindSpec[McpConfig] = HostedKindSpec(
    kind="mcp",
    label="MCP server",
    config_type=McpConfig,
    tool_factory=mcp_tool,
    description="Used when the kind is mcp: a server URL, or one of OpenAI's "
    "connectors. Header values and the authorization token are secrets: only "
    "the names of the environment variables holding them are stored, and the "
    "values are never shown.",
    refused={
        "headers": (
            "MCP header values are never stored in the catalog: name an "
            "environment variable per header instead, as header_env "
            '{"Authorization": "WINK_MCP_CRM_TOKEN"}.',
            "header_env",
        ),
        "authorization": (
            "The MCP authorization token is never stored in the catalog: name "
            "the environment variable holding it instead, as authorization_env "
            '"WINK_MCP_DRIVE_TOKEN".',
            "authorization_env",
        ),
    },
    options=(
        HostedOption(
            "server_label",
            max_length=64,
            default="",
            help="1-64 of A-Z, a-z, 0-9, '_' or '-'.",
        ),
        HostedOption(
            "server_url",
            label="Server URL",
            max_length=500,
            default="",
            help="https:// (or http://) URL of the MCP server, without credentials; "
            "leave empty for a connector.",
        ),
        HostedOption(
            "connector_id",
            "choice",
            label="Connector",
            choices=CONNECTOR_IDS,
            blank="none (a server URL)",
            help="One of OpenAI's connectors instead of a server URL (not both); "
            "it needs an authorization variable.",
        ),
        HostedOption(
            "allowed_tools",
            "lines",
            help="One tool name per line; empty: every tool of the server.",
        ),
        HostedOption(
            "require_approval",
            "choice",
            choices=APPROVAL_MODES,
            blank=None,
            default="never",
            help="'always': the provider asks before every call of this server; "
            "the run pauses until an approver decides (see the approvals inbox).",
        ),
        HostedOption("server_description", max_length=500),
        HostedOption(
            "header_env",
            "header_env",
            label="Header variables",
            field="headers",
            help="One Header-Name=ENV_VAR per line, e.g. "
            "Authorization=DEEPWIKI_MCP_AUTH. Only the variable's name is stored; "
            "its value is read from the environment when the prompt is built and "
            "is never stored or shown.",
        ),
        HostedOption(
            "authorization_env",
            "secret_env",
            label="Authorization variable",
            field="authorization",
            max_length=100,
            help="The environment variable holding the OAuth access token sent "
            "as authorization (a connector needs one), e.g. WINK_MCP_DRIVE_TOKEN. "
            "Only its name is stored; the value is read when the prompt is built, "
            "under the same rules as header variables, and never stored or shown.",
        ),
    ),
)
