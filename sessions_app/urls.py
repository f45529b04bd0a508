from django.urls import path

from sessions_app.approvals import pages as approval_pages
from sessions_app.audit import pages as audit_pages
from sessions_app.costs import pages as cost_pages
from sessions_app.experiments import pages as experiment_pages
from sessions_app.replays import pages as replay_pages
from sessions_app.revisions import pages as revision_pages

app_name = "sessions_app"

urlpatterns = [
    path("sessions/", audit_pages.SessionListView.as_view(), name="session-list"),
    path(
        "sessions/<uuid:pk>/",
        audit_pages.SessionDetailView.as_view(),
        name="session-detail",
    ),
    path(
        "sessions/<uuid:pk>/progress/",
        audit_pages.SessionProgressView.as_view(),
        name="session-progress",
    ),
    path(
        "sessions/<uuid:pk>/cancel/",
        audit_pages.SessionCancelView.as_view(),
        name="session-cancel",
    ),
    path("revisions/", revision_pages.RevisionListView.as_view(), name="revision-list"),
    path(
        "revisions/<str:digest>/",
        revision_pages.RevisionDetailView.as_view(),
        name="revision-detail",
    ),
    path(
        "revisions/<str:digest>/compare/<str:other>/",
        revision_pages.RevisionCompareView.as_view(),
        name="revision-compare",
    ),
    path(
        "sessions/<uuid:pk>/replay/",
        replay_pages.ReplayView.as_view(),
        name="session-replay",
    ),
    path(
        "sessions/<uuid:pk>/compare/<uuid:other>/",
        replay_pages.SessionCompareView.as_view(),
        name="session-compare",
    ),
    path(
        "sessions/<uuid:pk>/add-to-dataset/",
        experiment_pages.AddToDatasetView.as_view(),
        name="session-add-to-dataset",
    ),
    path(
        "experiments/",
        experiment_pages.ExperimentListView.as_view(),
        name="experiment-list",
    ),
    path(
        "experiments/<int:pk>/",
        experiment_pages.ExperimentDetailView.as_view(),
        name="experiment-detail",
    ),
    path(
        "experiments/<int:pk>/run/",
        experiment_pages.ExperimentRunView.as_view(),
        name="experiment-run",
    ),
    path(
        "experiments/<int:pk>/grade/",
        experiment_pages.ExperimentGradeView.as_view(),
        name="experiment-grade",
    ),
    path(
        "experiments/<int:pk>/results.csv",
        experiment_pages.ExperimentCsvView.as_view(),
        name="experiment-csv",
    ),
    path("citations/", audit_pages.CitationListView.as_view(), name="citation-list"),
    path("costs/", cost_pages.CostReportView.as_view(), name="cost-report"),
    path("costs.csv", cost_pages.CostCsvView.as_view(), name="cost-csv"),
    path("approvals/", approval_pages.ApprovalListView.as_view(), name="approval-list"),
    path(
        "approvals/<uuid:pk>/",
        approval_pages.ApprovalDetailView.as_view(),
        name="approval-detail",
    ),
]
