"""The operator's managed permission settings, AHPD_CONFIG's root keys
`managedSettingsPermissions` and `eligibleForAutoApproval` (seed 004), as every backend is
handed them.

`managedSettingsPermissions` is VS Code's managed permissions: `deny` and `ask` rule lists (a
tool name, or a tool with its argument pattern: `Bash(rm *)`), `disableBypassPermissionsMode:
"disable"` (the lock that takes Allow All away) and `limitTo`. `eligibleForAutoApproval` maps a
tool name to whether a person may allow it beyond one call; one set to false is asked about
on every call, with Allow Once and Skip alone. This host checks them itself (seed 004's
`managedRules: 'checked'`, its default). A bad value stops the server from starting rather
than running with no managed rules: these are the operator's guard rails.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

PERMISSIONS_KEY = "managedSettingsPermissions"
ELIGIBLE_KEY = "eligibleForAutoApproval"


class ManagedSettingsError(ValueError):
    """A managed setting the operator wrote that this host cannot take; says which."""


@dataclass(frozen=True, slots=True)
class ManagedSettings:
    """The managed rules, as parsed; empty where the operator set none."""

    deny: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    #: `disableBypassPermissionsMode: "disable"`: no session may bypass permissions.
    bypass_disabled: bool = False
    #: Tool name -> whether it may be allowed beyond one call.
    eligible: Mapping[str, bool] = field(default_factory=dict)

    def ineligible(self) -> tuple[str, ...]:
        """The tools asked about on every call."""
        return tuple(name for name, ok in self.eligible.items() if not ok)

    def may_allow_for_session(self, tool: str) -> bool:
        return self.eligible.get(tool, True)


def _rules(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(r, str) and r.strip() for r in value):
        raise ManagedSettingsError(f"{where} must be a list of non-empty rule strings")
    return tuple(value)


def parse_managed_settings(data: Mapping[str, Any], source: str = "AHPD_CONFIG") -> ManagedSettings:
    """The managed settings of a configuration file's root; ManagedSettingsError naming the key
    that is wrong."""
    permissions = data.get(PERMISSIONS_KEY)
    eligible = data.get(ELIGIBLE_KEY)
    deny: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    bypass_disabled = False
    if permissions is not None:
        where = f"{source}: {PERMISSIONS_KEY}"
        if not isinstance(permissions, dict):
            raise ManagedSettingsError(f"{where} must be an object")
        known = {"deny", "ask", "disableBypassPermissionsMode", "limitTo"}
        if unknown := sorted(set(permissions) - known):
            raise ManagedSettingsError(f"{where}: {', '.join(unknown)} is not a managed setting")
        if "limitTo" in permissions:
            # Not served: a limit that is not enforced must not look enforced.
            raise ManagedSettingsError(f"{where}: limitTo is not supported by this host")
        deny = _rules(permissions.get("deny"), f"{where}.deny")
        ask = _rules(permissions.get("ask"), f"{where}.ask")
        lock = permissions.get("disableBypassPermissionsMode")
        if lock not in (None, "disable"):
            raise ManagedSettingsError(f'{where}.disableBypassPermissionsMode must be "disable"')
        bypass_disabled = lock == "disable"
    checked: dict[str, bool] = {}
    if eligible is not None:
        where = f"{source}: {ELIGIBLE_KEY}"
        if not isinstance(eligible, dict) or not all(
            isinstance(k, str) and k and isinstance(v, bool) for k, v in eligible.items()
        ):
            raise ManagedSettingsError(f"{where} must be an object of tool name to true or false")
        checked = dict(eligible)
    return ManagedSettings(deny=deny, ask=ask, bypass_disabled=bypass_disabled, eligible=checked)
