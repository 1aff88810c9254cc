"""What an automation's definition may hold, checked before the store is asked.

A create is checked whole; an update is a patch (absent keys are left alone) and only what it
names is checked, then laid over what is kept. Each refusal names what was wrong.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson

from ...protocol.limits import MAX_ID_LENGTH
from . import cron

DEFINITION_KEYS = ("title", "message", "session", "enabled", "triggers", "disableConditions")
#: A title as the store keeps it (automations.Automation.title, 512 characters).
TITLE_MAX = 512
#: A prompt's length: generous for a task's instructions, and what every run sends its agent.
MESSAGE_TEXT_MAX = 10_000
#: A definition whole, as JSON: every subscriber of the catalogue is sent every entry.
DEFINITION_MAX_BYTES = 32 * 1024
MISFIRE_POLICIES = ("skip", "runOnce")
CONDITION_KINDS = ("afterRuns", "afterDate")


def parse_instant(text: Any) -> datetime | None:
    """An ISO 8601 timestamp with its offset (or Z), or None for anything else."""
    if not isinstance(text, str):
        return None
    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        return None
    return at if at.tzinfo is not None else None


def conditions_problem(conditions: Any) -> str | None:
    """Why `disableConditions` cannot be kept: a kind named twice, a kind neither of the two,
    an afterRuns whose max is not a whole number of one or more, an afterDate that is not a
    timestamp."""
    if conditions is None:
        return None
    if not isinstance(conditions, list):
        return "disableConditions must be a list"
    seen: set[str] = set()
    for condition in conditions:
        kind = condition.get("kind") if isinstance(condition, dict) else None
        if kind not in CONDITION_KINDS:
            return f"disableConditions: {kind!r} is not a condition kind (afterRuns, afterDate)"
        if kind in seen:
            return f"disableConditions: {kind} is named more than once"
        seen.add(kind)
        if kind == "afterRuns":
            most = condition.get("max")
            if isinstance(most, bool) or not isinstance(most, int) or most < 1:
                return f"disableConditions: afterRuns.max must be a whole number of one or more, not {most!r}"  # noqa: E501
        elif parse_instant(condition.get("date")) is None:
            return f"disableConditions: afterDate.date is not an ISO 8601 timestamp: {condition.get('date')!r}"  # noqa: E501
    return None


def _triggers_problem(triggers: Any) -> str | None:
    if not isinstance(triggers, list):
        return "triggers must be a list"
    ids: set[str] = set()
    for trigger in triggers:
        if not isinstance(trigger, dict):
            return "triggers: each trigger must be an object"
        trigger_id = trigger.get("id")
        if not isinstance(trigger_id, str) or not trigger_id or trigger_id in ids:
            return "triggers: each trigger needs an id of its own"
        if len(trigger_id) > MAX_ID_LENGTH:
            # A run keeps the id of the trigger that fired it, in a column this long.
            return f"triggers: a trigger's id is at most {MAX_ID_LENGTH} characters"
        ids.add(trigger_id)
        if trigger.get("kind") == "event":
            return f"triggers: event trigger type is not available here: {trigger.get('type')!r}"
        if trigger.get("kind") != "schedule":
            return f"triggers: {trigger.get('kind')!r} is not a trigger kind (schedule, event)"
        schedule = trigger.get("schedule")
        if not isinstance(schedule, dict):
            return f"triggers: {trigger_id} needs a schedule"
        reason = cron.problem(schedule.get("expression"), schedule.get("timeZone"))
        if reason is not None:
            return f"triggers: {trigger_id}: {reason}"
        if trigger.get("misfirePolicy", "runOnce") not in MISFIRE_POLICIES:
            return f"triggers: {trigger_id}: misfirePolicy must be skip or runOnce"
    return None


def _session_problem(session: Any) -> str | None:
    if not isinstance(session, dict):
        return "session must be a session template object"
    if "provider" in session and not isinstance(session["provider"], str):
        return "session.provider must be a string"
    folders = session.get("workingDirectories")
    if folders is not None and (
        not isinstance(folders, list) or not all(isinstance(f, str) for f in folders)
    ):
        return "session.workingDirectories must be a list of URIs"
    if "config" in session and not isinstance(session["config"], dict):
        return "session.config must be an object"
    return _customizations_problem(session.get("customizations"))


def _customizations_problem(plugins: Any) -> str | None:
    """A list whose plugins each name an id of their own and a URI is still refused: this
    host has no directory to copy client plugins into, and a definition whose every run would
    load nothing is refused rather than kept (the seed's automation/createRequested)."""
    if plugins is None:
        return None
    if not isinstance(plugins, list) or not all(isinstance(p, dict) for p in plugins):
        return "session.customizations must be a list of plugin objects"
    ids = [p.get("id") for p in plugins]
    if not all(isinstance(i, str) and i for i in ids) or len(set(ids)) != len(ids):
        return "Automation customization ids must be non-empty and unique."
    for plugin in plugins:
        if not isinstance(plugin.get("uri"), str) or not plugin["uri"]:
            return f"session.customizations: {plugin['id']} names no uri"
    if plugins:
        return "session.customizations: this host does not capture client plugins for automations"
    return None


def _title_problem(title: Any) -> str | None:
    if not isinstance(title, str) or not title.strip():
        return "title must be a non-empty string"
    if len(title) > TITLE_MAX:
        return f"title is {len(title)} characters, more than {TITLE_MAX}"
    return None


def _message_problem(message: Any) -> str | None:
    if (
        not isinstance(message, dict)
        or not isinstance(message.get("text"), str)
        or (message.get("origin") or {}).get("kind") != "automation"
    ):
        return "message must be a Message with a text whose origin kind is automation"
    if len(message["text"]) > MESSAGE_TEXT_MAX:
        return f"message.text is {len(message['text'])} characters, more than {MESSAGE_TEXT_MAX}"
    return None


_CHECKS = {
    "title": _title_problem,
    "message": _message_problem,
    "session": _session_problem,
    "enabled": lambda v: None if isinstance(v, bool) else "enabled must be a boolean",
    "triggers": _triggers_problem,
    "disableConditions": conditions_problem,
}


def definition_problem(definition: Any) -> str | None:
    """Why a definition a create carries cannot be kept, or None."""
    if not isinstance(definition, dict):
        return "definition must be an object"
    for key in ("title", "message", "session", "enabled", "triggers"):
        if key not in definition:
            return f"definition.{key} is required"
    if (reason := patch_problem(definition)) is not None:
        return reason
    try:
        size = len(orjson.dumps(definition))
    except TypeError as exc:  # what REST's JSON parses and a client's never carries
        return f"definition cannot be said to a client: {exc}"
    if size > DEFINITION_MAX_BYTES:
        return f"definition is {size} bytes as JSON, more than {DEFINITION_MAX_BYTES}"
    return None


def patch_problem(changes: Any) -> str | None:
    """Why a patch cannot be laid over a definition (only the keys it names are checked)."""
    if not isinstance(changes, dict):
        return "changes must be an object"
    for key, check in _CHECKS.items():
        if key in changes and (reason := check(changes[key])) is not None:
            return reason
    if "_meta" in changes and not isinstance(changes["_meta"], dict):
        return "_meta must be an object"
    return None


def patched(definition: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """The definition with the keys the patch names replaced, the rest left alone."""
    out = dict(definition)
    for key in (*DEFINITION_KEYS, "_meta"):
        if key in changes:
            if changes[key] is None:
                out.pop(key, None)
            else:
                out[key] = changes[key]
    return out


def after_runs(definition: dict[str, Any]) -> int | None:
    """The afterRuns allowance the definition names, or None."""
    for condition in definition.get("disableConditions") or []:
        if condition.get("kind") == "afterRuns":
            return int(condition["max"])
    return None


def after_date(definition: dict[str, Any]) -> datetime | None:
    for condition in definition.get("disableConditions") or []:
        if condition.get("kind") == "afterDate":
            return parse_instant(condition["date"])
    return None


def schedule_triggers(definition: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for t in definition.get("triggers") or [] if t.get("kind") == "schedule"]
