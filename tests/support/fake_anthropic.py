"""A scripted Anthropic Messages API server on loopback, for the claude backend's tests.

The real Claude Code CLI (the one claude-agent-sdk bundles) is pointed at it with
ANTHROPIC_BASE_URL. It answers `POST /v1/messages` with the streaming wire format
(`message_start`, `content_block_start` / `_delta` / `_stop` for text, thinking and tool_use,
`message_delta` with the stop reason and usage, `message_stop`), the answer picked by the
person's last words in the conversation:

* the last message a `tool_result` -> `The tool said: <its first 40 characters>`;
* `think <text>` -> a thinking block, then `echo: <text>`;
* `write <path> <text>` -> a `Write` tool_use (its input streamed in two pieces);
* `run <command>` -> a `Bash` tool_use;
* `background <command>` -> a `Bash` tool_use with `run_in_background`;
* `delegate <prompt>` -> a `Task` tool_use (a general-purpose subagent given the prompt);
* `ask <question>` -> an `AskUserQuestion` tool_use: the question, options Red and Blue;
* `call <tool name> <JSON input>` -> a tool_use of that tool (an `mcp__<server>__<tool>`);
* `hold` -> a word every 50 ms until the client goes away (or the fake closes);
* `fail` -> HTTP 400 with an `invalid_request_error` (not retried by the CLI);
* `flaky <text>` -> HTTP 500 with an `api_error` the first time these words are seen, then
  `echo: flaky <text>`;
* `unauthorized` -> HTTP 401 with an `authentication_error` (a key the API refuses);
* anything else -> `echo: <text>` word by word.

The CLI's side requests (a title, a quota probe: not streamed) get a short plain answer.
Every request body is kept in `.requests`, the streamed ones also in `.turns`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "claude-fake-1"
#: What every streamed answer says it read and wrote.
INPUT_TOKENS = 120
OUTPUT_TOKENS = 7
ERROR_MESSAGE = "the fake model refuses this prompt"
FLAKY_MESSAGE = "the fake model is overloaded, once"


class FakeAnthropic:
    """The server, started in a thread; `.url` is the base URL (ANTHROPIC_BASE_URL)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._closing = threading.Event()
        #: Set while a `hold` answer streams: a test cancels once it is seen.
        self.holding = threading.Event()
        #: The `flaky` words failed once already.
        self.flaked: set[str] = set()
        fake = self

        class Handler(_Handler):
            server_fake = fake

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        host, port = self._server.server_address[:2]
        self.url = f"http://{host!s}:{port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def turns(self) -> list[dict[str, Any]]:
        """The streamed requests: the model calls of the conversation itself."""
        return [r for r in self.requests if r.get("stream")]

    def close(self) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    @property
    def closing(self) -> bool:
        return self._closing.is_set()


class _Handler(BaseHTTPRequestHandler):
    server_fake: FakeAnthropic
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read `.requests`, not a log."""

    def do_GET(self) -> None:
        self._json(404, _error("not_found_error", f"no route {self.path}"))

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body: dict[str, Any] = json.loads(self.rfile.read(length) or b"{}")
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/v1/messages/count_tokens":
            self._json(200, {"input_tokens": INPUT_TOKENS})
            return
        if path != "/v1/messages":
            self._json(404, _error("not_found_error", f"no route {self.path}"))
            return
        fake = self.server_fake
        fake.requests.append(body)
        # The CLI puts its own `system` messages among the conversation's: the person's
        # last words are in the last user message.
        users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
        last = users[-1] if users else {"role": "user", "content": ""}
        result = _tool_result(last)
        said = _said(last)
        if not body.get("stream"):
            self._json(200, _whole_message("Fake title"))
            return
        if result is None and said.strip() == "fail":
            self._json(400, _error("invalid_request_error", ERROR_MESSAGE))
            return
        if result is None and said.strip().startswith("flaky ") and said not in fake.flaked:
            fake.flaked.add(said)
            self._json(500, _error("api_error", FLAKY_MESSAGE))
            return
        if result is None and said.strip() == "unauthorized":
            self._json(401, _error("authentication_error", "invalid x-api-key"))
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        try:
            for event in _answer(result, said, self.server_fake):
                self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away (an interrupted turn): nothing left to say
        finally:
            self.server_fake.holding.clear()

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if status >= 400:
            self.send_header("x-should-retry", "false")
        self.end_headers()
        self.wfile.write(data)


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def _whole_message(text: str) -> dict[str, Any]:
    return {
        "id": f"msg_fake_{time.monotonic_ns()}",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def _tool_result(message: dict[str, Any]) -> str | None:
    """The text of the tool result the message carries, if it carries one."""
    content = message.get("content")
    if message.get("role") != "user" or not isinstance(content, list):
        return None
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            inner = block.get("content")
            if isinstance(inner, list):
                return "".join(b.get("text", "") for b in inner if isinstance(b, dict))
            return str(inner or "")
    return None


def _said(message: dict[str, Any]) -> str:
    """The person's words in a user message: its last text block that is not a reminder the
    CLI put beside them."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    texts = [
        block.get("text", "")
        for block in content or []
        if isinstance(block, dict) and block.get("type") == "text"
    ]
    texts = [t for t in texts if not t.lstrip().startswith("<system-reminder>")]
    return texts[-1] if texts else ""


