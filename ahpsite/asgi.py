"""ASGI entry point: HTTP to Django, the WebSocket at / to the AHP consumer."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ahpsite.settings")
django_http = get_asgi_application()

from channels.routing import ProtocolTypeRouter  # noqa: E402

from hosts.edge.consumer import AhpConsumer  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_http,
        "websocket": AhpConsumer.as_asgi(),
    }
)
