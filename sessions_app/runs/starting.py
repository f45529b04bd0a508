"""A run's start: validate, freeze the prompt as a catalog revision, store
the session (under the user's daily budget), then dispatch it: inline without
a broker, on a Celery worker otherwise (``dispatch.py``)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import openai
from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils import timezone

from sessions_app.costs import budgets
from sessions_app.models import AgentSession
from sessions_app.runs import dispatch, store
from sessions_app.runs.running import run_session
from tooling import assembly
from tooling import services as catalog
from tooling.governance import run_deadline
from tooling.models import PromptTemplate, TrustLevel
from tooling.runtime.text import storable

logger = logging.getLogger(__name__)

Status = AgentSession.Status


def start_session(
    *,
    prompt_ref: str,
    params: Mapping[str, Any] | None = None,
    user: Any = None,
    trust_level: str = TrustLevel.STANDARD,
    client: openai.OpenAI | None = None,
    label: str | None = None,
    revision: str | None = None,
    replay_of: AgentSession | None = None,
    live_tools: bool = False,
) -> AgentSession:
    """Validate, snapshot and record a new session, then run it: inline without
    a broker (the returned session is finished), on a worker otherwise (it is
    ``queued``).

    The run executes the revision ``label`` points at, or ``revision`` (a
    hash, or ``draft``: the catalog now), or by default its prompt's
    ``WINK_DEFAULT_LABEL`` label's, the catalog now without one
    (``tooling.services.preview_run``; docs/releases.md).

    ``replay_of``: the run replays that session (its local calls answered
    from its record; ``live_tools``: read-only tools run live;
    ``sessions_app.replays``).

    ``trust_level`` decides which hosted tools the run is offered; callers
    check who may start and at which level (``access``). ``client`` replaces
    the provider client of an inline run (tests).

    Raises ``budgets.DailyBudgetExceeded`` before recording anything when
    ``user`` has spent their daily budget; otherwise the run may spend at most
    its template's budget, capped by what is left of the user's day, which
    simultaneous starts share (``budgets.reserving``).
    """
    try:
        template = assembly.load_template(prompt_ref)
    except PromptTemplate.DoesNotExist:
        raise ValidationError(
            {"prompt": f"No enabled prompt template is named '{prompt_ref}'."}
        ) from None
    # read before the preview uses it up: prices are cached per generation
    catalog_token = template.__dict__.get("catalog_token")
    if params is not None and not isinstance(params, Mapping):
        raise ValidationError({"params": "Params must be a JSON object."})
    if storable(dict(params or {}))[1]:
        raise ValidationError(
            {
                "params": "Params must not contain NUL bytes, lone surrogates or "
                "non-finite numbers."
            }
        )
    preview, started_from = catalog.preview_run(
        template=template,
        params=params or {},
        trust_level=trust_level,
        label=label,
        revision=revision,
    )
    limit = budgets.daily_limit(user)
    if limit is None:  # nothing to share
        session = _new_session(
            template,
            preview,
            params,
            trust_level,
            user,
            cost_budget=budgets.session_budget(template.max_cost_per_session, None),
            label=started_from,
            replay=(replay_of, live_tools),
        )
    else:
        # what is left of the day is read and the session that takes its share
        # written under the user's lock: the next start reads the day with it
        with budgets.reserving(
            user, limit=limit, template_budget=template.max_cost_per_session
        ) as cost_budget:
            session = _new_session(
                template,
                preview,
                params,
                trust_level,
                user,
                cost_budget=cost_budget,
                label=started_from,
                replay=(replay_of, live_tools),
            )
    if not dispatch.runs_inline():
        # the stored revision may be older than the one built here: read it
        # if asked (only its hash is needed)
        AgentSession._meta.get_field("revision").delete_cached_value(session)
        dispatch.dispatch_run(session.pk, deadline_seconds=session.deadline_seconds)
        return session
    pricing = assembly.price_sheet(token=catalog_token)
    return run_session(
        session_id=session.pk,
        client=client,
        new=session,
        prompt=preview.prompt,
        pricing=pricing,
    )


def _new_session(
    template: PromptTemplate,
    preview: catalog.PromptPreview,
    params: Mapping[str, Any] | None,
    trust_level: str,
    user: Any,
    *,
    cost_budget: Decimal | None = None,
    label: str | None = None,
    replay: tuple[AgentSession | None, bool] = (None, False),
) -> AgentSession:
    """The session of a new run, stored with its catalog revision (an
    identical one already stored is left as it is, not read). The session's
    ``revision`` is the one built here: its data is the stored one's (same
    hash), its ``created_at`` not necessarily."""
    revision = catalog.unsaved_revision(preview)
    deadline_seconds = run_deadline(preview.settings.get("deadline_seconds"))
    session = AgentSession(
        prompt=template,
        prompt_ref=template.ref,
        label=label,
        replay_of=replay[0],
        replay_live_tools=replay[1] if replay[0] is not None else None,
        params=dict(params or {}),
        trust_level=trust_level,
        withheld_tools=preview.withheld_tools,
        model=preview.settings.get("model", template.model),
        provider=settings.WINK_PROVIDER,
        rendered_prompt=preview.text,
        tools_payload=preview.safe_request.get("tools", []),
        request_options=preview.options,
        revision=revision,
        deadline_seconds=deadline_seconds,
        cost_budget=cost_budget,
        dispatched_at=timezone.now(),
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
    store.create(revision, session)
    return session
