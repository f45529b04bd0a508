"""Who may see and do what with sessions: one rule for the API, the pages and
the admin.

- A user sees the sessions they started; ``view_all_sessions`` (the "Auditors"
  group) sees every session. A session someone may not see does not exist for
  them: every route answers 404, exactly as for a missing one.
- Starting a run needs ``start_session`` (the "Runners" group); the trusted
  level also needs ``start_trusted_session``.
- Cancelling needs to be the session's author or hold ``cancel_any_session``.
- Deciding an approval needs ``decide_any_approval`` (the "Approvers" group),
  or the permission or membership of the group its policy names
  (``approvers``). A user who may decide an approval sees it; so does whoever
  sees its session (read-only). Under four eyes (``ApprovalRequest.four_eyes``)
  the run's author may not decide it, whatever they hold (superusers too).

- Reading catalog revisions (pages and API) needs ``view_catalogrevision``.

Superusers hold every permission.
"""

from __future__ import annotations

from typing import Any

from tooling.models import TrustLevel

VIEW_ALL = "sessions_app.view_all_sessions"
START = "sessions_app.start_session"
START_TRUSTED = "sessions_app.start_trusted_session"
CANCEL_ANY = "sessions_app.cancel_any_session"
DECIDE_ANY = "sessions_app.decide_any_approval"
VIEW_REVISIONS = "tooling.view_catalogrevision"
VIEW_CHANGES = "tooling.view_catalogchange"
REVISIONS_DENIED = (
    "Reading catalog revisions needs the view_catalogrevision permission."
)


def is_user(user: Any) -> bool:
    return bool(user is not None and getattr(user, "is_authenticated", False))


def sees_all(user: Any) -> bool:
    return is_user(user) and bool(user.has_perm(VIEW_ALL))


def may_view_revisions(user: Any) -> bool:
    """Catalog revisions (their pages and API): ``view_catalogrevision``,
    which catalog staff are given and the Auditors group holds."""
    return is_user(user) and bool(user.has_perm(VIEW_REVISIONS))


def may_view_changes(user: Any) -> bool:
    """The catalog's change history (who changed what, why): wherever it is
    shown, a revision's page included, ``view_catalogchange``."""
    return is_user(user) and bool(user.has_perm(VIEW_CHANGES))


def may_start(user: Any) -> bool:
    return is_user(user) and bool(user.has_perm(START))


def may_start_at(user: Any, trust_level: str) -> bool:
    """Anyone who may start may lower the level; ``trusted`` needs its own
    permission."""
    if trust_level != TrustLevel.TRUSTED:
        return True
    return is_user(user) and bool(user.has_perm(START_TRUSTED))


def may_cancel(user: Any, session: Any) -> bool:
    """The session's author, or a user with ``cancel_any_session``."""
    if not is_user(user):
        return False
    return bool(session.created_by_id == user.pk or user.has_perm(CANCEL_ANY))


OWN_RUN = "You started this run; a second person must decide it."


def is_own_run(user: Any, approval: Any) -> bool:
    """Four eyes: ``approval`` keeps its run's author from deciding it, and
    ``user`` is that author."""
    return bool(
        approval.four_eyes
        and is_user(user)
        and approval.session.created_by_id is not None
        and approval.session.created_by_id == user.pk
    )


def may_decide(user: Any, approval: Any) -> bool:
    """Superusers, holders of ``decide_any_approval``, and the approvers the
    approval's policy names: its ``permission``'s holders, its ``group``'s
    members; under four eyes never the run's author (``is_own_run``).
    ``ApprovalRequest.objects.decidable_by`` is the same rule."""
    if not is_user(user) or not getattr(user, "is_active", False):
        return False
    if is_own_run(user, approval):
        return False
    if user.has_perm(DECIDE_ANY):
        return True
    approvers = approval.approvers if isinstance(approval.approvers, dict) else {}
    permission = approvers.get("permission")
    if isinstance(permission, str) and permission and user.has_perm(permission):
        return True
    group = approvers.get("group")
    return bool(
        isinstance(group, str) and group and user.groups.filter(name=group).exists()
    )
