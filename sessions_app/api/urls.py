from rest_framework.routers import DefaultRouter

from sessions_app.api.views import AgentSessionViewSet, CitationViewSet

app_name = "sessions_api"

router = DefaultRouter()
router.register("sessions", AgentSessionViewSet, basename="session")
router.register("citations", CitationViewSet, basename="citation")

urlpatterns = router.urls
