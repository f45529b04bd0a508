import logging

from django.apps import AppConfig
from django.conf import settings

logger = logging.getLogger(__name__)


class ToolingConfig(AppConfig):
    name = "tooling"
    verbose_name = "Catalog"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from tooling import checks  # noqa: F401  (registers the system checks)
        from tooling.handlers import load_handler_modules, registry

        # A refused module is left out and logged here; `manage.py check`
        # (and so migrate and runserver) fails on it (tooling.E001).
        for error in load_handler_modules(settings.WINK_HANDLER_MODULES, registry):
            logger.error("%s", error)
