"""What runs cost: reports, the cost page and its API, and daily budgets.

``reports`` sums recorded costs by day, user, prompt, model or tool over a
``ranges.DateRange``, merging the days rolled up (``rollup`` writes them,
``rolled_up`` reads them) with the rest read from the rows (``live``);
``from_rows`` is the rows-only answer and ``spend`` the types they share.
``pages`` is the cost page and its CSV export, ``api`` ``/api/costs/``;
``budgets`` refuses a run that would pass its user's daily budget (the run's
services check it when a run starts).
"""
