"""Celery: the worker and beat processes of the compose deployment."""

import os
from typing import Any

from celery import Celery
from celery.signals import worker_init, worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ahpsite.settings")

app = Celery("ahpsite")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
@worker_process_init.connect
def _engine_elsewhere(**_: Any) -> None:
    """A worker runs no engine: its tasks reach the server's over the channel layer (the
    engine client would otherwise start one of its own, which no client ever reaches)."""
    from hosts.edge import engine_client

    engine_client.engine_elsewhere()