Event = dict[str, Any]


def _answer(result: str | None, said: str, fake: FakeAnthropic) -> Iterator[Event]:
    yield {
        "type": "message_start",
        "message": {
            "id": f"msg_fake_{time.monotonic_ns()}",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": INPUT_TOKENS, "output_tokens": 1},
        },
    }
    stop = "end_turn"
    command, _, rest = said.strip().partition(" ")
    if result is not None:
        yield from _text_block(0, f"The tool said: {result[:40]}")
    elif command == "think" and rest:
        yield from _thinking_block(0, f"Thinking about {rest}.")
        yield from _text_block(1, f"echo: {rest}")
    elif command == "write" and rest:
        path, _, content = rest.partition(" ")
        yield from _tool_use_block(0, "Write", {"file_path": path, "content": content})
        stop = "tool_use"
    elif command == "run" and rest:
        yield from _tool_use_block(0, "Bash", {"command": rest, "description": "Run it"})
        stop = "tool_use"
    elif command == "background" and rest:
        arguments = {"command": rest, "description": "Run it", "run_in_background": True}
        yield from _tool_use_block(0, "Bash", arguments)
        stop = "tool_use"
    elif command == "delegate" and rest:
        arguments = {
            "description": "Delegate it",
            "prompt": rest,
            "subagent_type": "general-purpose",
        }
        yield from _tool_use_block(0, "Task", arguments)
        stop = "tool_use"
    elif command == "ask" and rest:
        yield from _tool_use_block(0, "AskUserQuestion", ask_user_question(rest))
        stop = "tool_use"
    elif command == "call" and rest:
        name, _, given = rest.partition(" ")
        yield from _tool_use_block(0, name, json.loads(given or "{}"))
        stop = "tool_use"
    elif said.strip() == "hold":
        yield {"type": "content_block_start", "index": 0, "content_block": _empty_text()}
        fake.holding.set()
        n = 0
        while not fake.closing:
            n += 1
            yield _delta(0, {"type": "text_delta", "text": f"word{n} "})
            time.sleep(0.05)
        yield {"type": "content_block_stop", "index": 0}
    else:
        yield from _text_block(0, f"echo: {said}")
    yield {
        "type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": None},
        "usage": {"output_tokens": OUTPUT_TOKENS},
    }
    yield {"type": "message_stop"}


def ask_user_question(question: str) -> dict[str, Any]:
    """The AskUserQuestion input `ask <question>` makes: one question, two colours."""
    return {
        "questions": [
            {
                "question": question,
                "header": "Colour",
                "options": [
                    {"label": "Red", "description": "The warm one"},
                    {"label": "Blue", "description": "The cool one"},
                ],
                "multiSelect": False,
            }
        ]
    }


def _empty_text() -> dict[str, Any]:
    return {"type": "text", "text": ""}


def _delta(index: int, delta: dict[str, Any]) -> Event:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def _text_block(index: int, text: str) -> Iterator[Event]:
    yield {"type": "content_block_start", "index": index, "content_block": _empty_text()}
    words = text.split(" ")
    for i, word in enumerate(words):
        piece = word if i == len(words) - 1 else word + " "
        yield _delta(index, {"type": "text_delta", "text": piece})
    yield {"type": "content_block_stop", "index": index}


def _thinking_block(index: int, thinking: str) -> Iterator[Event]:
    yield {
        "type": "content_block_start",
        "index": index,
        "content_block": {"type": "thinking", "thinking": "", "signature": ""},
    }
    for word in thinking.split(" "):
        yield _delta(index, {"type": "thinking_delta", "thinking": word + " "})
    yield _delta(index, {"type": "signature_delta", "signature": "fake-signature"})
    yield {"type": "content_block_stop", "index": index}


def _tool_use_block(index: int, name: str, arguments: dict[str, Any]) -> Iterator[Event]:
    yield {
        "type": "content_block_start",
        "index": index,
        "content_block": {
            "type": "tool_use",
            "id": f"toolu_fake_{time.monotonic_ns()}",
            "name": name,
            "input": {},
        },
    }
    encoded = json.dumps(arguments)
    cut = max(1, len(encoded) // 2)
    for piece in (encoded[:cut], encoded[cut:]):
        yield _delta(index, {"type": "input_json_delta", "partial_json": piece})
    yield {"type": "content_block_stop", "index": index}
