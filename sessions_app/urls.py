from django.urls import path

from sessions_app import approval_views, cost_views, views

app_name = "sessions_app"

urlpatterns = [
    path("sessions/", views.SessionListView.as_view(), name="session-list"),
    path(
        "sessions/<uuid:pk>/", views.SessionDetailView.as_view(), name="session-detail"
    ),
    path(
        "sessions/<uuid:pk>/progress/",
        views.SessionProgressView.as_view(),
        name="session-progress",
    ),
    path(
        "sessions/<uuid:pk>/cancel/",
        views.SessionCancelView.as_view(),
        name="session-cancel",
    ),
    path("citations/", views.CitationListView.as_view(), name="citation-list"),
    path("costs/", cost_views.CostReportView.as_view(), name="cost-report"),
    path("costs.csv", cost_views.CostCsvView.as_view(), name="cost-csv"),
    path("approvals/", approval_views.ApprovalListView.as_view(), name="approval-list"),
    path(
        "approvals/<uuid:pk>/",
        approval_views.ApprovalDetailView.as_view(),
        name="approval-detail",
    ),
]
