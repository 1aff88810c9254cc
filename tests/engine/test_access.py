"""access.py and the principal's scoped grants, without a server: what a role held through a
team reaches, and what it does not."""

from __future__ import annotations

import pytest

from hosts.engine import access
from hosts.engine.grants import BUILTIN_ROLES
from hosts.engine.principal import Principal
from hosts.engine.sessions.records import SessionRecord
from hosts.protocol.errors import ProtocolError

MEMBER = tuple(BUILTIN_ROLES["member"])
ADMIN = tuple(BUILTIN_ROLES["admin"])


def session(owner: str, scope: str) -> SessionRecord:
    return SessionRecord(
        uri="ahp-session:/s", provider="p", created_ms=0, modified_ms=0, default_chat="c",
        owner=owner, scope=scope,
    )  # fmt: skip


def scoped(ref: str, **held: tuple[str, ...]) -> Principal:
    return Principal(ref, (), scoped={k.replace("_", ":", 1): v for k, v in held.items()}, home="")


def test_an_admin_through_a_team_is_no_admin_of_the_host():
    lead = scoped("user:tia", team_alpha=ADMIN)
    assert not lead.admin
    for host_level in ("user:create", "config:change", "file:read", "trust:push", "role:update"):
        assert not lead.may(host_level), host_level
    assert lead.may("session:create")
    assert lead.may_in("team:alpha", "others:dispose")
    assert not lead.may_in("team:beta", "others:read")
    assert not lead.may_in("", "session:state")


def test_host_wide_grants_reach_every_scope_but_membership_is_not_reach():
    max_ = Principal("user:max", MEMBER)
    assert max_.may_in("team:alpha", "chat:send")
    assert max_.belongs("") and not max_.belongs("team:alpha")
    assert access.refusal(max_, session("user:max", "team:alpha"), "chat:send") is None
    reason = access.refusal(max_, session("user:olga", "team:alpha"), "session:state")
    assert reason == "user:max may not others:read here: ahp-session:/s is user:olga's"


@pytest.mark.parametrize(
    ("needed", "other"),
    [
        ("session:state", "others:read"),
        ("chat:turns", "others:read"),
        ("chat:send", "others:work"),
        ("session:rename", "others:work"),
        ("chat:truncate", "others:work"),
        ("chat:dispose", "others:dispose"),
        ("session:dispose", "others:dispose"),
    ],
)
def test_what_one_not_the_owner_needs_besides(needed, other):
    assert access.others_grant(needed) == other


def test_a_member_reads_a_colleagues_session_and_may_not_work_in_it():
    mia = scoped("user:mia", team_alpha=MEMBER)
    theirs = session("user:olga", "team:alpha")
    assert access.may_read(mia, theirs)
    with pytest.raises(ProtocolError) as refused:
        access.require(mia, theirs, "chat:send")
    assert refused.value.message == (
        "user:mia may not others:work here: ahp-session:/s is user:olga's"
    )


def test_a_session_is_made_in_a_scope_its_maker_belongs_to():
    pia = Principal("user:pia", (), scoped={"project:web": MEMBER}, home="project:web")
    assert access.creation_scope(pia, None, "createSession") == "project:web"
    assert access.creation_scope(pia, "project:web", "createSession") == "project:web"
    for bad in ("team:alpha", "", 7, "moon:base"):
        with pytest.raises(ProtocolError) as refused:
            access.creation_scope(pia, bad, "createSession")
        assert refused.value.code == -32602
    assert access.creation_scope(Principal("root:h", ADMIN), "team:any", "x") == "team:any"


def test_what_a_listing_may_show():
    readable = access.Readable(scoped("user:mia", team_alpha=MEMBER, project_web=MEMBER))
    assert not readable.everything and not readable.own_anywhere
    assert readable.scopes == {"team:alpha", "project:web"}
    assert access.Readable(Principal("root:h", ADMIN)).everything
