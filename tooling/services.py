"""Catalog workflows: preview a prompt, freeze it into a revision, build its adapter.

The session lifecycle (start, claim, run, resume, cancel, sweep) lives in
``sessions_app.services``; it calls these. Bad input raises
``django.core.exceptions.ValidationError`` before anything is written.
"""

from __future__ import annotations

import dataclasses
import re
import types
from collections.abc import Mapping
from typing import Any

import openai
from django.conf import settings
from django.core.exceptions import ValidationError

from tooling import assembly, releases, shell_executors
from tooling.models import CatalogRevision, PromptTemplate, TrustLevel
from tooling.providers import build_client
from tooling.runtime import (
    OpenAIAdapter,
    Prompt,
    PromptError,
    PromptEvaluationError,
    RenderedPrompt,
)
from tooling.runtime.adapters.openai import redact_request

HASH = re.compile(r"[0-9a-f]{64}")
# Previews never send: the adapter only needs the client's retry setting.
_PREVIEW_CLIENT: Any = types.SimpleNamespace(max_retries=0, timeout=600.0)


@dataclasses.dataclass(frozen=True)
class PromptPreview:
    """What a run of the template would send first, and the revision it runs."""

    prompt: Prompt
    rendered: RenderedPrompt
    request: dict[str, Any]
    revision: dict[str, Any]

    @property
    def revision_hash(self) -> str:
        return CatalogRevision.hash_of(self.revision)

    @property
    def withheld_tools(self) -> list[dict[str, str]]:
        """The hosted tools the trust level left out, as stored on a session."""
        return [tool.as_dict() for tool in self.rendered.withheld_hosted_tools]

    @property
    def text(self) -> str:
        return self.rendered.text

    @property
    def safe_request(self) -> dict[str, Any]:
        """The request with credentials masked: what may be shown or stored."""
        return redact_request(self.request)

    @property
    def options(self) -> dict[str, Any]:
        """The request without ``input`` and ``tools``."""
        return {k: v for k, v in self.request.items() if k not in ("input", "tools")}

    @property
    def settings(self) -> dict[str, Any]:
        """The prompt's frozen settings: model, limits, output schema ..."""
        return dict(self.revision["prompt"])


def build_adapter(
    *, revision: Mapping[str, Any], client: openai.OpenAI | None = None
) -> OpenAIAdapter:
    """The adapter that runs ``revision`` (a ``CatalogRevision.data``).

    Retries and the per-attempt timeout are the client's (``build_client``
    sets them from ``WINK_OPENAI_MAX_RETRIES`` and ``WINK_OPENAI_TIMEOUT``)."""
    prompt = revision["prompt"]
    return OpenAIAdapter(
        client=client or build_client(),
        model=prompt["model"],
        model_capabilities=assembly.model_capabilities_of(revision),
        max_turns=prompt["max_turns"],
        shell_executors=shell_executors.registry(),
    )


def build_prompt(*, revision: Mapping[str, Any], digest: str | None = None) -> Prompt:
    """The runtime prompt of a revision; ``ValidationError`` if it cannot be
    built any more (for example a handler that is no longer registered).
    With its ``digest`` (its hash), built once per process while nothing it
    depends on changes (``assembly.revision_prompt``)."""
    try:
        if digest is not None:
            return assembly.revision_prompt(digest, revision)
        return assembly.thaw_prompt(revision)
    except PromptError as error:
        raise ValidationError(
            f"The catalog revision cannot be built: {error.message}"
        ) from error


def preview_prompt(
    *,
    template: PromptTemplate,
    params: Mapping[str, Any] | None = None,
    trust_level: str = TrustLevel.STANDARD,
) -> PromptPreview:
    """Freeze, build, render and serialise ``template`` without calling the
    provider, for a session at ``trust_level``."""
    _check_input(params, trust_level)
    try:
        revision = assembly.freeze_template(template)
    except PromptError as error:
        raise ValidationError(
            f"The catalog entry is invalid: {error.message}"
        ) from error
    return preview_revision(revision=revision, params=params, trust_level=trust_level)


