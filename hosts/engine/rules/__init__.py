"""The one registry of action rules, keyed by type.

Every action type a client may dispatch has a rule (an effect, or a refusal in words), and
every action this host says on its own account is marked `said_by_host`; tests hold the
registry against the protocol's (hosts/protocol/actions.py) and against what the engine's code
says, and the README's coverage table is generated from it (coverage.py).
"""

from __future__ import annotations

from .annotation_rules import ANNOTATION_RULES
from .automation_rules import AUTOMATION_RULES
from .changeset_rules import CHANGESET_RULES
from .chat_rules import CHAT_RULES
from .root_rules import ROOT_RULES
from .rule import DROP, ECHO, ActionRule, Dispatch
from .session_rules import SESSION_RULES
from .terminal_rules import TERMINAL_RULES

RULES: dict[str, ActionRule] = {}
for _rule in (
    *ROOT_RULES,
    *SESSION_RULES,
    *CHAT_RULES,
    *TERMINAL_RULES,
    *CHANGESET_RULES,
    *ANNOTATION_RULES,
    *AUTOMATION_RULES,
):
    assert _rule.type not in RULES, f"two rules for {_rule.type}"
    RULES[_rule.type] = _rule

#: What each client action needs, by type (the grant map's side of the registry).
ACTION_GRANTS: dict[str, str] = {t: r.grant for t, r in RULES.items() if r.grant is not None}


def rule_for(action_type: str) -> ActionRule | None:
    return RULES.get(action_type)


__all__ = ["ACTION_GRANTS", "DROP", "ECHO", "RULES", "ActionRule", "Dispatch", "rule_for"]
