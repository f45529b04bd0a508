from django.urls import path
from rest_framework.routers import SimpleRouter

from sessions_app.approvals.api import ApprovalRequestViewSet
from sessions_app.audit.api import (
    AgentSessionViewSet,
    CitationViewSet,
    ToolInvocationViewSet,
)
from sessions_app.costs.api import CostReportView
from sessions_app.revisions.api import RevisionViewSet

app_name = "sessions_api"

router = SimpleRouter()
router.register("sessions", AgentSessionViewSet, basename="session")
router.register("tool-invocations", ToolInvocationViewSet, basename="toolinvocation")
router.register("citations", CitationViewSet, basename="citation")
router.register("approvals", ApprovalRequestViewSet, basename="approval")
router.register("revisions", RevisionViewSet, basename="revision")

urlpatterns = [
    *router.urls,
    path("costs/", CostReportView.as_view(), name="costs"),
]
