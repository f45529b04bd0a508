"""Starting a replay of a recorded session.

Same prompt, parameters and trust level as the source; the revision is the
source's by default, or another of the prompt's (a hash), ``draft`` (the
catalog as it is now) or a label's. The replay is a new session of whoever
starts it, linked to its source (``replay_of``), and runs like any other:
inline or on a worker, under the policies, approvals, quotas and budgets of
its revision and its user. Callers check who may start it (``access``).
"""

from __future__ import annotations

from typing import Any

import openai
from django.core.exceptions import ValidationError

from sessions_app.models import AgentSession
from sessions_app.runs.starting import start_session

SAME = "same"


def start_replay(
    source: AgentSession,
    *,
    user: Any,
    revision: str = SAME,
    label: str | None = None,
    live_tools: bool = False,
    client: openai.OpenAI | None = None,
) -> AgentSession:
    """Replay ``source`` (module docstring); ``ValidationError`` as
    ``start_session``, or when the source has no revision to replay."""
    if not source.is_finished:
        # its record is not whole yet: what would the replay be compared to?
        raise ValidationError(
            "Only a finished session can be replayed; this one is "
            f"{source.get_status_display().lower()}."
        )
    if label and revision != SAME:
        raise ValidationError("Name a label or a revision to replay against, not both.")
    if revision == SAME and not label:
        if source.revision_id is None:
            raise ValidationError(
                "This session has no catalog revision (it was recorded before "
                "revisions existed): name a revision, a label or the draft."
            )
        revision = source.revision_id
    try:
        return start_session(
            prompt_ref=source.prompt_ref,
            params=source.params,
            user=user,
            trust_level=source.trust_level,
            client=client,
            label=label or None,
            revision=None if label else revision,
            replay_of=source,
            live_tools=live_tools,
        )
    except ValidationError as error:
        if "prompt" not in getattr(error, "error_dict", {}):
            raise
        # a replay's body names no prompt: say which one is gone
        raise ValidationError(
            f"This session's prompt '{source.prompt_ref}' is no longer an enabled "
            "prompt of the catalog: it cannot be replayed."
        ) from error
