"""A scripted OpenAI-compatible Chat Completions server on loopback, for the openai loop's tests.

No real model fits in a test run, so this server answers the streaming wire format the way
ollama, vLLM and OpenAI do, with the answer picked by the conversation's last message:

* a `tool` message -> `The tool said: <first 40 characters of its content>`;
* a user message starting `read <path>` -> a `read_file` call (arguments in fragments);
  `write <path> <text>` -> `write_file`; `run <command>` -> `run_command`;
  `ask <question>[ | <choice> | <choice>...]` -> an `ask_user` call;
  `client <function> <JSON arguments>` -> a call to that function (a client's tool);
  `call <function> <json arguments>` -> a call of that function (an MCP server's tool, say);
* `tools?` -> the names of the functions the request offered, comma-separated;
* `slow` -> a word every 50 ms for about 10 s; `fail` -> HTTP 500;
* `flaky [<message>]` -> HTTP 500 the first time each conversation is asked, and then what
  `<message>` is answered (`echo: flaky` without one): every model call of the turn fails once,
  the call after a tool's answer too, and a resume asks it again;
* anything else -> `echo: <text>` word by word, after a `reasoning_content` delta.

While the person's last message starts `costly`, each answer's usage also says what the call
cost as OpenRouter does (`usage.cost`, $0.125 a call).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "fake-model"
#: What a call costs, said as OpenRouter says it, while the person's message starts `costly`.
COST_PER_CALL = 0.125


class FakeOpenAi:
    """The server, started in a thread; `.url` is the base URL, `.requests` every body seen."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        #: The conversations a `flaky` message failed once already.
        self.flaked: set[str] = set()
        self._closing = threading.Event()
        fake = self

        class Handler(_Handler):
            server_fake = fake

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        host, port = self._server.server_address[:2]
        self.url = f"http://{host!s}:{port}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    @property
    def closing(self) -> bool:
        return self._closing.is_set()


