"""Frames made from the protocol's own schemas, mostly right and now and then wrong in the ways
a client gets things wrong: a wrong type, a field left out, a NUL, a number no client holds, a
`_meta` that is no object, a value nested past what the wire says, a URI past the store's key.

Every choice comes from one `random.Random`, so a seed makes the same frames every run.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

from hosts.protocol.actions import ACTIONS
from hosts.protocol.methods import METHODS

SHARED = Path(os.environ.get("AHP_SHARED_DIR", Path(__file__).resolve().parents[3] / "shared"))

#: Stands in a frame's text for a value nested 300 deep (orjson writes 254 at most).
DEEP = "@@fuzz-deep@@"
DEEP_TEXT = "[" * 300 + "]" * 300

_URI_KEYS = {"channel", "resource", "chat", "session", "uri"}


def _defs(name: str) -> dict[str, Any]:
    schema = json.loads((SHARED / "ahp" / "schema" / f"{name}.schema.json").read_text())
    defs: dict[str, Any] = schema["$defs"]
    return defs


def _upper_first(method: str) -> str:
    return method[0].upper() + method[1:]


class FrameMaker:
    def __init__(self, seed: int, client_id: str, uris: list[str]) -> None:
        self.rng = random.Random(seed)
        self.client_id = client_id
        #: The URIs a frame names: the channels that exist, and some that do not.
        self.uris = uris
        self._commands = _defs("commands")
        self._actions = _defs("actions")
        self._action_defs = {
            definition["properties"]["type"]["const"]: definition
            for definition in self._actions.values()
            if isinstance(definition.get("properties", {}).get("type"), dict)
            and "const" in definition["properties"]["type"]
        }
        #: Far from the ids the test client numbers its own requests with.
        self._ids = 1_000_000
        self._seqs = 0

    # -- frames ----------------------------------------------------------------------------

    def frame(self) -> tuple[str, int | None, str]:
        """One frame's text, its request id (None for a notification) and its method."""
        rng = self.rng
        method = rng.choice(list(METHODS))
        if method == "dispatchAction" or (method != "initialize" and rng.random() < 0.4):
            # Actions are most of what clients send.
            method = "dispatchAction"
            params = self.dispatch_params()
        else:
            params = self.params(method)
        notification = METHODS[method].notification
        if rng.random() < 0.05:
            notification = not notification
        frame: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        request_id = None
        if not notification:
            self._ids += 1
            request_id = frame["id"] = self._ids
        text = json.dumps(frame, ensure_ascii=False)
        return text.replace(f'"{DEEP}"', DEEP_TEXT), request_id, method

    def params(self, method: str) -> Any:
        definition = self._commands.get(f"{_upper_first(method)}Params", {"type": "object"})
        value = self.value(definition, self._commands, "params", 0)
        if isinstance(value, dict) and "channel" not in value and self.rng.random() < 0.8:
            value["channel"] = self.uri()
        return value

    def dispatch_params(self) -> dict[str, Any]:
        rng = self.rng
        action_type = rng.choice(list(ACTIONS))
        definition = self._action_defs.get(action_type, {"type": "object"})
        action = self.value(definition, self._actions, "action", 0)
        if isinstance(action, dict) and rng.random() < 0.95:
            action["type"] = action_type
        self._seqs += 1
        seq: Any = self._seqs
        if rng.random() < 0.03:
            seq = rng.choice([1e20, -1.5, "1", None, 2**53])
        return {"channel": self.uri(), "clientSeq": seq, "action": action}

    # -- values ----------------------------------------------------------------------------

    def uri(self) -> str:
        rng = self.rng
        if rng.random() < 0.05:
            return rng.choice(["", "ahp-session:/" + "s" * 600, "nope", "ahp-chat:/\x00"])
        return rng.choice(self.uris)

    def wrong(self) -> Any:
        return self.rng.choice(
            [
                None,
                1e20,
                -1,
                1.5,
                True,
                "",
                "a\x00b",
                "x" * 600,
                [1, "two"],
                {"_meta": 5},
                {"k": DEEP},
                DEEP,
                self._nested(70),
            ]
        )

    def _nested(self, levels: int) -> Any:
        value: Any = "bottom"
        for _ in range(levels):
            value = [value]
        return value

    def value(self, schema: Any, defs: dict[str, Any], key: str, depth: int) -> Any:
        rng = self.rng
        if rng.random() < 0.06:
            return self.wrong()
        if not isinstance(schema, dict):
            return None
        if "$ref" in schema:
            target = defs.get(schema["$ref"].rsplit("/", 1)[-1], {})
            return self.value(target, defs, key, depth)
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return rng.choice(schema["enum"])
        for choice in ("oneOf", "anyOf"):
            if choice in schema:
                return self.value(rng.choice(schema[choice]), defs, key, depth)
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = rng.choice(kind)
        if depth > 8:
            return rng.choice(["leaf", 1, True])
        if kind == "object" or "properties" in schema:
            return self._object(schema, defs, depth)
        if kind == "array":
            items = schema.get("items", {})
            return [self.value(items, defs, key, depth + 1) for _ in range(rng.randrange(3))]
        if kind == "string":
            return self._string(key)
        if kind == "integer":
            return rng.choice([0, 1, 2, 7, 50, 1000])
        if kind == "number":
            return rng.choice([0, 1, 2.5, 75, 1048576])
        if kind == "boolean":
            return rng.random() < 0.5
        return rng.choice(["any", 1, {"k": "v"}])

    def _object(self, schema: dict[str, Any], defs: dict[str, Any], depth: int) -> dict:
        rng = self.rng
        required = set(schema.get("required", []))
        out: dict[str, Any] = {}
        for name, prop in schema.get("properties", {}).items():
            if name in required and rng.random() < 0.97 or rng.random() < 0.4:
                out[name] = self.value(prop, defs, name, depth + 1)
        if schema.get("additionalProperties") not in (None, False) and rng.random() < 0.3:
            out[f"x-{rng.randrange(100)}"] = self.value(
                schema["additionalProperties"], defs, "x", depth + 1
            )
        return out

    def _string(self, key: str) -> str:
        rng = self.rng
        if key in _URI_KEYS:
            return self.uri()
        if key == "clientId":
            return self.client_id if rng.random() < 0.7 else f"other-{rng.randrange(5)}"
        if key == "startedAt":
            return "2026-12-02T08:00:00.000Z"
        words = ["hello", "fix the bug", "/compact", "@src", "ok", "é✓"]
        return rng.choice(words) if rng.random() < 0.7 else f"s{rng.randrange(10_000)}"
