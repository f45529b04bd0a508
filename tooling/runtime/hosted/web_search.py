"""Web search: configuration, typed output, factory and section."""

from __future__ import annotations

import dataclasses
import re
import zoneinfo
from functools import lru_cache
from typing import Any, Literal
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..errors import PromptValidationError
from ..sections import EnabledPredicate, MarkdownSection
from .base import HostedTool, frozen_tuple
from .countries import ISO_3166_ALPHA2

MAX_ALLOWED_DOMAINS = 100
_DOMAIN = re.compile(
    r"^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,62}$"
)

SearchContextSize = Literal["low", "medium", "high"]


@lru_cache(maxsize=1)
def _timezones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def validate_domain(domain: str) -> str:
    value = domain.strip().lower()
    if "://" in value or value.startswith("//"):
        raise PromptValidationError(
            f"Domain '{domain}' must be written without a scheme (for example "
            "'docs.python.org', not 'https://docs.python.org').",
            placeholder="allowed_domains",
        )
    if "/" in value or not _DOMAIN.fullmatch(value):
        raise PromptValidationError(
            f"'{domain}' is not a valid domain name (expected something like "
            "'example.com').",
            placeholder="allowed_domains",
        )
    return value


@dataclasses.dataclass(frozen=True, slots=True)
class DomainFilter:
    """Restrict search to these domains (subdomains included). At most 100.

    The OpenAI API has no block-list, so only ``allowed`` exists here.
    """

    allowed: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        allowed = tuple(validate_domain(d) for d in frozen_tuple(self.allowed))
        if len(allowed) > MAX_ALLOWED_DOMAINS:
            raise PromptValidationError(
                f"A domain filter allows at most {MAX_ALLOWED_DOMAINS} domains "
                f"(got {len(allowed)}).",
                placeholder="allowed_domains",
            )
        object.__setattr__(self, "allowed", allowed)


@dataclasses.dataclass(frozen=True, slots=True)
class GeoHint:
    """Approximate user location for localised results."""

    country_code: str | None = None
    city: str | None = None
    region: str | None = None
    timezone: str | None = None

    def __post_init__(self) -> None:
        if self.country_code is not None:
            code = self.country_code.strip().upper()
            if code not in ISO_3166_ALPHA2:
                raise PromptValidationError(
                    f"'{self.country_code}' is not an ISO 3166-1 alpha-2 country "
                    "code (for example 'DE', 'GB', 'US').",
                    placeholder="country_code",
                )
            object.__setattr__(self, "country_code", code)
        if self.timezone is not None and self.timezone not in _timezones():
            raise PromptValidationError(
                f"'{self.timezone}' is not an IANA timezone (for example "
                "'Europe/Berlin').",
                placeholder="timezone",
            )
        for name in ("city", "region"):
            value = getattr(self, name)
            if value is not None and not value.strip():
                object.__setattr__(self, name, None)


@dataclasses.dataclass(frozen=True, slots=True)
class WebSearchConfig:
    """Options of the web_search tool."""

    domain_filter: DomainFilter | None = None
    geo_hint: GeoHint | None = None
    allow_live_access: bool = True
    search_context_size: SearchContextSize | None = None

    def __post_init__(self) -> None:
        if self.search_context_size not in (None, "low", "medium", "high"):
            raise PromptValidationError(
                "search_context_size must be 'low', 'medium' or 'high'.",
                placeholder="search_context_size",
            )


@dataclasses.dataclass(frozen=True, slots=True)
class Citation:
    """A cited source: where it points and which span of text it supports.

    ``kind`` is the annotation type (``url_citation``, ``file_citation``,
    ``container_file_citation``); file citations carry ids instead of a URL.
    """

    url: str
    title: str
    span: tuple[int, int] | None = None
    cited_text: str = ""
    kind: str = "url_citation"
    file_id: str | None = None
    filename: str | None = None
    container_id: str | None = None
    message_id: str | None = None
    content_index: int = 0
    search_call_id: str | None = None
    """The ``web_search_call`` this URL citation most likely came from: the
    latest earlier call that listed the URL among its sources, else the latest
    earlier call (the API does not link them itself)."""


# Query parameters the provider adds to cited URLs (not part of the source).
_TRACKING_PARAMS = frozenset({"utm_source"})


def source_key(url: str) -> str:
    """``url`` reduced for comparing a citation with a search's sources.

    Citations often come back as ``...?utm_source=openai`` while the search
    listed the bare URL; scheme and host case, the fragment and a trailing
    slash do not name a different source either.
    """
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return url.strip()
    query = urlencode(
        [
            (k, v)
            for k, v in parse_qsl(parts.query, keep_blank_values=True)
            if k not in _TRACKING_PARAMS
        ]
    )
    path = parts.path.rstrip("/")
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, query, ""))


@dataclasses.dataclass(frozen=True, slots=True)
class WebSearchCall:
    """One ``web_search_call`` item: its action and the sources it consulted."""

    call_id: str
    status: str
    action_type: str | None = None
    query: str | None = None
    url: str | None = None
    pattern: str | None = None
    sources: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class WebSearchResult:
    """Everything web search produced in a run: answer text, citations, sources."""

    text: str
    citations: tuple[Citation, ...] = ()
    source_urls: tuple[str, ...] = ()
    calls: tuple[WebSearchCall, ...] = ()

    def render(self) -> str:
        lines = [self.text] if self.text else []
        lines += [f"- {c.title or c.url} <{c.url}>" for c in self.citations]
        return "\n".join(lines)


WEB_SEARCH_DESCRIPTION = "Search the web for current information and cite sources."


def web_search_tool(
    config: WebSearchConfig | None = None,
    *,
    name: str = "web_search",
    description: str = WEB_SEARCH_DESCRIPTION,
) -> HostedTool[WebSearchConfig]:
    """A web search hosted tool with the given configuration."""
    return HostedTool(
        kind="web_search",
        name=name,
        description=description,
        config=config or WebSearchConfig(),
    )


WEB_SEARCH_TEMPLATE = """\
Use the web_search tool for facts that may have changed or that you are not sure
of. Cite every source you rely on inline; do not cite pages you did not open."""


class WebSearchSection(MarkdownSection):
    """A section that documents and exposes the web_search hosted tool."""

    def __init__(
        self,
        config: WebSearchConfig | None = None,
        *,
        key: str = "web_search",
        name: str = "web_search",
        title: str = "Web Search",
        enabled: bool | EnabledPredicate = True,
    ) -> None:
        self._tool = web_search_tool(config, name=name)
        super().__init__(
            title=title,
            key=key,
            template=WEB_SEARCH_TEMPLATE,
            enabled=enabled,
            hosted_tools=(self._tool,),
        )

    @property
    def tool(self) -> HostedTool[WebSearchConfig]:
        return self._tool

    def hosted_tools(self) -> tuple[HostedTool[Any], ...]:
        return (self._tool,)
