"""Catalog revisions as people read them: one revision (``reading``), the
difference of two (``compare``), their runs, neighbours and the changes that
produced them (``queries``), and the pages and API that show them."""