def preview_revision(
    *,
    revision: dict[str, Any],
    params: Mapping[str, Any] | None = None,
    trust_level: str = TrustLevel.STANDARD,
) -> PromptPreview:
    """Build, render and serialise a frozen revision (a ``CatalogRevision.data``)
    without calling the provider; ``ValidationError`` as ``preview_prompt``."""
    _check_input(params, trust_level)
    try:
        prompt = assembly.thaw_prompt(revision)
    except PromptError as error:
        raise ValidationError(
            f"The catalog entry is invalid: {error.message}"
        ) from error
    problems = assembly.parameter_problems(
        assembly.prompt_parameters(revision), params or {}
    )
    if problems:
        raise ValidationError({"params": problems})
    try:
        rendered = prompt.render(values=params or {}, trust_level=trust_level)
    except PromptError as error:
        raise ValidationError({"params": error.message}) from error
    adapter = build_adapter(revision=revision, client=_PREVIEW_CLIENT)
    try:
        request = adapter.request_preview(rendered)
    except PromptEvaluationError as error:
        raise ValidationError(error.message) from error
    return PromptPreview(
        prompt=prompt, rendered=rendered, request=request, revision=revision
    )


def _check_input(params: Any, trust_level: str) -> None:
    if params is not None and not isinstance(params, Mapping):
        raise ValidationError({"params": "Params must be a JSON object."})
    if trust_level not in TrustLevel.values:
        raise ValidationError(
            {
                "trust_level": f"Unknown trust level '{trust_level}'; expected one "
                f"of: {', '.join(TrustLevel.values)}."
            }
        )


def preview_run(
    *,
    template: PromptTemplate,
    params: Mapping[str, Any] | None = None,
    trust_level: str = TrustLevel.STANDARD,
    label: str | None = None,
    revision: str | None = None,
) -> tuple[PromptPreview, str | None]:
    """What a run of ``template`` starts from, previewed, and the label it
    started from (docs/releases.md):

    - ``revision``: a stored revision of the template (its hash), or ``draft``:
      the catalog as it is now;
    - ``label``: the revision the template's label points at;
    - neither: the revision of its ``WINK_DEFAULT_LABEL`` label when it has
      one (``template.released_revision``, read with it by
      ``assembly.load_template``), the catalog as it is now otherwise.
    """
    if label and revision:
        raise ValidationError("Name a label or a revision to run, not both.")
    if revision is None and not label:
        released = getattr(template, "released_revision", None)
        if released is None and not hasattr(template, "released_revision"):
            found = releases.current(template, settings.WINK_DEFAULT_LABEL)
            released = found.revision_id if found is not None else None
        if released is None:
            revision = releases.DRAFT
        else:
            label, revision = settings.WINK_DEFAULT_LABEL, released
    elif label:
        revision = releases.label_revision(template, label).hash
    if revision == releases.DRAFT:
        preview = preview_prompt(
            template=template, params=params, trust_level=trust_level
        )
        return preview, None
    data = None
    if isinstance(revision, str) and HASH.fullmatch(revision):
        data = assembly.revision_data(revision)
    if data is None or CatalogRevision.ref_of(data) != template.ref:
        raise ValidationError(
            {"revision": f"No revision of {template.ref} has the hash '{revision}'."}
        )
    preview = preview_revision(revision=data, params=params, trust_level=trust_level)
    return preview, label or None


def record_revision(preview: PromptPreview) -> CatalogRevision:
    """The stored revision of a preview (shared by every identical one)."""
    return CatalogRevision.objects.get_or_create_for(preview.revision)


def unsaved_revision(preview: PromptPreview) -> CatalogRevision:
    """The revision of a preview, for the caller to write with its session
    (``CatalogRevisionQuerySet.unsaved_for``)."""
    return CatalogRevision.objects.unsaved_for(preview.revision)
