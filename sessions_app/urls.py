from django.urls import path

from sessions_app import views

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
]
