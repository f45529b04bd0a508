from django.urls import path
from rest_framework.routers import SimpleRouter

from tooling.api.changes import ChangeViewSet
from tooling.api.views import HostedToolViewSet, PromptViewSet, ToolViewSet

app_name = "catalog_api"

router = SimpleRouter()
router.register("tools", ToolViewSet, basename="tool")
router.register("hosted-tools", HostedToolViewSet, basename="hostedtool")
router.register("catalog-changes", ChangeViewSet, basename="change")

urlpatterns = [
    path("prompts/", PromptViewSet.as_view({"get": "list"}), name="prompt-list"),
    path(
        "prompts/<str:namespace>/<str:key>/",
        PromptViewSet.as_view({"get": "retrieve"}),
        name="prompt-detail",
    ),
    path(
        "prompts/<str:namespace>/<str:key>/preview/",
        PromptViewSet.as_view({"post": "preview"}),
        name="prompt-preview",
    ),
    *router.urls,
]
