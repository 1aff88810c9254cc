"""What an agent reports about its sessions: modes, models and slash commands, read raw."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .json_fields import mappings, string


@dataclass(frozen=True, slots=True)
class SessionFacts:
    """Modes and models from a raw `session/new` or `session/load` result, when it has them."""

    modes: tuple[dict[str, str], ...] = ()
    current_mode: str | None = None
    models: tuple[tuple[str, str], ...] = ()
    current_model: str | None = None
    #: The config option that selects the model (the ACP way since configOptions exist).
    model_option: str | None = None

    @classmethod
    def parse(cls, result: Any) -> SessionFacts:
        """Read a raw result; what is missing or malformed is simply not there."""
        if not isinstance(result, Mapping):
            return cls()
        raw_modes = _mapping(result.get("modes"))
        modes = [
            {"id": mode_id, "name": name}
            for mode_id, name in _named(mappings(raw_modes.get("availableModes")), "id")
        ]
        # The older, unstable `models` field some agents still send.
        raw_models = _mapping(result.get("models"))
        current_model = string(raw_models.get("currentModelId"))
        choices = list(_named(mappings(raw_models.get("availableModels")), "modelId"))
        model_option = None
        for option in mappings(result.get("configOptions")):
            if option.get("category") != "model" or option.get("type") != "select":
                continue
            model_option = string(option.get("id"))
            current_model = string(option.get("currentValue")) or current_model
            choices.extend(_named(_select_choices(option.get("options")), "value"))
        models: dict[str, str] = {}
        for model_id, name in choices:
            models.setdefault(model_id, name)  # the first name given for a model is kept
        return cls(
            modes=tuple(modes),
            current_mode=string(raw_modes.get("currentModeId")),
            models=tuple(models.items()),
            current_model=current_model,
            model_option=model_option,
        )

    def merged(self, newer: SessionFacts) -> SessionFacts:
        """These facts with what a newer session reported in their place, where it reported any."""
        return SessionFacts(
            modes=newer.modes or self.modes,
            current_mode=newer.current_mode if newer.modes else self.current_mode,
            models=newer.models or self.models,
            current_model=newer.current_model if newer.models else self.current_model,
            model_option=newer.model_option or self.model_option,
        )


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _named(items: Iterable[Mapping[str, Any]], key: str) -> Iterator[tuple[str, str]]:
    """(id, name) of each item with an id under `key`; an item without a name is named by its id."""
    for item in items:
        if item_id := string(item.get(key)):
            yield item_id, string(item.get("name")) or item_id


def _select_choices(options: Any) -> Iterable[Mapping[str, Any]]:
    """The choices of a select config option, flat or in groups."""
    for item in mappings(options):
        if "options" in item:
            yield from mappings(item.get("options"))
        else:
            yield item


def parse_commands(raw: Any) -> list[dict[str, Any]]:
    """An `available_commands_update`'s commands as {"name", "description", "hint"}."""
    commands: list[dict[str, Any]] = []
    for command in mappings(raw):
        name = string(command.get("name"))
        if name is None:
            continue
        hint = command.get("input")
        commands.append(
            {
                "name": name,
                "description": string(command.get("description")) or "",
                "hint": string(hint.get("hint")) if isinstance(hint, Mapping) else None,
            }
        )
    return commands
