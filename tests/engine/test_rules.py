"""The action rule registry, held against the protocol's action registry and the engine's code."""

from __future__ import annotations

import ast
from pathlib import Path

from hosts.engine.rules import RULES
from hosts.protocol.actions import ACTIONS

ENGINE = Path(__file__).resolve().parents[2] / "hosts" / "engine"


def test_every_rule_names_an_action_of_the_protocol():
    assert set(RULES) <= set(ACTIONS)


def test_every_client_dispatchable_action_has_an_effect_or_an_explicit_refusal():
    for action_type, spec in ACTIONS.items():
        if not spec.client_dispatchable:
            continue
        rule = RULES.get(action_type)
        assert rule is not None, f"no rule for {action_type}"
        assert (rule.effect is None) != (rule.refusal is None), action_type


def test_a_host_only_action_has_no_client_side():
    for action_type, rule in RULES.items():
        if not ACTIONS[action_type].client_dispatchable:
            # Said, or never said for a reason the coverage table gives; never both.
            assert rule.said_by_host != (rule.never_said is not None), action_type
            assert rule.effect is None and rule.refusal is None, action_type


def test_only_a_host_action_is_never_said_for_a_reason():
    for action_type, rule in RULES.items():
        if rule.never_said is not None:
            assert not ACTIONS[action_type].client_dispatchable, action_type


def test_a_served_client_action_names_a_grant():
    for action_type, rule in RULES.items():
        if rule.served:
            assert rule.grant is not None or rule.grant_for is not None, action_type


def _action_literals(root: Path) -> set[str]:
    """Every action type named as a string in the code that says actions."""
    found: set[str] = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in ACTIONS:
                found.add(node.value)
    return found


def test_what_the_engine_says_on_its_own_account_is_what_the_registry_marks_said():
    # The sessions, resources, changesets, terminals and services packages, the host and the
    # commands say actions; the rules and the protocol only name them. Every type named there
    # is said, and every one marked said is named there.
    named = (
        _action_literals(ENGINE / "sessions")
        | _action_literals(ENGINE / "terminals")
        | _action_literals(ENGINE / "commands")
        | _action_literals(ENGINE / "resources")
        | _action_literals(ENGINE / "changesets")
        | _action_literals(ENGINE / "automations")
        | _action_literals(ENGINE / "services")
        | {n for n in _action_literals(ENGINE) if (ENGINE / "host.py").read_text().count(n)}
    )
    said = {t for t, rule in RULES.items() if rule.said_by_host}
    assert named <= said
    assert said <= named
