from rest_framework.routers import SimpleRouter

from sessions_app.api.views import (
    AgentSessionViewSet,
    CitationViewSet,
    ToolInvocationViewSet,
)

app_name = "sessions_api"

router = SimpleRouter()
router.register("sessions", AgentSessionViewSet, basename="session")
router.register("tool-invocations", ToolInvocationViewSet, basename="toolinvocation")
router.register("citations", CitationViewSet, basename="citation")

urlpatterns = router.urls
