"""The project's app configurations."""

from django.contrib.admin.apps import AdminConfig as DjangoAdminConfig


class AdminConfig(DjangoAdminConfig):
    """``django.contrib.admin`` whose default site refuses repeated failed
    sign-ins (``wink_project.signin.AdminSite``), as Django's documentation
    overrides the default admin site."""

    default_site = "wink_project.signin.AdminSite"
