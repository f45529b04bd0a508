from django.apps import AppConfig


class ToolingConfig(AppConfig):
    name = "tooling"
    verbose_name = "Catalog"
    default_auto_field = "django.db.models.BigAutoField"