class _Handler(BaseHTTPRequestHandler):
    server_fake: FakeOpenAi

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read `.requests`, not a log."""

    def do_GET(self) -> None:
        if self.path.rstrip("/") != "/v1/models":
            self._json(404, {"error": {"message": f"no route {self.path}"}})
            return
        self._json(
            200,
            {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "fake"}]},
        )

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body: dict[str, Any] = json.loads(self.rfile.read(length) or b"{}")
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._json(404, {"error": {"message": f"no route {self.path}"}})
            return
        self.server_fake.requests.append(body)
        messages = body.get("messages") or [{"role": "user", "content": ""}]
        last = messages[-1]
        text = _text(last.get("content"))
        if last.get("role") == "user" and text.strip() == "fail":
            self._json(500, {"error": {"message": "the fake model failed", "type": "server"}})
            return
        if _flakes(self.server_fake, messages):
            self._json(500, {"error": {"message": "the fake model failed once", "type": "server"}})
            return
        flaky = text.strip().partition(" ")
        if last.get("role") == "user" and flaky[0] == "flaky" and flaky[2]:
            text = flaky[2]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        words = 0
        try:
            offered = [t.get("function", {}).get("name", "") for t in body.get("tools") or []]
            if last.get("role") == "user" and text.strip() == "tools?":
                script = _words("tools: " + ",".join(offered))
            else:
                script = _script(last.get("role", "user"), text, self.server_fake)
            for delta, finish in script:
                words += 1
                self._chunk({"index": 0, "delta": delta, "finish_reason": finish})
            if include_usage:
                prompt = sum(len(_text(m.get("content")).split()) for m in messages)
                usage = {
                    "prompt_tokens": prompt,
                    "completion_tokens": words,
                    "total_tokens": prompt + words,
                }
                asked = [_text(m.get("content")) for m in messages if m.get("role") == "user"]
                if asked and asked[-1].strip().startswith("costly"):
                    usage["cost"] = COST_PER_CALL
                self._send(_envelope([], usage=usage))
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away (a cancelled turn): nothing left to say

    def _chunk(self, choice: dict[str, Any]) -> None:
        self._send(_envelope([choice]))

    def _send(self, payload: dict[str, Any]) -> None:
        self.wfile.write(b"data: " + json.dumps(payload).encode() + b"\n\n")
        self.wfile.flush()

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


Step = tuple[dict[str, Any], str | None]


def _script(role: str, text: str, fake: FakeOpenAi) -> Iterator[Step]:
    """The deltas (and the finish reason on the last) answering the last message."""
    if role == "tool":
        yield from _words(f"The tool said: {text[:40]}")
        return
    command, _, rest = text.strip().partition(" ")
    if command == "read" and rest:
        yield from _tool_call("read_file", {"path": rest})
    elif command == "write" and rest:
        path, _, content = rest.partition(" ")
        yield from _tool_call("write_file", {"path": path, "content": content})
    elif command == "run" and rest:
        yield from _tool_call("run_command", {"command": rest})
    elif command == "ask" and rest:
        question, *choices = rest.split(" | ")
        yield from _tool_call("ask_user", {"question": question, "choices": choices})
    elif command == "client" and rest:
        function, _, arguments = rest.partition(" ")
        yield from _tool_call(function, json.loads(arguments or "{}"))
    elif command == "call" and rest:
        name, _, arguments = rest.partition(" ")
        yield from _tool_call(name, json.loads(arguments or "{}"))
    elif command == "stamped" and rest:
        # For bench/turn.py: N deltas, one every INTERVAL ms, each the moment it was sent
        # (perf_counter is the machine's monotonic clock, the same in every process).
        count, _, interval = rest.partition(" ")
        for _ in range(int(count)):
            if fake.closing:
                break
            yield {"content": f"@{time.perf_counter():.6f} "}, None
            time.sleep(float(interval or 0) / 1000)
        yield {}, "stop"
    elif text.strip() == "hold":
        # A turn that runs until it is stopped (the client goes away) or the fake closes:
        # for a test that must find it running, however slow the machine.
        n = 0
        while not fake.closing:
            n += 1
            yield {"content": f"word{n} "}, None
            time.sleep(0.05)
        yield {}, "stop"
    elif text.strip() == "slow":
        deadline = time.monotonic() + 10
        n = 0
        while time.monotonic() < deadline and not fake.closing:
            n += 1
            yield {"content": f"word{n} "}, None
            time.sleep(0.05)
        yield {}, "stop"
    else:
        yield {"role": "assistant", "content": "", "reasoning_content": f"Echoing {text!r}."}, None
        yield from _words(f"echo: {text}")


def _flakes(fake: FakeOpenAi, messages: list[dict[str, Any]]) -> bool:
    """Whether a `flaky` conversation fails now: the first time it is asked."""
    asked = [_text(m.get("content")) for m in messages if m.get("role") == "user"]
    if not asked or asked[-1].strip().partition(" ")[0] != "flaky":
        return False
    conversation = json.dumps(messages, sort_keys=True)
    with _flaking:
        if conversation in fake.flaked:
            return False
        fake.flaked.add(conversation)
        return True


_flaking = threading.Lock()


def _words(text: str) -> Iterator[Step]:
    words = text.split(" ")
    for i, word in enumerate(words):
        yield {"content": word if i == len(words) - 1 else word + " "}, None
    yield {}, "stop"


def _tool_call(name: str, arguments: dict[str, Any]) -> Iterator[Step]:
    encoded = json.dumps(arguments)
    cut = max(1, len(encoded) // 2)
    call_id = f"call_{name}_{time.monotonic_ns()}"
    yield (
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "index": 0,
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": ""},
                }
            ],
        },
        None,
    )
    for piece in (encoded[:cut], encoded[cut:]):
        yield {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}, None
    yield {}, "tool_calls"


def _envelope(choices: list[dict[str, Any]], usage: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": MODEL,
        "choices": choices,
        "usage": usage,
    }


def _text(content: Any) -> str:
    """A message's text, whether the content is a string or a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""
