"""What the API says of people, tokens, teams, projects, roles, root config and sessions."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.db import transaction
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.validators import UniqueValidator

from ..engine.clock import iso
from ..models import (
    Membership,
    Project,
    Role,
    StoredChat,
    StoredSession,
    Team,
    Token,
)
from ..store import set_host_roles, validate_grants
from ..store.acts import SYSTEM, Actor, of_request
from .known_fields import KnownFieldsOnly

User = get_user_model()


# -- status ----------------------------------------------------------------------------------


class TurnsFinishedSerializer(serializers.Serializer):
    complete = serializers.IntegerField(help_text="turns that completed")
    cancelled = serializers.IntegerField(help_text="turns stopped")
    error = serializers.IntegerField(help_text="turns ended in error (interrupted included)")


class NodeSerializer(serializers.Serializer):
    """A node of the host: a `serve` process on this database whose lease holds."""

    id = serializers.CharField(help_text="its node id (AHPD_NODE_ID)")
    address = serializers.CharField(help_text="where it listens, as another machine reaches it")
    machine = serializers.CharField(help_text="the machine (or container) it runs on")
    pid = serializers.IntegerField(help_text="its process id on that machine")
    folders = serializers.ListField(
        child=serializers.CharField(), help_text="the folders it serves (AHPD_PATHS)"
    )
    agentsMax = serializers.IntegerField(  # noqa: N815
        help_text="how many agents it may run at once (AHPD_NODE_AGENTS); 0 sets no limit"
    )
    agents = serializers.ListField(
        child=serializers.CharField(),
        help_text="the agents it runs (AHPD_CONFIG's, by id): a new session goes to a node "
        "running its agent",
    )
    version = serializers.CharField(help_text="its server version")
    startedAt = serializers.CharField(help_text="when it claimed its row")  # noqa: N815
    leaseUntil = serializers.CharField(  # noqa: N815
        help_text="when it is gone unless it renews its lease (every third of the lease)"
    )


class StatusSerializer(serializers.Serializer):
    """The host's status. Every field's name is kept as it is: scripts and `ahpd status` read
    them. Counters (connectionsOpened ... backendErrors) count from the engine's start."""

    host = serializers.CharField(help_text="the name root:<host> says")
    version = serializers.CharField(help_text="the server's version")
    uptimeSeconds = serializers.FloatField(help_text="seconds since the engine started")  # noqa: N815
    sessions = serializers.IntegerField(help_text="sessions the host keeps (in the database)")
    sessionsHeld = serializers.IntegerField(help_text="sessions the engine holds")  # noqa: N815
    people = serializers.IntegerField(help_text="people the host knows")
    connections = serializers.IntegerField(help_text="client connections open now")
    subscriptions = serializers.IntegerField(help_text="channel subscriptions, all connections")
    runningTurns = serializers.IntegerField(help_text="turns running now")  # noqa: N815
    agents = serializers.ListField(
        child=serializers.CharField(), help_text="the providers of the configured agents"
    )
    connectionsOpened = serializers.IntegerField(help_text="connections admitted")  # noqa: N815
    envelopes = serializers.IntegerField(help_text="action envelopes sequenced, refusals too")
    deliveries = serializers.IntegerField(help_text="frames sent to clients")
    queueDrops = serializers.IntegerField(  # noqa: N815
        help_text="clients closed for being clientQueueBytes behind"
    )
    turnsStarted = serializers.IntegerField(help_text="turns started")  # noqa: N815
    turnsFinished = TurnsFinishedSerializer(help_text="turns ended, by how")  # noqa: N815
    backendErrors = serializers.IntegerField(help_text="turns the backend failed")  # noqa: N815
    sandbox = serializers.ChoiceField(
        choices=["bwrap", "off"],
        help_text="where people's processes run: bwrap (a sandbox each), or off (as the "
        "server's own user)",
    )
    nodes = NodeSerializer(
        many=True,
        help_text="the host's nodes, first started first (to diagnostics:read; empty otherwise)",
    )
    principal = serializers.CharField(help_text="who this request is: user:<id> or root:<host>")
    grants = serializers.ListField(child=serializers.CharField(), help_text="what they hold")


# -- people and tokens -----------------------------------------------------------------------


