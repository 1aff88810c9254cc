"""Which decision turns a customization on or off for a session (customizations.is_enabled):
the session's own, else one for a folder the session works in, else one for every session,
else what it was published with. A decision a client made for another folder is not this
session's, whatever order the decisions come in."""

from __future__ import annotations

from hosts.engine.sessions.customizations import is_enabled, with_decisions

HERE = "file:///srv/work/app"
ELSEWHERE = "file:///srv/work/other"


def test_the_session_decision_comes_before_a_folder_and_every_session():
    decisions = [
        {"kind": "global", "enabled": True},
        {"kind": "workspace", "uri": HERE, "enabled": True},
        {"kind": "session", "enabled": False},
    ]
    assert is_enabled({}, decisions, [HERE]) is False


def test_a_decision_for_another_folder_is_passed_over():
    decisions = [
        {"kind": "workspace", "uri": ELSEWHERE, "enabled": False},
        {"kind": "global", "enabled": True},
    ]
    assert is_enabled({}, decisions, [HERE]) is True
    assert is_enabled({"enabled": True}, decisions[:1], [HERE]) is True
    # The session's own folder, written with or without its trailing slash.
    assert is_enabled({}, decisions, [ELSEWHERE + "/"]) is False


def test_with_no_decision_it_is_as_published():
    assert is_enabled({"enabled": False}, None, [HERE]) is False
    assert is_enabled({}, [], [HERE]) is True


def test_a_childs_legacy_flag_follows_the_sessions_folders():
    entry = {
        "id": "dir",
        "type": "directory",
        "children": [{"id": "skill", "type": "skill", "enabled": True}],
    }
    decisions = {"skill": [{"kind": "workspace", "uri": ELSEWHERE, "enabled": False}]}
    assert with_decisions(entry, decisions, [HERE])["children"][0]["enabled"] is True
    assert with_decisions(entry, decisions, [ELSEWHERE])["children"][0]["enabled"] is False
