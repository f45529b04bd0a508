"""What runs cost: reports, the cost page and its API, and daily budgets.

``reports`` sums recorded costs by day, user, prompt, model or tool over a
``ranges.DateRange``; ``pages`` is the cost page and its CSV export, ``api``
``/api/costs/``; ``budgets`` refuses a run that would pass its user's daily
budget (the run's services check it when a run starts).
"""