class MembershipSerializer(serializers.ModelSerializer):
    role = serializers.SlugRelatedField(slug_field="name", read_only=True)
    team = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)
    project = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)

    class Meta:
        model = Membership
        fields = ["role", "team", "project", "primary"]
        read_only_fields = fields


def host_wide(user: Any) -> list[Membership]:
    return [
        m
        for m in user.memberships.all()
        if m.team_id is None and m.project_id is None  # prefetched: filter in Python
    ]


@extend_schema_field(serializers.ListField(child=serializers.SlugField()))
class RolesField(serializers.Field):
    """A person's host-wide roles, by name; writing them replaces those memberships."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("source", "*")
        super().__init__(**kwargs)

    def to_representation(self, user: Any) -> list[str]:
        return sorted({m.role.name for m in host_wide(user)})

    def to_internal_value(self, data: Any) -> dict[str, list[Role]]:
        if not isinstance(data, list) or not all(isinstance(name, str) for name in data):
            raise serializers.ValidationError("a list of role names")
        roles = {role.name: role for role in Role.objects.filter(name__in=data)}
        unknown = [name for name in data if name not in roles]
        if unknown:
            raise serializers.ValidationError(f"no role named {unknown[0]!r}")
        return {"roles": [roles[name] for name in dict.fromkeys(data)]}


class PersonSerializer(KnownFieldsOnly, serializers.ModelSerializer):
    id = serializers.CharField(
        source="username",
        max_length=150,
        help_text="the person's id: they are user:<id>",
        validators=[
            UnicodeUsernameValidator(),
            UniqueValidator(queryset=User.objects.all(), message="a person has this id already"),
        ],
    )
    isActive = serializers.BooleanField(  # noqa: N815 (the API's casing, the protocol's)
        source="is_active", required=False, help_text="false: their tokens stop working"
    )
    roles = RolesField(required=False, help_text="host-wide roles, by name")
    memberships = MembershipSerializer(many=True, read_only=True)

    class Meta:
        model = User
        fields = ["id", "email", "isActive", "roles", "memberships"]

    # Saving writes the person and their host-wide memberships: together, or neither; their
    # admin-site rights follow the roles (store.set_host_roles), as through `ahpd` and the admin.

    @transaction.atomic
    def create(self, validated_data: dict[str, Any]) -> Any:
        roles = validated_data.pop("roles", [])
        user = User(**validated_data)
        user.set_unusable_password()
        user.save()
        set_host_roles(user, roles, by=self._by())
        return user

    @transaction.atomic
    def update(self, instance: Any, validated_data: dict[str, Any]) -> Any:
        username = validated_data.pop("username", instance.username)
        if username != instance.username:
            raise serializers.ValidationError({"id": ["a person's id cannot change"]})
        roles = validated_data.pop("roles", None)
        user = super().update(instance, validated_data)
        if roles is not None:
            set_host_roles(user, roles, by=self._by())
        return user

    def _by(self) -> Actor:
        request = self.context.get("request")
        return of_request(request, "rest") if request is not None else SYSTEM


class TokenSerializer(serializers.ModelSerializer):
    createdAt = serializers.DateTimeField(source="created_at", read_only=True)  # noqa: N815
    lastUsedAt = serializers.DateTimeField(  # noqa: N815
        source="last_used_at", read_only=True, help_text="null: never used"
    )
    revokedAt = serializers.DateTimeField(  # noqa: N815
        source="revoked_at", read_only=True, help_text="null: live"
    )

    class Meta:
        model = Token
        fields = ["name", "prefix", "createdAt", "lastUsedAt", "revokedAt"]
        read_only_fields = fields


class MintTokenSerializer(KnownFieldsOnly):
    name = serializers.RegexField(
        r"^[^/]+$", max_length=100, help_text="what the token is for; no slash"
    )


class MintedTokenSerializer(TokenSerializer):
    """A token just minted: the secret is said here once and kept nowhere."""

    token = serializers.SerializerMethodField(help_text="the secret, shown this once")
    url = serializers.SerializerMethodField(help_text="the WebSocket URL carrying the secret")

    class Meta(TokenSerializer.Meta):
        fields = [*TokenSerializer.Meta.fields, "token", "url"]

    def get_token(self, token: Token) -> str:
        return str(self.context["secret"])

    def get_url(self, token: Token) -> str:
        return str(self.context["url"])


# -- teams, projects, roles ------------------------------------------------------------------


class TeamSerializer(KnownFieldsOnly, serializers.ModelSerializer):
    projects = serializers.SlugRelatedField(slug_field="slug", many=True, read_only=True)

    class Meta:
        model = Team
        fields = ["slug", "name", "projects"]


class ProjectSerializer(KnownFieldsOnly, serializers.ModelSerializer):
    team = serializers.SlugRelatedField(
        slug_field="slug", queryset=Team.objects.all(), help_text="the team's slug"
    )

    class Meta:
        model = Project
        fields = ["slug", "name", "team"]


class RoleSerializer(KnownFieldsOnly, serializers.ModelSerializer):
    grants = serializers.ListField(
        child=serializers.CharField(), help_text="<subject>:<operation>, e.g. session:read"
    )

    class Meta:
        model = Role
        fields = ["name", "grants", "builtin"]
        read_only_fields = ["builtin"]

    def validate_grants(self, grants: list[str]) -> list[str]:
        return validate_grants(grants)


class PrincipalsChangedSerializer(KnownFieldsOnly):
    tokens = serializers.ListField(
        child=serializers.IntegerField(min_value=1),
        allow_null=True,
        allow_empty=True,
        max_length=100_000,
        help_text="the ids of the tokens whose principals changed; null: any token's",
    )


# -- root config and sessions ----------------------------------------------------------------


class RootConfigSerializer(serializers.Serializer):  # type: ignore[type-arg]
    schema = serializers.DictField(
        help_text="the ConfigSchema clients draw their settings from, as the socket says it"
    )
    values = serializers.DictField(
        help_text="each key's effective value (its default where nothing set it); a "
        "credential that is set is shown as <set>"
    )


@extend_schema_field(OpenApiTypes.DATETIME)
class MillisecondsField(serializers.ReadOnlyField):
    """Epoch milliseconds as the protocol's ISO-8601 text."""

    def to_representation(self, value: int) -> str:
        return iso(value)


