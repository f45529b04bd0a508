import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "wink_project.settings")
application = get_wsgi_application()

from wink_project.warm import warm_up  # noqa: E402 (after Django is set up)

warm_up()
