"""Web search: configuration, typed output, factory and section."""

from __future__ import annotations

import dataclasses
import re
import zoneinfo
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Literal, get_args

from ..citations import Citation as Citation
from ..citations import source_key as source_key
from ..errors import PromptValidationError
from .base import HostedTool, frozen_tuple
from .countries import COUNTRY_NAMES, ISO_3166_ALPHA2, country_code
from .section import HostedToolSection
from .spec import HostedKindSpec, HostedOption

MAX_ALLOWED_DOMAINS = 100
_DOMAIN = re.compile(
    r"^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,62}$"
)

SearchContextSize = Literal["low", "medium", "high"]


@lru_cache(maxsize=1)
def _timezones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def validate_domain(domain: str, *, placeholder: str = "allowed_domains") -> str:
    if not isinstance(domain, str):
        raise PromptValidationError(
            f"Domains must be strings, not {type(domain).__name__}.",
            placeholder=placeholder,
        )
    value = domain.strip().lower()
    if "://" in value or value.startswith("//"):
        raise PromptValidationError(
            f"Domain '{domain}' must be written without a scheme (for example "
            "'docs.python.org', not 'https://docs.python.org').",
            placeholder=placeholder,
        )
    if "/" in value or not _DOMAIN.fullmatch(value):
        raise PromptValidationError(
            f"'{domain}' is not a valid domain name (expected something like "
            f"'example.com'){_ascii_form(value)}.",
            placeholder=placeholder,
        )
    return value


# Python's "idna" codec is IDNA 2003, which maps these to other characters
# ("faß.de" to "fass.de", another domain); browsers follow IDNA 2008 and keep
# them: no hint for a name holding one.
_IDNA2003_DEVIATIONS = frozenset("\u00df\u03c2\u200c\u200d")


def _ascii_form(value: str) -> str:
    """For a name with letters beyond ASCII (``münchen.de``), the hint of its
    ASCII form (IDNA, ``xn--mnchen-3ya.de``), which is what domain filters
    compare; else (or where IDNA 2003 and 2008 differ) nothing."""
    if value.isascii() or any(char in _IDNA2003_DEVIATIONS for char in value):
        return ""
    try:
        encoded = value.encode("idna").decode("ascii")
    except UnicodeError:
        return ""
    if not _DOMAIN.fullmatch(encoded):
        return ""
    return (
        f"; a name with letters beyond ASCII is written in its ASCII form: '{encoded}'"
    )


def _domains(value: Any, placeholder: str) -> tuple[str, ...]:
    domains = tuple(
        validate_domain(d, placeholder=placeholder) for d in frozen_tuple(value)
    )
    if len(domains) > MAX_ALLOWED_DOMAINS:
        verb = "allows" if placeholder == "allowed_domains" else "blocks"
        raise PromptValidationError(
            f"A domain filter {verb} at most {MAX_ALLOWED_DOMAINS} domains "
            f"(got {len(domains)}).",
            placeholder=placeholder,
        )
    return domains


@dataclasses.dataclass(frozen=True, slots=True)
class DomainFilter:
    """Restrict search to ``allowed`` domains or away from ``blocked`` ones
    (subdomains included; at most 100 each).

    Whether a provider can block domains is its adapter's business: the
    OpenAI Responses API has only an allow-list, so its codec refuses a
    filter with ``blocked`` domains before any request is sent.
    """

    allowed: tuple[str, ...] = ()
    blocked: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "allowed", _domains(self.allowed, "allowed_domains"))
        object.__setattr__(self, "blocked", _domains(self.blocked, "blocked_domains"))


def _not_a_country(text: str) -> str:
    """Why ``text`` is refused as a country code; a country's name (or alpha-3
    code) is answered with its code, never guessed at or cut short."""
    code = country_code(text)
    if code is not None:
        return (
            f"'{text}' is not an ISO 3166-1 alpha-2 country code; "
            f"{COUNTRY_NAMES[code]} is '{code}'."
        )
    return (
        f"'{text}' is not an ISO 3166-1 alpha-2 country code (for example "
        "'DE', 'GB', 'US')."
    )


