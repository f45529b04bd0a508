"""Settings for WINK Catalog, read from the environment only.

Every variable is documented in README.md and .env.example. Nothing here reads a
file other than the environment; secrets are never written anywhere.

Django reads this package; its settings are kept by topic, each module read in
this order (one may read an earlier one's values, never a later one's):

- ``core``: Django itself: debug, the secret key, hosts, apps, the database,
  static files, logging and error reports;
- ``api``: the API's limits, the shared cache, the sign-in limits, DRF and the
  OpenAPI schema;
- ``runs``: runs, workers, approvals, releases, budgets, the sweeper, Celery;
- ``integrations``: the model provider, MCP, OpenTelemetry, approval
  notifications and the modules of tool handlers;
- ``security``: CSP, CSRF, TLS behind a proxy, the referrer policy, HTTPS.
"""

# In the order above (not sorted: each may read the ones before).
from wink_project.settings.core import *  # noqa: F403, I001
from wink_project.settings.api import *  # noqa: F403
from wink_project.settings.runs import *  # noqa: F403
from wink_project.settings.integrations import *  # noqa: F403
from wink_project.settings.security import *  # noqa: F403
