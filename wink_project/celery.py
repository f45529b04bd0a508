"""The Celery application. Without CELERY_BROKER_URL, tasks run inline (eager)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "wink_project.settings")

app = Celery("wink_project")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