@dataclasses.dataclass(frozen=True, slots=True)
class GeoHint:
    """Approximate user location for localised results."""

    country_code: str | None = None
    city: str | None = None
    region: str | None = None
    timezone: str | None = None

    def __post_init__(self) -> None:
        for name in ("country_code", "city", "region", "timezone"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise PromptValidationError(
                    f"{name} must be a string, not {type(value).__name__}.",
                    placeholder=name,
                )
        if self.country_code is not None:
            code = self.country_code.strip().upper()
            if code not in ISO_3166_ALPHA2:
                raise PromptValidationError(
                    _not_a_country(self.country_code), placeholder="country_code"
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
        sizes = get_args(SearchContextSize)
        if (
            self.search_context_size is not None
            and self.search_context_size not in sizes
        ):
            raise PromptValidationError(
                "search_context_size must be "
                f"{', '.join(repr(size) for size in sizes[:-1])} or {sizes[-1]!r}.",
                placeholder="search_context_size",
            )


@dataclasses.dataclass(frozen=True, slots=True)
class WebSearchCall:
    """One ``web_search_call`` item: its action and the sources it consulted:
    ``sources`` the URLs, ``api_sources`` the names of sources without one
    (real-time feeds such as ``oai-weather``)."""

    call_id: str
    status: str
    action_type: str | None = None
    query: str | None = None
    url: str | None = None
    pattern: str | None = None
    sources: tuple[str, ...] = ()
    api_sources: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class WebSearchResult:
    """Everything web search produced in a run: answer text, citations, sources."""

    text: str
    citations: tuple[Citation, ...] = ()
    source_urls: tuple[str, ...] = ()
    calls: tuple[WebSearchCall, ...] = ()
    api_sources: tuple[str, ...] = ()

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


class WebSearchSection(HostedToolSection[WebSearchConfig]):
    """A section that documents and exposes the web_search hosted tool."""

    default_key = "web_search"
    default_title = "Web Search"
    default_template = WEB_SEARCH_TEMPLATE
    tool_factory = web_search_tool


# -- The catalog's view of this kind (``spec.HostedKindSpec``).

_GEO_OPTIONS = ("country", "city", "region", "timezone")


def _web_search_config(values: Mapping[str, Any]) -> WebSearchConfig:
    """Flat stored options -> the config (domains and location grouped)."""
    domains = values.get("allowed_domains") or ()
    geo = None
    if any(values.get(name) for name in _GEO_OPTIONS):
        geo = GeoHint(
            country_code=values.get("country"),
            city=values.get("city"),
            region=values.get("region"),
            timezone=values.get("timezone"),
        )
    return WebSearchConfig(
        domain_filter=DomainFilter(allowed=tuple(domains)) if domains else None,
        geo_hint=geo,
        allow_live_access=bool(values.get("allow_live_access", True)),
        search_context_size=values.get("search_context_size"),
    )


WEB_SEARCH_SPEC: HostedKindSpec[WebSearchConfig] = HostedKindSpec(
    kind="web_search",
    label="Web search",
    config_type=WebSearchConfig,
    tool_factory=web_search_tool,
    build=_web_search_config,
    # Stored web search configs were never checked for unknown keys.
    strict=False,
    description="Used when the kind is web_search: allowed domains, an "
    "approximate user location and live access.",
    options=(
        HostedOption(
            "allowed_domains",
            "lines",
            rows=4,
            keep_empty=True,
            help="Web search: one domain per line, without https:// (max 100).",
        ),
        HostedOption(
            "country",
            "country",
            field="country_code",  # GeoHint's
            blank="none",
            help="Web search: the user's approximate country (stored as its "
            "ISO 3166-1 alpha-2 code).",
        ),
        HostedOption("city", max_length=100),
        HostedOption("region", max_length=100),
        HostedOption(
            "timezone", max_length=64, help="Web search: IANA, e.g. Europe/Berlin."
        ),
        HostedOption(
            "search_context_size",
            "choice",
            choices=get_args(SearchContextSize),
            blank="default",
        ),
        HostedOption("allow_live_access", "boolean", default=True),
    ),
)
