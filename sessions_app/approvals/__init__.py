"""Approvals: a run that waits for a human decision, and the decision.

``decisions`` approves or denies a request and resumes its run (inline
without a broker); ``expiry`` denies overdue requests automatically (the
sweeper calls it) and holds the requeue both share; ``notifications`` tells
the approvers a request is waiting; ``inbox`` is who sees which requests.
The interfaces: ``pages`` (the inbox page and a request's page), ``api``
(``/api/approvals/``, with its ``serializers``), ``admin`` (the admin inbox and
its bulk actions) and ``filters`` (the query-string filters pages and API
share). The model is ``sessions_app.models.ApprovalRequest``.

The run's modules may import ``expiry`` and ``notifications`` (below them);
``decisions`` and the interfaces sit above the run's services.
"""
