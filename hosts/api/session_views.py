"""The API's session views: sessions as kept, and the session work the engine does for a
caller (a new session with its first message, a message, a stop, a dispose). Each names, per
method, the grant it needs; the engine checks it again, with ownership, in its services."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from django.db.models import Prefetch, Q, QuerySet
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import generics, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ..engine import access
from ..engine.principal import Principal
from ..models import StoredChat as StoredChatModel
from ..models import StoredSession, StoredTurn
from .created import created
from .engine_calls import engine_does, principal_of
from .filters import SessionFilter
from .known_fields import KnownFieldsOnly
from .serializers import SessionDetailSerializer, SessionSerializer


class NewSessionSerializer(KnownFieldsOnly):
    provider = serializers.CharField(required=False)
    workingDirectories = serializers.ListField(  # noqa: N815 (the protocol's spelling)
        child=serializers.CharField(), required=False
    )
    config = serializers.DictField(required=False)
    message = serializers.CharField()
    scope = serializers.CharField(
        required=False,
        allow_blank=True,
        help_text='team:<slug> or project:<slug> (one you are a member of), or "" for the host; '
        "your primary team's or project's when left out",
    )


class MessageSerializer(KnownFieldsOnly):
    message = serializers.CharField()
    chat = serializers.CharField(required=False)


class TurnStartedSerializer(serializers.Serializer):  # type: ignore[type-arg]
    uri = serializers.CharField(required=False)
    chat = serializers.CharField()
    turnId = serializers.CharField()  # noqa: N815


class CancelledSerializer(serializers.Serializer):  # type: ignore[type-arg]
    cancelled = serializers.ListField(child=serializers.CharField())


class SessionsView(generics.ListAPIView):
    """Sessions as last written behind the engine, most recently modified first; POST makes
    one whose first message starts its first turn."""

    grants = {"GET": "session:list", "POST": "session:create"}
    serializer_class = SessionSerializer
    queryset = StoredSession.objects.order_by("-modified_ms", "uri")
    filterset_class = SessionFilter

    def get_queryset(self) -> QuerySet[StoredSession]:
        return readable_by(super().get_queryset(), principal_of(self.request))

    @extend_schema(request=NewSessionSerializer, responses={201: TurnStartedSerializer})
    def post(self, request: Request) -> Response:
        data = _body(NewSessionSerializer, request)
        result = engine_does(
            request,
            "create_session",
            provider=data.get("provider"),
            directories=data.get("workingDirectories"),
            config=data.get("config"),
            message=data["message"],
            scope=data.get("scope"),
            method="sessions",
        )
        return created(
            request, result, reverse("api:sessions") + quote(result["uri"], safe="") + "/"
        )


@extend_schema_view(
    get=extend_schema(
        parameters=[
            OpenApiParameter(
                "uri",
                str,
                OpenApiParameter.PATH,
                description="the session's URI, URL-encoded (ahp-session%3A%2F...)",
            )
        ]
    )
)
class SessionView(generics.RetrieveAPIView):
    """A session by its URI (URL-encoded in the path), with its chats and their turns;
    DELETE disposes it (its owner, or who holds others:dispose where it is)."""

    grants = {"GET": "session:state", "DELETE": "session:dispose"}
    noun = "session"
    serializer_class = SessionDetailSerializer
    lookup_field = "uri"
    queryset = StoredSession.objects.prefetch_related(
        Prefetch(
            "chat_rows",
            queryset=StoredChatModel.objects.prefetch_related(
                Prefetch("turn_rows", queryset=StoredTurn.objects.order_by("position"))
            ),
        )
    )

    def get_queryset(self) -> QuerySet[StoredSession]:
        # One nobody lets them read is not found, as one that is not there.
        return readable_by(super().get_queryset(), principal_of(self.request))

    @extend_schema(responses={204: None})
    def delete(self, request: Request, uri: str) -> Response:
        engine_does(request, "dispose_session", uri=uri)
        return Response(status=status.HTTP_204_NO_CONTENT)


# -- session work, done by the engine ---------------------------------------------------------


def readable_by(rows: QuerySet[StoredSession], principal: Principal) -> QuerySet[StoredSession]:
    """The sessions among `rows` that `principal` may read, as access.py decides it."""
    readable = access.Readable(principal)
    if readable.everything:
        return rows
    own = Q(owner=readable.owner)
    if not readable.own_anywhere:
        own &= Q(scope__in=readable.own_scopes)
    return rows.filter(own | Q(scope__in=readable.scopes))


def _body(
    serializer_class: type[serializers.Serializer],  # type: ignore[type-arg]
    request: Request,
) -> dict[str, Any]:
    """The request's body, as the serializer checked it; 400 naming the fields otherwise."""
    body = serializer_class(data=request.data)
    body.is_valid(raise_exception=True)
    return dict(body.validated_data)


class SessionMessagesView(APIView):
    """POST a message to a session: it starts a turn in the default chat (or the one named)."""

    grants = {"POST": "chat:send"}

    @extend_schema(request=MessageSerializer, responses={202: TurnStartedSerializer})
    def post(self, request: Request, uri: str) -> Response:
        data = _body(MessageSerializer, request)
        result = engine_does(
            request, "send_message", uri=uri, message=data["message"], chat_uri=data.get("chat")
        )
        return Response(result, status=status.HTTP_202_ACCEPTED)


class SessionCancelView(APIView):
    """POST to stop every turn running in a session, for every client at once."""

    grants = {"POST": "chat:cancel"}

    @extend_schema(request=None, responses={200: CancelledSerializer})
    def post(self, request: Request, uri: str) -> Response:
        return Response(engine_does(request, "cancel_session", uri=uri))
