"""What a run costs: model token rates, hosted tool fees and the rules that
turn a provider call's usage, or a native call, into US dollars.

The catalog keeps the prices (with the day each takes effect); the service
layer builds a ``PriceSheet`` from the rows in effect when a run starts and
hands it to ``evaluate(pricing=...)``. Everything here is pure: the same
sheet, usage and call always give the same amount, as a ``Decimal`` rounded
to ``COST_PLACES`` (ten decimal places, what the audit rows store), so the
sum of the recorded amounts is the run's total to the last digit.

Billing rules (docs/costs.md says the same):

- Rates are USD per million tokens.
- ``input_tokens`` counts every input token; the cached tokens and the
  cache-write tokens the usage reports (``input_tokens_details.cached_tokens``
  and ``cache_write_tokens``) are parts of it. Uncached input
  (``input - cached - cache_write``) is billed at the input rate, cached input
  at the cached-input rate, cache writes at the cache-write rate.
- ``output_tokens`` includes the reasoning tokens. With a reasoning rate,
  reasoning tokens are billed at it and the rest of the output at the output
  rate; without one (the usual case), all output at the output rate.
- A model is priced by the rate of its exact name, else by the longest rate
  whose name followed by ``-`` starts it (``gpt-5`` prices the snapshot
  ``gpt-5-2025-08-07``; ``gpt-5-mini`` wins over ``gpt-5`` for
  ``gpt-5-mini-2025-08-07``). No match: the call is unpriced (``None``).
- Hosted fees (``fee_of_native``): web search per search (an ``open_page``
  or ``find_in_page`` action is not a search and costs nothing, as the
  provider counts them); file search per call; code interpreter and the
  hosted shell per container, charged at the first call of the run in a
  container it had not seen, by the tool's memory limit (default ``1g``); a
  container the tool references by id was created, and billed, outside the
  run (0); a local shell costs nothing; image generation per image by
  ``<quality>:<size>`` from the call (else the tool's config), an absent or
  ``auto`` quality counting as ``medium`` and an absent or ``auto`` size as
  ``1024x1024``; MCP calls cost only their tokens (0). A kind, variant or
  model with no price is unpriced (``None``), never guessed.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Set
from decimal import ROUND_HALF_EVEN, Decimal, localcontext
from types import MappingProxyType
from typing import Any, Literal

from .deadlines import TokenUsage
from .hosted.code_interpreter import MEMORY_LIMITS

#: Amounts are rounded to this (the audit rows' ``decimal_places=10``).
COST_PLACES = Decimal("1e-10")
MILLION = Decimal(1_000_000)
ZERO = Decimal(0)

FeeUnit = Literal["call", "container", "image"]
FEE_UNITS: tuple[str, ...] = ("call", "container", "image")

#: The variant a container is billed at when its tool sets no memory limit.
DEFAULT_CONTAINER_MEMORY = "1g"
#: What an ``auto`` (or absent) image quality and size are billed as.
DEFAULT_IMAGE_QUALITY = "medium"
DEFAULT_IMAGE_SIZE = "1024x1024"
#: Web search actions that are not billed as searches.
UNBILLED_WEB_ACTIONS = frozenset({"open_page", "find_in_page"})
#: Kinds whose calls cost only tokens.
TOKEN_ONLY_KINDS = frozenset({"mcp", "apply_patch"})


def rounded(amount: Decimal) -> Decimal:
    """``amount`` at ``COST_PLACES`` (half-even, as a ledger rounds), however
    large (absurd usage from a provider must not stop the run: the audit
    caps what it stores)."""
    with localcontext() as context:
        context.prec = max(context.prec, amount.adjusted() + 12)
        return amount.quantize(COST_PLACES, rounding=ROUND_HALF_EVEN)


def _amount(name: str, value: Decimal) -> Decimal:
    if not isinstance(value, Decimal):
        raise TypeError(f"{name} must be a Decimal, not {type(value).__name__}.")
    if not value.is_finite() or value < 0:
        raise ValueError(f"{name} must be a finite, non-negative amount: {value}.")
    return value


@dataclasses.dataclass(frozen=True, slots=True)
class ModelRate:
    """A model's token rates, USD per million tokens (``reasoning``: ``None``
    bills reasoning tokens as output, which they are part of)."""

    model: str
    input: Decimal
    cached_input: Decimal
    cache_write: Decimal
    output: Decimal
    reasoning: Decimal | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model.strip():
            raise ValueError("A model rate needs a model name.")
        for name in ("input", "cached_input", "cache_write", "output"):
            _amount(name, getattr(self, name))
        if self.reasoning is not None:
            _amount("reasoning", self.reasoning)

    def cost(self, usage: TokenUsage) -> Decimal:
        """What ``usage`` costs at these rates (see the module's rules).

        Counts are clamped so a provider's inconsistent usage (more cached
        than input tokens, a negative count) is never billed twice or
        negatively."""
        inputs, outputs = max(usage.input_tokens, 0), max(usage.output_tokens, 0)
        cached = min(max(usage.cached_tokens, 0), inputs)
        written = min(max(usage.cache_write_tokens, 0), inputs - cached)
        plain = inputs - cached - written
        total = (
            plain * self.input + cached * self.cached_input + written * self.cache_write
        )
        if self.reasoning is None:
            total += outputs * self.output
        else:
            reasoning = min(max(usage.reasoning_tokens, 0), outputs)
            total += (outputs - reasoning) * self.output
            total += reasoning * self.reasoning
        return rounded(total / MILLION)


@dataclasses.dataclass(frozen=True, slots=True)
class HostedFee:
    """The fee of one unit of a hosted kind; ``variant`` is ``""`` for the
    kind's default, a memory limit for containers, ``<quality>:<size>`` for
    images."""

    kind: str
    unit: FeeUnit
    price: Decimal
    variant: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str) or not self.kind:
            raise ValueError("A hosted fee needs a kind.")
        if self.unit not in FEE_UNITS:
            raise ValueError(
                f"unit {self.unit!r} is not one of {', '.join(FEE_UNITS)}."
            )
        _amount("price", self.price)


@dataclasses.dataclass(frozen=True, slots=True)
class NativeFee:
    """A native call's fee (``None``: no price) and the container it opened
    (the caller adds it to the containers the run has seen)."""

    amount: Decimal | None
    container: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class PriceSheet:
    """The prices in effect for a run: model rates by name, hosted fees by
    ``(kind, variant)``."""

    models: Mapping[str, ModelRate] = dataclasses.field(
        default_factory=lambda: MappingProxyType({})
    )
    fees: Mapping[tuple[str, str], HostedFee] = dataclasses.field(
        default_factory=lambda: MappingProxyType({})
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "models", MappingProxyType(dict(self.models)))
        object.__setattr__(self, "fees", MappingProxyType(dict(self.fees)))

    @classmethod
    def of(cls, rates: Any = (), fees: Any = ()) -> PriceSheet:
        """A sheet from iterables of ``ModelRate`` and ``HostedFee``."""
        return cls(
            models={rate.model: rate for rate in rates},
            fees={(fee.kind, fee.variant): fee for fee in fees},
        )

    # -- tokens ----------------------------------------------------------

    def rate_for(self, model: str) -> ModelRate | None:
        """The rate of ``model``: exact name, else the longest name that
        followed by ``-`` starts it."""
        exact = self.models.get(model)
        if exact is not None:
            return exact
        best: ModelRate | None = None
        for name, rate in self.models.items():
            if model.startswith(name + "-") and (
                best is None or len(name) > len(best.model)
            ):
                best = rate
        return best

    def cost_of_usage(self, model: str, usage: TokenUsage) -> Decimal | None:
        """What a provider call with ``usage`` on ``model`` costs (``None``:
        the model has no rate)."""
        rate = self.rate_for(model)
        return rate.cost(usage) if rate is not None else None

    def least_input_cost(self, model: str, tokens: int) -> Decimal:
        """The least ``tokens`` of input on ``model`` can cost (0 without a
        rate): each at the cheapest of its input rates (cached input, when
        the cache holds all of them). A resent history costs at least this."""
        rate = self.rate_for(model)
        if rate is None or tokens <= 0:
            return ZERO
        cheapest = min(rate.input, rate.cached_input, rate.cache_write)
        return rounded(tokens * cheapest / MILLION)

    # -- hosted tools ------------------------------------------------------

    def fee(self, kind: str, variant: str = "") -> Decimal | None:
        found = self.fees.get((kind, variant))
        return found.price if found is not None else None

    def fee_of_native(
        self,
        kind: str,
        params: Mapping[str, Any],
        config: Any = None,
        seen_containers: Set[str] = frozenset(),
    ) -> NativeFee:
        """The fee of one native call of ``kind``: ``params`` as the codec read
        them from the call, ``config`` the hosted tool's config (memory limit,
        image quality and size), ``seen_containers`` the containers the run
        was already charged for."""
        if kind in TOKEN_ONLY_KINDS:
            return NativeFee(ZERO)
        if kind == "web_search":
            if _text(params.get("action")) in UNBILLED_WEB_ACTIONS:
                return NativeFee(ZERO)
            return NativeFee(self.fee(kind))
        if kind in ("code_interpreter", "shell"):
            return self._container_fee(kind, params, config, seen_containers)
        if kind == "image_generation":
            return NativeFee(self.fee(kind, image_variant(params, config)))
        return NativeFee(self.fee(kind))

    def _container_fee(
        self,
        kind: str,
        params: Mapping[str, Any],
        config: Any,
        seen: Set[str],
    ) -> NativeFee:
        if not _makes_containers(params, config):
            return NativeFee(ZERO)  # a local shell, or an existing container
        # A call whose container id is missing counts as one unnamed container.
        container_id = params.get("container_id")
        if not isinstance(container_id, str):
            container_id = ""
        container = f"{kind}:{container_id.strip()}"
        if container in seen:
            return NativeFee(ZERO)
        memory = _text(getattr(config, "memory_limit", None))
        return NativeFee(
            self.fee(kind, memory or DEFAULT_CONTAINER_MEMORY), container=container
        )


def _makes_containers(params: Mapping[str, Any], config: Any) -> bool:
    """Whether the tool's calls run in containers the provider creates for the
    run (and bills): decided by the tool's config, not by the call item, as a
    hosted shell's call reports its auto-created container as a
    ``container_reference`` too (the API names no other container type on a
    call). Without a config the call is all there is: only ``local`` is free."""
    environment = getattr(config, "environment", None)
    if isinstance(environment, str):  # the shell: where its commands run
        return environment.strip().lower() == "container_auto"
    if config is not None and _text(getattr(config, "container_id", None)):
        return False  # code interpreter in an existing container
    return _text(params.get("environment")) != "local"


#: The unit each priced kind is billed by (a kind registered later: per call).
UNIT_OF_KIND: Mapping[str, str] = MappingProxyType(
    {
        "web_search": "call",
        "file_search": "call",
        "code_interpreter": "container",
        "shell": "container",
        "image_generation": "image",
    }
)
IMAGE_QUALITIES: tuple[str, ...] = ("low", "medium", "high")
_IMAGE_VARIANT = re.compile(r"(low|medium|high):[1-9][0-9]{0,5}x[1-9][0-9]{0,5}")


def fee_problem(kind: str, unit: str, variant: str) -> tuple[str, str] | None:
    """Why a price for ``(kind, unit, variant)`` would never be charged, as
    ``(the field at fault, a message)`` (the admin shows it), or ``None``."""
    if kind in TOKEN_ONLY_KINDS:
        return "kind", (
            f"{kind} calls cost only their tokens (priced by the model); a fee "
            "would never be charged."
        )
    expected = UNIT_OF_KIND.get(kind, "call")
    if unit != expected:
        return "unit", f"{kind} is billed per {expected}, not per {unit}."
    if unit == "call" and variant:
        return "variant", f"{kind} has one price per call: leave the variant empty."
    if unit == "container" and variant not in MEMORY_LIMITS:
        return "variant", (
            f"A container's variant is its memory limit: one of "
            f"{', '.join(MEMORY_LIMITS)} (a tool without one is billed as "
            f"{DEFAULT_CONTAINER_MEMORY})."
        )
    if unit == "image" and not _IMAGE_VARIANT.fullmatch(variant):
        return "variant", (
            'An image\'s variant is "<quality>:<size>", quality one of '
            f"{', '.join(IMAGE_QUALITIES)} and size WIDTHxHEIGHT, e.g. "
            f'"medium:1024x1024" ("auto" is billed as {DEFAULT_IMAGE_QUALITY}:'
            f"{DEFAULT_IMAGE_SIZE})."
        )
    return None


def image_variant(params: Mapping[str, Any], config: Any = None) -> str:
    """The ``<quality>:<size>`` an image is billed as (see the module's rules)."""
    quality = _text(params.get("quality")) or _text(getattr(config, "quality", None))
    size = _text(params.get("size")) or _text(getattr(config, "size", None))
    if quality in ("", "auto"):
        quality = DEFAULT_IMAGE_QUALITY
    if size in ("", "auto"):
        size = DEFAULT_IMAGE_SIZE
    return f"{quality}:{size}"


def _text(value: Any) -> str:
    return value.strip().lower() if isinstance(value, str) else ""


__all__ = [
    "COST_PLACES",
    "DEFAULT_CONTAINER_MEMORY",
    "DEFAULT_IMAGE_QUALITY",
    "DEFAULT_IMAGE_SIZE",
    "FEE_UNITS",
    "IMAGE_QUALITIES",
    "UNIT_OF_KIND",
    "FeeUnit",
    "HostedFee",
    "ModelRate",
    "NativeFee",
    "PriceSheet",
    "fee_problem",
    "image_variant",
    "rounded",
]
