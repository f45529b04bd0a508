"""The catalog's change history (docs/catalog-history.md, ADR 0023).

- ``snapshot``: a catalog row as history keeps it (its fields and the lists
  edited on its admin page), its ``version`` and the diff of two snapshots.
- ``recording``: ``record`` writes one ``CatalogChange``; ``prompts_touched``
  names the prompts a row reaches; ``stale_edit`` tells a form opened before
  someone else's change who changed what.
- ``admin``: the admin mixin that records every save, disable and delete,
  refuses a stale form and shows the history with its diffs.
"""
