from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.permissions import AllowAny

from wink_project.signin import SignInView

# The schema and its documentation are public: a product's API is not secret
# (every operation still needs credentials).
api_docs_permissions = [AllowAny]

# The admin says whose it is (its index links to the audit pages:
# templates/admin/index.html).
admin.site.site_header = "WINK Catalog"
admin.site.site_title = "WINK Catalog"
admin.site.index_title = "WINK Catalog"

urlpatterns = [
    path("admin/", admin.site.urls),
    # Every account logs in here (the admin's login takes staff only).
    # Failed sign-ins are limited, here and at the admin's login (signin.py).
    path("accounts/login/", SignInView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path(
        "api/schema/",
        SpectacularAPIView.as_view(permission_classes=api_docs_permissions),
        name="schema",
    ),
    path(
        "api/docs/",
        # Its script is a URL of its own (?script), not inline: the CSP allows
        # no inline script.
        SpectacularSwaggerSplitView.as_view(
            url_name="schema",
            permission_classes=api_docs_permissions,
            # A page and its script, nothing to describe: DRF's OPTIONS answer
            # has no template for this view's HTML renderer (a 500).
            http_method_names=["get", "head"],
        ),
        name="swagger-ui",
    ),
    path("api/", include("tooling.api.urls")),
    path("api/", include("sessions_app.api.urls")),
    path("audit/", include("sessions_app.urls")),
    path(
        "",
        RedirectView.as_view(pattern_name="sessions_app:session-list"),
        name="home",
    ),
]
