from django.apps import AppConfig


class SessionsAppConfig(AppConfig):
    name = "sessions_app"
    label = "sessions_app"
    verbose_name = "Agent sessions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from sessions_app import checks  # noqa: F401  (registers the system checks)
        from sessions_app.runs.store import session_ended
        from sessions_app.telemetry import on_session_ended

        # a session that ends is exported as a trace (when an endpoint is set)
        session_ended.connect(
            on_session_ended, dispatch_uid="sessions_app.telemetry.export"
        )
