"""An MCP server's URL (``mcp.McpConfig.server_url``): an http(s) URL with a
host and no credential in it (``check_server_url``: no ``user:password@``; the
catalog's form also refuses a parameter named like one in its query, its path
or its fragment, ``credential_query_names``, and a key by its shape anywhere,
``credential_shapes``, as the URL is shown wherever the tool is)."""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import parse_qsl, unquote, urlsplit

from ..errors import PromptValidationError

# A query parameter whose name says it carries a credential, its name read
# without case or separators ("Access-Token" is "accesstoken"): one of these
# names, or one ending so ("x_amz_signature", "client_secret"). Not a
# substring test: "keyspace", "author" and "tokenizer" name no credential.
_CREDENTIAL_NAMES = frozenset({"key", "sig", "auth", "pwd", "code", "authorization"})
_CREDENTIAL_ENDINGS = (
    "accesskey",  # access_key, AWSAccessKeyId (below)
    "accesskeyid",
    "privatekey",
    "secretkey",
    "sessionkey",
    "subscriptionkey",
    "token",
    "secret",
    "password",
    "passwd",
    "apikey",
    "signature",
    "credential",
    "credentials",
)


def _credential_name(name: str) -> bool:
    # (NFKC: a name in full-width letters reads as in plain ones)
    plain = re.sub(r"[^a-z0-9]", "", unicodedata.normalize("NFKC", name).lower())
    return plain in _CREDENTIAL_NAMES or plain.endswith(_CREDENTIAL_ENDINGS)


def credential_query_names(url: str) -> list[str]:
    """The names of ``url``'s parameters that look like credentials: in its
    query (``?access_token=``, ``?api_key=``), its path (``;token=``) or its
    fragment (``#access_token=``). A URL is shown on every page that shows
    the tool, so the catalog refuses them where the URL is entered (headers
    are masked; a URL is not)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    names = [name for name, _ in parse_qsl(parts.query, keep_blank_values=True)]
    # (in the fragment and the path's parameters only name=value: "#code" is
    # an anchor, ";key" a flag)
    others = [parts.fragment]
    others += [
        segment for part in parts.path.split("/") for segment in part.split(";")[1:]
    ]
    names += [
        name
        for text in others
        for pair in text.split("&")
        if "=" in pair
        for name, _ in parse_qsl(pair, keep_blank_values=True)
    ]
    return sorted({name for name in names if _credential_name(name)})


# Credentials whose own shape says what they are, wherever in a URL they sit
# (a path segment: "https://mcp.example.com/sk-proj-.../mcp"): the prefixes
# their issuers document, followed by what a key looks like. A prefix alone
# is a word ("sk-learn-documentation-server", "xoxb-integration-bridge"), so
# the keys whose body is free text must look random: letters of both cases
# and a digit (``_random``). Not every issuer's shape: a start, not a proof.
_PREFIXED = re.compile(
    r"(?<![A-Za-z0-9])("
    r"sk-[A-Za-z0-9_-]{20,}"  # OpenAI (sk-proj-...), Anthropic (sk-ant-...)
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{20,}"  # GitHub
    r"|hf_[A-Za-z0-9]{30,}"  # Hugging Face
    r"|glpat-[A-Za-z0-9_-]{20,}"  # GitLab
    r")"
)
_EXACT = re.compile(
    r"(?<![A-Za-z0-9])("
    r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"  # Stripe
    r"|xox[abprs]-[0-9]{6,}-[A-Za-z0-9-]{6,}"  # Slack: its team's number first
    r"|AKIA[0-9A-Z]{16}(?![0-9A-Za-z])"  # AWS access key id
    r"|AIza[0-9A-Za-z_-]{35}"  # Google API key
    r"|ya29\.[0-9A-Za-z_-]{20,}"  # Google OAuth access token
    r"|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"  # a JWT
    r")"
)


def _random(key: str) -> bool:
    body = key.split("_", 1)[-1] if key.startswith(("gh", "github", "hf")) else key
    return (
        any(c.isdigit() for c in body)
        and any(c.isupper() for c in body)
        and any(c.islower() for c in body)
    )


def credential_shapes(url: str) -> list[str]:
    """The credentials ``url`` holds by their shape (an API key's prefix, a
    JWT), anywhere in it, percent-encoded or not, each shown by its first
    characters only."""
    text, previous = url, None
    while text != previous:  # "%2573k-..." is "%73k-..." is "sk-..."
        previous, text = text, unquote(text)
    found = [key for key in _PREFIXED.findall(text) if _random(key)]
    found += _EXACT.findall(text)
    return [f"{key[:7]}\u2026" for key in found]


def check_server_url(url: object) -> str:
    if not isinstance(url, str) or not url.strip():
        raise PromptValidationError(
            "server_url must be the http(s) URL of the MCP server (or give a "
            "connector_id for one of OpenAI's connectors).",
            placeholder="server_url",
        )
    value = url.strip()
    if any(ch.isspace() for ch in value):
        raise PromptValidationError(
            f"server_url '{value}' must not contain whitespace.",
            placeholder="server_url",
        )
    try:
        parts = urlsplit(value)
        hostname = parts.hostname
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError as error:
        raise PromptValidationError(
            f"server_url '{value}' is not a valid URL: {error}.",
            placeholder="server_url",
        ) from error
    if parts.scheme.lower() not in ("https", "http") or not hostname:
        raise PromptValidationError(
            f"server_url '{value}' must be an https:// (or http://) URL with a host, "
            "for example 'https://mcp.example.com/mcp'.",
            placeholder="server_url",
        )
    if parts.username is not None or parts.password is not None:
        raise PromptValidationError(
            "server_url must not embed credentials (user:password@); pass them in "
            "headers, which are kept out of logs and reprs.",
            placeholder="server_url",
        )
    return value
