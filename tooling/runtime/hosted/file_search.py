"""File search: configuration, typed output, factory and section.

The provider searches vector stores the caller uploaded files to beforehand;
nothing runs locally. Attribute filters are validated here, recursively, and
kept as frozen ``ComparisonFilter`` / ``CompoundFilter`` trees.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Literal, TypeAlias

from ..citations import Citation
from ..errors import PromptValidationError
from .base import HostedTool, frozen_tuple
from .section import HostedToolSection
from .spec import HostedKindSpec, HostedOption

ComparisonOp = Literal["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin"]
CompoundOp = Literal["and", "or"]
Ranker = Literal["auto", "default-2024-11-15"]

COMPARISON_OPS: tuple[str, ...] = ("eq", "ne", "gt", "gte", "lt", "lte", "in", "nin")
COMPOUND_OPS: tuple[str, ...] = ("and", "or")
RANKERS: tuple[str, ...] = ("auto", "default-2024-11-15")
MAX_RESULTS_LIMIT = 50
MAX_ATTRIBUTE_KEY_LENGTH = 64

FilterScalar: TypeAlias = str | int | float | bool
FilterValue: TypeAlias = FilterScalar | tuple[str | int | float, ...]


def _error(message: str, placeholder: str = "filters") -> PromptValidationError:
    return PromptValidationError(message, placeholder=placeholder)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _finite(value: object) -> bool:
    return not isinstance(value, float) or math.isfinite(value)


def _check_value(op: str, value: object, path: str) -> FilterValue:
    if op in ("in", "nin"):
        if isinstance(value, str | bytes) or not isinstance(value, Sequence):
            raise _error(
                f"{path}.value: '{op}' compares against a list of strings or "
                f"numbers (got {type(value).__name__})."
            )
        items = tuple(value)
        if not items:
            raise _error(f"{path}.value: the list for '{op}' must not be empty.")
        for item in items:
            if not (isinstance(item, str) or _is_number(item)) or not _finite(item):
                raise _error(
                    f"{path}.value: '{op}' list items must be strings or finite "
                    f"numbers (got {item!r})."
                )
        return items
    if op in ("gt", "gte", "lt", "lte"):
        if (
            isinstance(value, bool)
            or not isinstance(value, str | int | float)
            or not _finite(value)
        ):
            raise _error(
                f"{path}.value: '{op}' needs a string or a finite number "
                f"(got {value!r})."
            )
        return value
    if not isinstance(value, str | int | float) or not _finite(value):
        raise _error(
            f"{path}.value: '{op}' needs a string, a finite number or a boolean "
            f"(got {value!r})."
        )
    return value


@dataclasses.dataclass(frozen=True, slots=True)
class ComparisonFilter:
    """``key`` compared with ``value``: ``eq ne gt gte lt lte`` or ``in nin``.

    ``in``/``nin`` take a non-empty list of strings or numbers; the ordering
    operators a string or number; ``eq``/``ne`` also a boolean.
    """

    key: str
    type: ComparisonOp
    value: FilterValue
    path: str = dataclasses.field(default="filters", repr=False, compare=False)

    def __post_init__(self) -> None:
        path = self.path
        if self.type not in COMPARISON_OPS:
            raise _error(
                f"{path}.type: '{self.type}' is not a comparison operator (one of "
                f"{', '.join(COMPARISON_OPS)})."
            )
        if not isinstance(self.key, str) or not self.key.strip():
            raise _error(f"{path}.key: an attribute key must be a non-empty string.")
        if len(self.key) > MAX_ATTRIBUTE_KEY_LENGTH:
            raise _error(
                f"{path}.key: attribute keys are at most {MAX_ATTRIBUTE_KEY_LENGTH} "
                f"characters (got {len(self.key)})."
            )
        object.__setattr__(self, "value", _check_value(self.type, self.value, path))

    def as_dict(self) -> dict[str, Any]:
        value = list(self.value) if isinstance(self.value, tuple) else self.value
        return {"type": self.type, "key": self.key, "value": value}


@dataclasses.dataclass(frozen=True, slots=True)
class CompoundFilter:
    """``and``/``or`` over a non-empty list of filters, which may nest."""

    type: CompoundOp
    filters: tuple[AttributeFilter, ...]
    path: str = dataclasses.field(default="filters", repr=False, compare=False)

    def __post_init__(self) -> None:
        path = self.path
        if self.type not in COMPOUND_OPS:
            raise _error(
                f"{path}.type: '{self.type}' is not a compound operator ('and' or "
                "'or')."
            )
        raw = self.filters
        if isinstance(raw, str | bytes | Mapping) or not isinstance(raw, Sequence):
            raise _error(f"{path}.filters: a compound filter needs a list of filters.")
        if not raw:
            raise _error(
                f"{path}.filters: a compound filter needs at least one filter."
            )
        children = tuple(
            parse_filter(child, path=f"{path}.filters[{index}]")
            for index, child in enumerate(raw)
        )
        object.__setattr__(self, "filters", children)

    def as_dict(self) -> dict[str, Any]:
        return {"type": self.type, "filters": [f.as_dict() for f in self.filters]}


AttributeFilter: TypeAlias = ComparisonFilter | CompoundFilter


def parse_filter(
    value: AttributeFilter | Mapping[str, Any], *, path: str = "filters"
) -> AttributeFilter:
    """A filter tree from its JSON shape (or an already-built filter)."""
    if isinstance(value, ComparisonFilter | CompoundFilter):
        return value
    if not isinstance(value, Mapping):
        raise _error(
            f"{path}: a filter must be a mapping such as "
            "{'type': 'eq', 'key': ..., 'value': ...} "
            f"(got {type(value).__name__})."
        )
    op = value.get("type")
    if op in COMPOUND_OPS:
        allowed = {"type", "filters"}
    elif op in COMPARISON_OPS:
        allowed = {"type", "key", "value"}
    else:
        raise _error(
            f"{path}.type: '{op}' is neither a comparison operator "
            f"({', '.join(COMPARISON_OPS)}) nor a compound one (and, or)."
        )
    unknown = sorted(str(k) for k in value if k not in allowed)
    if unknown:
        raise _error(
            f"{path}: unknown key(s) {', '.join(unknown)} for a '{op}' filter "
            f"(expected {', '.join(sorted(allowed))})."
        )
    missing = sorted(k for k in allowed if k not in value)
    if missing:
        raise _error(f"{path}: a '{op}' filter needs {', '.join(missing)}.")
    if op in COMPOUND_OPS:
        return CompoundFilter(type=op, filters=value["filters"], path=path)
    return ComparisonFilter(key=value["key"], type=op, value=value["value"], path=path)


def _check_weight(name: str, value: object) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
    ):
        raise _error(
            f"ranking {name} must be a finite number >= 0 (got {value!r}).",
            placeholder=name,
        )


@dataclasses.dataclass(frozen=True, slots=True)
class RankingOptions:
    """How results are ranked. Hybrid weights go together or not at all."""

    ranker: Ranker | None = None
    score_threshold: float | None = None
    embedding_weight: float | None = None
    text_weight: float | None = None

    def __post_init__(self) -> None:
        if self.ranker is not None and self.ranker not in RANKERS:
            raise _error(
                f"ranker '{self.ranker}' is not one of {', '.join(RANKERS)}.",
                placeholder="ranker",
            )
        threshold = self.score_threshold
        if threshold is not None and (
            not _is_number(threshold)
            or not _finite(threshold)
            or not 0 <= threshold <= 1
        ):
            raise _error(
                f"score_threshold must be a number from 0 to 1 (got {threshold!r}).",
                placeholder="score_threshold",
            )
        weights = (self.embedding_weight, self.text_weight)
        if (weights[0] is None) != (weights[1] is None):
            raise _error(
                "Hybrid search needs both embedding_weight and text_weight (or "
                "neither).",
                placeholder="embedding_weight",
            )
        if weights[0] is not None:
            _check_weight("embedding_weight", weights[0])
            _check_weight("text_weight", weights[1])
            if weights[0] == 0 and weights[1] == 0:
                raise _error(
                    "embedding_weight and text_weight cannot both be 0.",
                    placeholder="embedding_weight",
                )

    @property
    def is_empty(self) -> bool:
        return (
            self.ranker is None
            and self.score_threshold is None
            and (self.embedding_weight is None)
        )


@dataclasses.dataclass(frozen=True, slots=True)
class FileSearchConfig:
    """Options of the file_search tool.

    ``filters`` takes the JSON shape (a mapping) or a built filter and is
    stored as a frozen ``ComparisonFilter``/``CompoundFilter`` tree.
    """

    vector_store_ids: tuple[str, ...]
    max_results: int | None = None
    filters: AttributeFilter | Mapping[str, Any] | None = None
    ranking: RankingOptions | None = None

    def __post_init__(self) -> None:
        raw = self.vector_store_ids
        if raw is None or isinstance(raw, Mapping):
            raise _error(
                "vector_store_ids must be a list of vector store ids.",
                placeholder="vector_store_ids",
            )
        ids: list[str] = []
        for value in frozen_tuple(raw):
            if not isinstance(value, str) or not value.strip():
                raise _error(
                    f"vector_store_ids must be non-blank strings (got {value!r}).",
                    placeholder="vector_store_ids",
                )
            if value.strip() not in ids:
                ids.append(value.strip())
        if not ids:
            raise _error(
                "file_search needs at least one vector store id.",
                placeholder="vector_store_ids",
            )
        object.__setattr__(self, "vector_store_ids", tuple(ids))
        limit = self.max_results
        if limit is not None and (
            not isinstance(limit, int)
            or isinstance(limit, bool)
            or not 1 <= limit <= MAX_RESULTS_LIMIT
        ):
            raise _error(
                f"max_results must be an integer from 1 to {MAX_RESULTS_LIMIT} "
                f"(got {limit!r}).",
                placeholder="max_results",
            )
        if self.filters is not None:
            object.__setattr__(self, "filters", parse_filter(self.filters))
        if self.ranking is not None and not isinstance(self.ranking, RankingOptions):
            raise _error(
                "ranking must be a RankingOptions instance.", placeholder="ranking"
            )

    @property
    def filter(self) -> AttributeFilter | None:
        """The validated filter tree (``filters`` after normalisation)."""
        value = self.filters
        return value if isinstance(value, ComparisonFilter | CompoundFilter) else None


@dataclasses.dataclass(frozen=True, slots=True)
class FileSearchHit:
    """One retrieved chunk: the file it came from, its score and text."""

    file_id: str
    filename: str | None = None
    score: float | None = None
    text: str = ""
    attributes: Mapping[str, str | float | bool] = dataclasses.field(
        default_factory=lambda: MappingProxyType({})
    )


@dataclasses.dataclass(frozen=True, slots=True)
class FileSearchCall:
    """One ``file_search_call`` item: its queries and (when included) its hits."""

    call_id: str
    status: str
    queries: tuple[str, ...] = ()
    results: tuple[FileSearchHit, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class FileSearchResult:
    """Everything file search produced in a run.

    ``queries`` are unique across calls, ``results`` every hit in call order;
    ``citations`` are the ``file_citation`` annotations of the answer.
    """

    queries: tuple[str, ...] = ()
    results: tuple[FileSearchHit, ...] = ()
    calls: tuple[FileSearchCall, ...] = ()
    citations: tuple[Citation, ...] = ()

    def render(self) -> str:
        lines = [f"queries: {', '.join(repr(q) for q in self.queries)}"]
        for hit in self.results:
            score = f" ({hit.score:.2f})" if hit.score is not None else ""
            lines.append(f"- {hit.filename or hit.file_id}{score}: {hit.text[:200]}")
        return "\n".join(lines)


FILE_SEARCH_DESCRIPTION = (
    "Search the uploaded documents in the configured vector stores and cite them."
)


def file_search_tool(
    config: FileSearchConfig,
    *,
    name: str = "file_search",
    description: str = FILE_SEARCH_DESCRIPTION,
) -> HostedTool[FileSearchConfig]:
    """A file search hosted tool over ``config.vector_store_ids``."""
    if not isinstance(config, FileSearchConfig):
        raise _error("file_search_tool needs a FileSearchConfig.", placeholder="config")
    return HostedTool(
        kind="file_search", name=name, description=description, config=config
    )


FILE_SEARCH_TEMPLATE = """\
Use the file_search tool to look up facts in the uploaded documents before
answering. Cite the files you rely on, and say so when the documents do not
contain the answer instead of guessing."""


class FileSearchSection(HostedToolSection[FileSearchConfig]):
    """A section that documents and exposes the file_search hosted tool."""

    default_key = "file_search"
    default_title = "File Search"
    default_template = FILE_SEARCH_TEMPLATE
    tool_factory = file_search_tool


__all__ = [
    "COMPARISON_OPS",
    "COMPOUND_OPS",
    "FILE_SEARCH_DESCRIPTION",
    "MAX_RESULTS_LIMIT",
    "RANKERS",
    "AttributeFilter",
    "ComparisonFilter",
    "CompoundFilter",
    "FileSearchCall",
    "FileSearchConfig",
    "FileSearchHit",
    "FileSearchResult",
    "FileSearchSection",
    "RankingOptions",
    "file_search_tool",
    "parse_filter",
]


# -- The catalog's view of this kind (``spec.HostedKindSpec``).

_RANKING_OPTIONS = ("ranker", "score_threshold", "embedding_weight", "text_weight")


def _file_search_config(values: Mapping[str, Any]) -> FileSearchConfig:
    """Flat stored options -> the config (the ranking options grouped)."""
    ranking = {name: values.get(name) for name in _RANKING_OPTIONS}
    return FileSearchConfig(
        vector_store_ids=values.get("vector_store_ids") or (),
        max_results=values.get("max_results"),
        filters=values.get("filters"),
        ranking=(
            RankingOptions(**ranking)
            if any(value is not None for value in ranking.values())
            else None
        ),
    )


FILE_SEARCH_SPEC: HostedKindSpec[FileSearchConfig] = HostedKindSpec(
    kind="file_search",
    label="File search",
    config_type=FileSearchConfig,
    tool_factory=file_search_tool,
    build=_file_search_config,
    description="Used when the kind is file_search: the vector stores to search, "
    "how many results, attribute filters and ranking.",
    options=(
        HostedOption(
            "vector_store_ids",
            "lines",
            help="One vector store id per line (at least one).",
        ),
        HostedOption(
            "max_results",
            "integer",
            help=f"1 to {MAX_RESULTS_LIMIT}; empty: provider default.",
        ),
        HostedOption(
            "filters",
            "json",
            label="Attribute filters",
            rows=4,
            help='Optional JSON, e.g. {"type": "eq", "key": "tenant", "value": '
            '"acme"}, or {"type": "and", "filters": [...]}.',
        ),
        HostedOption("ranker", "choice", choices=RANKERS),
        HostedOption("score_threshold", "number", help="0 to 1."),
        HostedOption(
            "embedding_weight",
            "number",
            help="Hybrid search: set both weights or neither.",
        ),
        HostedOption("text_weight", "number"),
    ),
)
