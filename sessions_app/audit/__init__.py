"""The read side of the record: what a run left, shown to people and programs.

``timeline`` merges a session's rows into one ordered trail, read a page at a
time; ``pages`` are the HTML views (list, detail, progress, citations);
``api`` the DRF view sets of ``/api/sessions/``, ``/api/tool-invocations/``
and ``/api/citations/`` with their ``serializers`` and ``pagination``;
``filters`` the query-string filters both share, ``paging`` the keyset
positions of the pages, and ``bidi`` the neutralising of bidirectional
controls in what the pages and the admin show.
"""