class SessionSerializer(serializers.ModelSerializer):
    createdAt = MillisecondsField(source="created_ms")
    modifiedAt = MillisecondsField(source="modified_ms")
    isRead = serializers.BooleanField(source="is_read", read_only=True)
    isArchived = serializers.BooleanField(source="is_archived", read_only=True)

    class Meta:
        model = StoredSession
        fields = [
            "uri",
            "provider",
            "title",
            "createdAt",
            "modifiedAt",
            "owner",
            "scope",
            "isRead",
            "isArchived",
        ]
        read_only_fields = fields


class ChatSerializer(serializers.ModelSerializer):
    createdAt = MillisecondsField(source="created_ms")
    isRead = serializers.BooleanField(source="is_read", read_only=True)
    isArchived = serializers.BooleanField(source="is_archived", read_only=True)
    turns = serializers.SerializerMethodField(help_text="the protocol's Turns, in order")

    class Meta:
        model = StoredChat
        fields = ["uri", "title", "createdAt", "isRead", "isArchived", "draft", "turns"]
        read_only_fields = fields

    @extend_schema_field(serializers.ListField(child=serializers.DictField()))
    def get_turns(self, chat: StoredChat) -> list[Any]:
        return [turn.data for turn in chat.turn_rows.all()]


class SessionDetailSerializer(SessionSerializer):
    defaultChat = serializers.CharField(source="default_chat", read_only=True)
    workingDirectories = serializers.ListField(
        source="working_directories", child=serializers.CharField(), read_only=True
    )
    config = serializers.DictField(read_only=True, help_text="the session's config values")
    chats = serializers.SerializerMethodField(help_text="the session's chats, in order")

    class Meta(SessionSerializer.Meta):
        fields = [
            *SessionSerializer.Meta.fields,
            "defaultChat",
            "workingDirectories",
            "config",
            "node",
            "chats",
        ]
        read_only_fields = fields

    @extend_schema_field(ChatSerializer(many=True))
    def get_chats(self, session: StoredSession) -> list[Any]:
        rows = {chat.uri: chat for chat in session.chat_rows.all()}
        ordered = [rows.pop(uri) for uri in session.chats if uri in rows]
        ordered += sorted(rows.values(), key=lambda chat: chat.created_ms)
        return list(ChatSerializer(ordered, many=True, context=self.context).data)
