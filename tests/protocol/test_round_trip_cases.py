"""Run the protocol's round-trip corpus through this host's decoding and encoding.

The cases are the protocol's own (``types/test-cases/round-trips`` at 1.0.0), read from the
shared folder beside the repository (``ahp/cases/round-trips``, with the protocol's
``KNOWN-FIDELITY-GAPS.md``). Each names a wire type and an ``input``; the input is carried
where that type travels on the wire, read by the host's frame parser, passed through what the
host does with it, and said again by the host's frame builders. The host keeps a message as the
JSON it came as, so unknown keys travel on: a group B case is compared with its
``preservedOutput``, every other case with ``acceptableOutputs[0]``. As the corpus's note says,
key order does not matter; key presence, ``null`` and the JSON type of every value do.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from hosts.engine.replay import seen
from hosts.protocol import jsonrpc
from hosts.protocol.jsonrpc import Incoming, Response
from tests.schema_check import AHP_DIR

CASES_DIR = AHP_DIR / "cases" / "round-trips"
CASE_FILES = sorted(CASES_DIR.glob("*.json"))
CHANNEL = "ahp-session:/6c1e0c1e-0000-4000-8000-000000000001"


def _incoming(text: str) -> Incoming:
    message = jsonrpc.parse(text)
    assert isinstance(message, Incoming)
    return message


def _response(text: str) -> Response:
    message = jsonrpc.parse(text)
    assert isinstance(message, Response)
    return message


def _json_rpc_message(value: Any) -> Any:
    # The message itself: read, then said again as it was read.
    return orjson.loads(jsonrpc.encode(jsonrpc.parse(orjson.dumps(value))))


def _action_envelope(value: Any) -> Any:
    # An `action` notification's params, as the replay ring re-says an envelope through an
    # action's view (the one place the host reads an envelope back and writes it again).
    params = _incoming(jsonrpc.notification_frame("action", value)).params
    said = seen(jsonrpc.dumps(params), None, {params["action"]["type"]: lambda _who, a: a})
    return orjson.loads(said)


def _state_action(value: Any) -> Any:
    # An action as a dispatchAction frame carries it, said again in an envelope. (Whether a
    # client may send it is the host's rule, not its decoding: a relayed action from a newer
    # host, as in the message-origin case, is one no client dispatches here.)
    frame = jsonrpc.request_frame(
        1, "dispatchAction", {"channel": CHANNEL, "clientSeq": 1, "action": value}
    )
    action = _incoming(frame).params["action"]
    envelope = {"channel": CHANNEL, "action": action, "serverSeq": 1}
    return orjson.loads(jsonrpc.notification_frame("action", envelope))["params"]["action"]


def _carried_value(value: Any) -> Any:
    # Any other type: a value in a JSON-RPC result, read from a frame and said again.
    response = _response(jsonrpc.result_frame(1, value))
    return orjson.loads(jsonrpc.encode(response))["result"]


ROUTES = {
    "JsonRpcMessage": _json_rpc_message,
    "ActionEnvelope": _action_envelope,
    "StateAction": _state_action,
}


def _canonical(value: Any) -> bytes:
    # Key order does not matter; every value's JSON type does (1 is not 1.0, true is not 1).
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def test_the_shared_round_trip_folder_holds_every_case() -> None:
    assert len(CASE_FILES) == 50, f"expected 50 round-trip cases in {CASES_DIR}"
    assert (CASES_DIR / "KNOWN-FIDELITY-GAPS.md").is_file()


@pytest.mark.parametrize("case_file", CASE_FILES, ids=[path.stem for path in CASE_FILES])
def test_round_trip_case(case_file: Path) -> None:
    case = json.loads(case_file.read_text(encoding="utf-8"))
    assert len(case["acceptableOutputs"]) == 1, "the corpus allows exactly one canonical form"
    expected = case["preservedOutput"] if case.get("group") == "B" else case["acceptableOutputs"][0]
    output = ROUTES.get(case["type"], _carried_value)(case["input"])
    assert _canonical(output) == _canonical(expected), case["description"]


def test_a_group_b_case_keeps_the_keys_the_host_does_not_model() -> None:
    # The preserved form is not the canonical dropped one: this host is a preserving host.
    case = json.loads((CASES_DIR / "017-unknown-wire-keys-ignored.json").read_text())
    output = _carried_value(case["input"])
    assert output["unknownFutureKey"] == {"nested": True}
    assert _canonical(output) != _canonical(case["acceptableOutputs"][0])
