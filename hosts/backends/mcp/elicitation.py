"""An MCP server's question (elicitation) as the protocol asks a person (ChatInputRequest), and
the person's answer as the server takes it (ElicitResult).

A form's requestedSchema is flat: one property per question. Each becomes the protocol's
question of its kind: a string with `enum` (or `oneOf` consts with titles) a single choice, an
array of such a multiple choice, a string text (with its format and lengths), a number or an
integer a number (with its bounds), a boolean a yes/no. A URL elicitation is a request with its
`url` and no questions. The answers come back by property name, each in the type the schema
asked for.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from mcp.types import ElicitRequestFormParams, ElicitRequestURLParams, ElicitResult

from hosts.backends.base import InputAnswer


def input_request(params: ElicitRequestFormParams | ElicitRequestURLParams) -> dict[str, Any]:
    """The ChatInputRequest that asks what the server asked."""
    request: dict[str, Any] = {"id": f"mcp-{uuid.uuid4().hex}", "message": params.message}
    if isinstance(params, ElicitRequestURLParams):
        request["url"] = params.url
        return request
    schema = params.requested_schema or {}
    properties = schema.get("properties")
    required = schema.get("required")
    needed = set(required) if isinstance(required, list) else set()
    questions = []
    if isinstance(properties, Mapping):
        for name, prop in properties.items():
            if isinstance(name, str) and isinstance(prop, Mapping):
                questions.append(_question(name, prop, name in needed))
    request["questions"] = questions
    return request


def _question(name: str, prop: Mapping[str, Any], required: bool) -> dict[str, Any]:
    title = prop.get("title")
    description = prop.get("description")
    question: dict[str, Any] = {
        "id": name,
        "message": str(description or title or name),
        "required": required,
    }
    if isinstance(title, str) and title:
        question["title"] = title
    kind = prop.get("type")
    default = prop.get("default")
    options = _options(prop)
    if kind == "array":
        items = prop.get("items")
        question["kind"] = "multi-select"
        question["options"] = _options(items) if isinstance(items, Mapping) else []
        _bound(question, prop, "minItems", "min")
        _bound(question, prop, "maxItems", "max")
    elif options:
        question["kind"] = "single-select"
        question["options"] = options
    elif kind in ("number", "integer"):
        question["kind"] = kind
        _bound(question, prop, "minimum", "min")
        _bound(question, prop, "maximum", "max")
        if _is_number(default):
            question["defaultValue"] = default
    elif kind == "boolean":
        question["kind"] = "boolean"
        if isinstance(default, bool):
            question["defaultValue"] = default
    else:
        question["kind"] = "text"
        if isinstance(prop.get("format"), str):
            question["format"] = prop["format"]
        _bound(question, prop, "minLength", "min")
        _bound(question, prop, "maxLength", "max")
        if isinstance(default, str):
            question["defaultValue"] = default
    return question


def _options(prop: Mapping[str, Any]) -> list[dict[str, str]]:
    """A choice's options: `enum` (labelled by the legacy `enumNames`), or `oneOf`/`anyOf`
    consts with their titles."""
    values = prop.get("enum")
    if isinstance(values, list):
        names = prop.get("enumNames")
        labels = names if isinstance(names, list) and len(names) == len(values) else values
        pairs = zip(values, labels, strict=True)
        return [{"id": str(value), "label": str(label)} for value, label in pairs]
    for key in ("oneOf", "anyOf"):
        choices = prop.get(key)
        if isinstance(choices, list):
            return [
                {"id": str(c["const"]), "label": str(c.get("title") or c["const"])}
                for c in choices
                if isinstance(c, Mapping) and "const" in c
            ]
    return []


def _bound(question: dict[str, Any], prop: Mapping[str, Any], key: str, to: str) -> None:
    if _is_number(prop.get(key)):
        question[to] = prop[key]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def elicit_result(
    answer: InputAnswer, params: ElicitRequestFormParams | ElicitRequestURLParams
) -> ElicitResult:
    """The server's answer: accept with each answered question's value in the schema's type,
    or decline / cancel as the person did. A skipped question is left out."""
    if answer.response != "accept":
        return ElicitResult(action=answer.response)
    if isinstance(params, ElicitRequestURLParams):
        return ElicitResult(action="accept")
    properties = (params.requested_schema or {}).get("properties") or {}
    content: dict[str, Any] = {}
    for name, given in answer.answers.items():
        prop = properties.get(name)
        if not isinstance(prop, Mapping) or not isinstance(given, Mapping):
            continue
        if given.get("state") == "skipped":
            continue
        value = given.get("value")
        if not isinstance(value, Mapping) or "value" not in value:
            continue
        taken = _typed(value["value"], prop)
        if taken is not None:
            content[name] = taken
    return ElicitResult(action="accept", content=content)


def _typed(value: Any, prop: Mapping[str, Any]) -> Any:
    """An answer's value as the property's type has it (None: it cannot be)."""
    kind = prop.get("type")
    if kind == "integer":
        if _is_number(value) and float(value).is_integer():
            return int(value)
        return None
    if kind == "number":
        return value if _is_number(value) else None
    if kind == "boolean":
        return value if isinstance(value, bool) else None
    if kind == "array":
        return [str(v) for v in value] if isinstance(value, list) else None
    return value if isinstance(value, str) else None
