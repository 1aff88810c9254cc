"""The turns running now: what only the engine knows (a turn runs in its memory, not in the
database), for an operator's `manage.py ahpd sessions` and any other caller holding the grant."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from rest_framework import generics, serializers
from rest_framework.request import Request
from rest_framework.response import Response

from ..engine import access
from ..engine.host import Host
from ..engine.host_status import every_running_turn
from ..engine.principal import Principal
from .auth import ApiUser
from .engine_calls import engine_reads


class RunningTurnSerializer(serializers.Serializer):  # type: ignore[type-arg]
    session = serializers.CharField(help_text="the session's URI")
    chat = serializers.CharField(help_text="the chat's URI")
    turnId = serializers.CharField()  # noqa: N815 (the protocol's spelling)
    sender = serializers.CharField(allow_null=True, help_text="who sent the turn's message")
    owner = serializers.CharField(allow_null=True, help_text="whose the session is")
    startedAt = serializers.CharField(allow_null=True)  # noqa: N815
    title = serializers.CharField(allow_null=True, help_text="the session's title")


def _running_for(principal: Principal) -> Callable[[Host], Awaitable[list[dict[str, Any]]]]:
    """The running turns of the sessions `principal` may read (access.py)."""

    async def running(host: Host) -> list[dict[str, Any]]:
        return [
            turn
            for turn in every_running_turn(host)
            if (record := host.sessions.record_of(turn["session"])) is not None
            and access.may_read(principal, record)
        ]

    return running


class RunningTurnsView(generics.ListAPIView):
    """The turns running now in the sessions this server holds that the caller may read, by
    session then chat."""

    grants = {"GET": "session:list"}
    serializer_class = RunningTurnSerializer
    # The rows are the engine's, not the database's: nothing to filter, and no queryset (the
    # schema's generator reads a view's queryset, and must not start an engine to do it).
    filter_backends: list[Any] = []

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        user = request.user
        assert isinstance(user, ApiUser)
        # Read once, in one step on the engine's loop: the count and the page agree.
        running = engine_reads(_running_for(user.principal), what="the running turns")
        page = self.paginate_queryset(running)
        return self.get_paginated_response(self.get_serializer(page, many=True).data)
