"""The catalog admin: a module per entry kind, each registering its admins
when imported (Django's autodiscovery imports this package).

``tools`` the function and hosted tools; ``policies``; ``sections``;
``prompts`` the prompt templates and their preview page (``sessions_app.admin``
adds the run view); ``model_capabilities``; ``pricing`` the price list and
the users' daily budgets. ``guarded_delete`` refuses deleting rows saved
prompts depend on.
"""

from . import (  # noqa: F401  (each registers its admins)
    model_capabilities,
    policies,
    pricing,
    prompts,
    sections,
    tools,
)
