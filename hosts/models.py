"""Durable facts of the host. The engine reaches these only through `hosts.store`."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class RootConfig(models.Model):
    """The root config values clients pushed with root/configChanged; one row per host."""

    key = models.CharField(max_length=64, primary_key=True, default="root")
    values = models.JSONField(default=dict)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "root config"
        verbose_name_plural = "root config"

    def __str__(self) -> str:
        return f"root config ({len(self.values)} keys)"


class StoredSession(models.Model):
    """A session's record: what this host keeps about it beside the agent's own transcript."""

    uri = models.CharField(max_length=512, primary_key=True)
    provider = models.CharField(max_length=128)
    title = models.TextField(blank=True, default="")
    created_ms = models.BigIntegerField()
    modified_ms = models.BigIntegerField(db_index=True)
    default_chat = models.CharField(max_length=512)
    working_directories = models.JSONField(default=list)
    config = models.JSONField(default=dict)
    is_read = models.BooleanField(default=False)
    is_archived = models.BooleanField(default=False)
    announced = models.BooleanField(default=False)
    chats = models.JSONField(default=list, help_text="chat URIs in order")
    owner = models.CharField(
        max_length=200, blank=True, default="", help_text="user:<id> or root:<host>"
    )
    scope = models.CharField(
        max_length=200,
        blank=True,
        default="",
        db_index=True,
        help_text="team:<slug> or project:<slug> it belongs to; blank for the host's own",
    )
    snapshots = models.JSONField(
        default=dict,
        blank=True,
        help_text="the git tree each turn found and left, by turn id (changesets)",
    )
    reviews = models.JSONField(
        default=dict,
        blank=True,
        help_text="review ticks by changeset scope: file id -> the blob it held then",
    )
    annotations = models.JSONField(
        default=list,
        blank=True,
        help_text="the marks on its channel <session>/annotations",
    )
    enablement = models.JSONField(
        default=dict,
        blank=True,
        help_text="the enablement decisions kept for its customizations, by id",
    )
    multi_root = models.BooleanField(
        default=False,
        help_text="made by a window of a multi-root workspace: its folders may change",
    )
    #: The node that runs it now (hosts/store/session_nodes.py): taken only by a write under
    #: a condition, by a node starting or taking over from one gone; blank before any did.
    node = models.CharField(
        max_length=200,
        blank=True,
        default="",
        db_index=True,
        help_text="the node that runs it now (its agent, terminals and turns)",
    )

    class Meta:
        verbose_name = "session"
        ordering = ["-modified_ms"]

    def __str__(self) -> str:
        return self.title or self.uri


class StoredChat(models.Model):
    uri = models.CharField(max_length=512, primary_key=True)
    session = models.ForeignKey(StoredSession, on_delete=models.CASCADE, related_name="chat_rows")
    title = models.TextField(blank=True, default="")
    created_ms = models.BigIntegerField()
    backend_id = models.CharField(max_length=256, blank=True, null=True)
    is_read = models.BooleanField(default=False)
    is_archived = models.BooleanField(default=False)
    draft = models.JSONField(blank=True, null=True)

    class Meta:
        verbose_name = "chat"

    def __str__(self) -> str:
        return self.title or self.uri


class StoredTurn(models.Model):
    """A finished turn (or, with state "running", one in flight) as the protocol's Turn."""

    chat = models.ForeignKey(StoredChat, on_delete=models.CASCADE, related_name="turn_rows")
    position = models.IntegerField()
    turn_id = models.CharField(max_length=256)
    data = models.JSONField()

    class Meta:
        verbose_name = "turn"
        ordering = ["chat", "position"]
        constraints = [
            models.UniqueConstraint(fields=["chat", "position"], name="one_turn_per_position")
        ]

    def __str__(self) -> str:
        return f"{self.chat_id} #{self.position}"


class Team(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200, blank=True, default="")

    def __str__(self) -> str:
        return self.slug


class Project(models.Model):
    """A project belongs to a team."""

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200, blank=True, default="")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="projects")

    def __str__(self) -> str:
        return self.slug


class Role(models.Model):
    """A name and a list of grants (`<subject>:<operation>`)."""

    name = models.SlugField(max_length=64, unique=True)
    grants = models.JSONField(default=list)
    builtin = models.BooleanField(default=False, help_text="made by the host; kept in step")

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    """A person holds a role, host-wide or within a team or a project; one may be primary."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.ForeignKey(Role, on_delete=models.CASCADE, related_name="memberships")
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.CASCADE)
    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.CASCADE)
    primary = models.BooleanField(default=False)

    def __str__(self) -> str:
        where = self.project or self.team or "host"
        return f"{self.user} as {self.role} in {where}"


class Token(models.Model):
    """A person's token: only its SHA-256 is kept; the secret is shown once, when minted."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tokens"
    )
    name = models.CharField(max_length=100)
    digest = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(max_length=12, editable=False, help_text="to tell tokens apart")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "name"], name="one_token_name_per_user")
        ]

    def __str__(self) -> str:
        return f"{self.user}/{self.name} ({self.prefix}…)"


class Node(models.Model):
    """A `serve` process of this host, while its lease holds: every process started with the
    same database is a node of one host. Its row is claimed at start under the node's id, kept
    alive by renewing `lease_until`, and let go when it stops; a row whose lease has lapsed is
    a node gone (killed, its machine lost), whoever reads it (nodes.py in hosts/store)."""

    node_id = models.CharField(max_length=200, primary_key=True)
    #: Which start of a process holds the row (made afresh at every start): a renewal or a
    #: release names it, so a process that lost its row to another cannot take it back.
    instance = models.CharField(max_length=64, editable=False)
    #: Where clients reach it: the WebSocket base it tells them.
    address = models.CharField(max_length=500, blank=True, default="")
    machine = models.CharField(max_length=255, help_text="the machine (or container) it runs on")
    pid = models.PositiveIntegerField()
    #: Which processes its pid is counted among (Linux's pid namespace): containers sharing a
    #: machine's name (host networking) count their own, so a pid not found is gone only here.
    pid_space = models.CharField(max_length=64, blank=True, default="", editable=False)
    #: The folders it serves (AHPD_PATHS): where its sessions may work.
    folders = models.JSONField(default=list)
    #: How many agents it may run at once (AHPD_NODE_AGENTS); 0 is no limit.
    agents_max = models.PositiveIntegerField(default=0)
    #: The agents it runs (its AHPD_CONFIG's, by id): a session goes to, and is taken over by,
    #: a node that runs its agent.
    agents = models.JSONField(default=list)
    version = models.CharField(max_length=64, blank=True, default="")
    started_at = models.DateTimeField()
    renewed_at = models.DateTimeField()
    lease_until = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["started_at", "node_id"]

    def __str__(self) -> str:
        return self.node_id
