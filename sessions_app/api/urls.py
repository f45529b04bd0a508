from django.urls import path
from rest_framework.routers import SimpleRouter

from sessions_app.approvals.api import ApprovalRequestViewSet
from sessions_app.audit.api import (
    AgentSessionViewSet,
    CitationViewSet,
    ToolInvocationViewSet,
)
from sessions_app.costs.api import CostReportView
from sessions_app.experiments.api import (
    DatasetViewSet,
    ExperimentViewSet,
    GraderViewSet,
)
from sessions_app.releases.api import ReleaseViewSet
from sessions_app.replays.api import CompareView, ReplayView
from sessions_app.revisions.api import RevisionViewSet

app_name = "sessions_api"

router = SimpleRouter()
router.register("sessions", AgentSessionViewSet, basename="session")
router.register("tool-invocations", ToolInvocationViewSet, basename="toolinvocation")
router.register("citations", CitationViewSet, basename="citation")
router.register("approvals", ApprovalRequestViewSet, basename="approval")
router.register("revisions", RevisionViewSet, basename="revision")
router.register("releases", ReleaseViewSet, basename="release")
router.register("datasets", DatasetViewSet, basename="dataset")
router.register("graders", GraderViewSet, basename="grader")
router.register("experiments", ExperimentViewSet, basename="experiment")

urlpatterns = [
    *router.urls,
    path("costs/", CostReportView.as_view(), name="costs"),
    path("sessions/<uuid:pk>/replay/", ReplayView.as_view(), name="session-replay"),
    path(
        "sessions/<uuid:pk>/compare/<uuid:other>/",
        CompareView.as_view(),
        name="session-compare",
    ),
]
