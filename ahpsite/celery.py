"""Celery: the worker and beat processes of the compose deployment."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ahpsite.settings")

app = Celery("ahpsite")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
