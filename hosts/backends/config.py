"""The operator's agents and MCP servers, read from the JSON file AHPD_CONFIG names.

```json
{"agents": [
  {"provider": "claude", "kind": "acp", "displayName": "Claude Code",
   "command": "claude-agent-acp", "args": [], "env": {"ANTHROPIC_API_KEY": "..."}},
  {"provider": "local", "kind": "openai", "displayName": "Local model",
   "baseUrl": "http://127.0.0.1:11434/v1", "model": "qwen2.5-coder", "apiKey": "none"},
  {"provider": "claude-sdk", "kind": "claude", "displayName": "Claude",
   "models": ["claude-sonnet-4-5"], "env": {"ANTHROPIC_API_KEY": "..."}}
]}
```
Every bad agent is refused at start with a message naming the entry and the field.

`mcpServers` is the host's own MCP servers, by name, every session offered them, in VS Code's
two shapes (`type` stdio: `command`, `args`, `cwd`, `env`; `type` http: `url`, `headers`; a
`type` left out is read from which of `command` and `url` the entry has):

```json
{"mcpServers": {
  "files": {"type": "stdio", "command": "mcp-server-filesystem", "args": ["/srv"],
            "env": {"TOKEN": "..."}},
  "issues": {"type": "http", "url": "http://127.0.0.1:9310/mcp",
             "headers": {"Authorization": "Bearer ..."}}
}}
```
A bad server is one warning naming the entry and what is wrong, and is left out: one server
nobody can reach is a gap in an agent's reach, not a host that will not start. `check_mcp_server`
is the one check of a server's shape: the team's registry (mcp_servers/) checks its rows with it.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..protocol.limits import figure_problem
from .base import Agent, AgentConfig, McpServerSpec
from .managed_settings import ManagedSettingsError, parse_managed_settings

log = logging.getLogger("ahpd.config")

_PROVIDER = re.compile(r"[a-z][a-z0-9._-]*")


class ConfigError(ValueError):
    """The agents file cannot be used; the message says where and why."""


def _str(entry: dict[str, Any], where: str, key: str, *, required: bool = False) -> str:
    value = entry.get(key, "")
    if not isinstance(value, str) or (required and not value):
        raise ConfigError(f"{where}: {key} must be a {'non-empty ' if required else ''}string")
    return value


def parse_agents(data: Any, source: str = "AHPD_CONFIG") -> list[AgentConfig]:
    if not isinstance(data, dict) or not isinstance(data.get("agents"), list):
        raise ConfigError(f"{source}: the file must be an object with an agents list")
    configs: list[AgentConfig] = []
    seen: set[str] = set()
    try:
        managed = parse_managed_settings(data, source)
    except ManagedSettingsError as error:
        raise ConfigError(str(error)) from None
    for index, entry in enumerate(data["agents"]):
        where = f"{source}: agents[{index}]"
        if not isinstance(entry, dict):
            raise ConfigError(f"{where} must be an object")
        provider = _str(entry, where, "provider", required=True)
        if not _PROVIDER.fullmatch(provider):
            raise ConfigError(f"{where}: provider must be lower-case letters, digits, . _ -")
        if provider in seen:
            raise ConfigError(f"{where}: provider {provider!r} is configured twice")
        seen.add(provider)
        kind = entry.get("kind")
        if kind not in ("acp", "openai", "claude"):
            raise ConfigError(f"{where}: kind must be acp, openai or claude")
        env = entry.get("env", {})
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            raise ConfigError(f"{where}: env must be an object of strings")
        args = entry.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ConfigError(f"{where}: args must be a list of strings")
        models = entry.get("models", [])
        if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
            raise ConfigError(f"{where}: models must be a list of strings")
        timeout = entry.get("promptTimeoutSeconds", 600)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise ConfigError(f"{where}: promptTimeoutSeconds must be a positive number")
        prices = _prices(entry.get("prices", {}), where)
        config = AgentConfig(
            provider=provider,
            kind=kind,
            display_name=_str(entry, where, "displayName") or provider,
            description=_str(entry, where, "description"),
            command=_str(entry, where, "command", required=kind == "acp"),
            args=tuple(args),
            env=dict(env),
            home=_str(entry, where, "home") or None,
            auth_method=_str(entry, where, "authMethod") or None,
            prompt_timeout_s=float(timeout),
            base_url=_str(entry, where, "baseUrl", required=kind == "openai"),
            model=_str(entry, where, "model", required=kind == "openai"),
            api_key=_str(entry, where, "apiKey"),
            models=tuple(models),
            prices=prices,
            cli_path=_str(entry, where, "cliPath"),
            managed=managed,
        )
        configs.append(config)
    return configs


PRICE_KEYS = ("input", "output", "cacheRead", "cacheWrite")
#: The most a price (US dollars per million tokens) may be: a dollar a token, far past any
#: model's, and a turn's cost at it fits what usage.UsageRecord.cost_usd keeps (10 digits
#: before the point) up to ten thousand million tokens.
PRICE_MAX = Decimal(1_000_000)


def _prices(value: Any, where: str) -> dict[str, dict[str, float]]:
    """{model glob: {input, output, cacheRead, cacheWrite}}, US dollars per million tokens."""
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: prices must be an object of models")
    out: dict[str, dict[str, float]] = {}
    for model, price in value.items():
        if not isinstance(price, dict):
            raise ConfigError(f"{where}: prices.{model} must be an object")
        for key, amount in price.items():
            if key not in PRICE_KEYS:
                raise ConfigError(f"{where}: prices.{model}.{key} is not one of {PRICE_KEYS}")
            if (problem := figure_problem(amount, PRICE_MAX)) is not None:
                raise ConfigError(f"{where}: prices.{model}.{key} {problem}")
        out[model] = {key: float(amount) for key, amount in price.items()}
    return out


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except OSError as exc:
        raise ConfigError(f"AHPD_CONFIG: cannot read {str(path)!r}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"AHPD_CONFIG: {str(path)!r} is not JSON: {exc}") from None


def load_agents(path: Path) -> list[AgentConfig]:
    return parse_agents(_read(path))


# -- MCP servers -------------------------------------------------------------------------------

#: A server's name: the key of `mcpServers`, the name the agent and the model see.
MCP_SERVER_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
MCP_SERVER_NAME_SAID = "1 to 64 letters, digits, - and _"
MCP_TRANSPORTS = ("stdio", "http")
#: What a stdio server's environment names may be: no `=`, no NUL, not empty.
_ENV_NAME = re.compile(r"[^=\x00]+")
#: An HTTP header's name (RFC 9110's token).
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


class McpServerError(ValueError):
    """A server that cannot be offered: `problems` says, by field, what is wrong (in words that
    never repeat a value: env and headers hold secrets)."""

    def __init__(self, problems: Mapping[str, str]) -> None:
        self.problems = dict(problems)
        super().__init__("; ".join(f"{key}: {said}" for key, said in self.problems.items()))


def _strings_by_name(value: Any, name: re.Pattern[str], key: str) -> str | None:
    """What is wrong with an env or headers object, without saying any value."""
    if not isinstance(value, dict):
        return "must be an object of strings"
    for item, said in value.items():
        if not isinstance(said, str):
            return f"{item!r} must be a string"
        if not name.fullmatch(item):
            return (
                f"{item!r} is not a{'n environment variable' if key == 'env' else ' header'} name"
            )
        if key == "headers" and any(c in said for c in "\r\n\x00"):
            return f"{item!r} must be one line"
        if key == "env" and "\x00" in said:
            return f"{item!r} must hold no NUL"
    return None


def mcp_server_problems(
    name: Any,
    transport: Any,
    *,
    command: Any = "",
    args: Any = (),
    cwd: Any = "",
    env: Any = None,
    url: Any = "",
    headers: Any = None,
) -> dict[str, str]:
    """What is wrong with a server, by field: a stdio one needs a command, an http one an
    http(s) URL, and neither takes the other's fields; args, env and headers hold strings
    only. Empty: nothing."""
    env = {} if env is None else env
    headers = {} if headers is None else headers
    problems: dict[str, str] = {}
    if not isinstance(name, str) or not MCP_SERVER_NAME.fullmatch(name):
        problems["name"] = f"must be {MCP_SERVER_NAME_SAID}"
    if transport not in MCP_TRANSPORTS:
        problems["transport"] = "must be stdio or http"
    for key, value in (("command", command), ("cwd", cwd), ("url", url)):
        if not isinstance(value, str):
            problems[key] = "must be a string"
    if not isinstance(args, list | tuple) or not all(isinstance(a, str) for a in args):
        problems["args"] = "must be a list of strings"
    for key, value, names in (("env", env, _ENV_NAME), ("headers", headers, _HEADER_NAME)):
        if (problem := _strings_by_name(value, names, key)) is not None:
            problems[key] = problem
    if transport == "stdio":
        if isinstance(command, str) and not command.strip():
            problems.setdefault("command", "a stdio server needs a command")
        for key, value in (("url", url), ("headers", headers)):
            if value and key not in problems:
                problems[key] = "an http server's: a stdio server takes none"
    elif transport == "http":
        if isinstance(url, str) and not _http_url(url):
            problems.setdefault("url", "an http server needs an http:// or https:// URL")
        for key, value in (("command", command), ("args", args), ("cwd", cwd), ("env", env)):
            if value and key not in problems:
                problems[key] = "a stdio server's: an http server takes none"
    return problems


def _http_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname) and url == url.strip()


def check_mcp_server(
    name: Any,
    transport: Any,
    *,
    command: Any = "",
    args: Any = (),
    cwd: Any = "",
    env: Any = None,
    url: Any = "",
    headers: Any = None,
) -> McpServerSpec:
    """The server as the engine offers it; McpServerError naming each field that is wrong."""
    fields = {"command": command, "args": args, "cwd": cwd, "env": env, "url": url}
    problems = mcp_server_problems(name, transport, headers=headers, **fields)
    if problems:
        raise McpServerError(problems)
    return McpServerSpec(
        id=f"mcp:{name}",
        name=name,
        transport=transport,
        command=command,
        args=tuple(args),
        cwd=cwd or None,
        env=dict(env or {}),
        url=url,
        headers=dict(headers or {}),
    )


def parse_mcp_servers(
    data: Any, source: str = "AHPD_CONFIG", warn: Callable[[str], None] = log.warning
) -> list[McpServerSpec]:
    """The file's `mcpServers`, in its order; each bad entry `warn`ed of, naming it, and left
    out (no value of its env or headers is said)."""
    entries = data.get("mcpServers") if isinstance(data, dict) else None
    if entries is None:
        return []
    if not isinstance(entries, dict):
        warn(f"{source}: mcpServers must be an object of servers by name; none is offered")
        return []
    servers: list[McpServerSpec] = []
    for name, entry in entries.items():
        where = f"{source}: mcpServers[{name!r}]"
        if not isinstance(entry, dict):
            warn(f"{where} must be an object; it is left out")
            continue
        transport = entry.get("type")
        if transport is None:
            transport = "stdio" if "command" in entry else "http" if "url" in entry else None
        if transport is None:
            warn(f"{where} is neither a stdio server (command) nor an http one (url); left out")
            continue
        fields = {
            key: entry[key]
            for key in ("command", "args", "cwd", "env", "url", "headers")
            if key in entry
        }
        try:
            servers.append(check_mcp_server(name, transport, **fields))
        except McpServerError as exc:
            said = "; ".join(
                f"{'type' if key == 'transport' else key}: {problem}"
                for key, problem in exc.problems.items()
            )
            warn(f"{where}: {said}; it is left out")
    return servers


def load_mcp_servers(path: Path, warn: Callable[[str], None] = log.warning) -> list[McpServerSpec]:
    """The MCP servers the file at `path` names (ConfigError if it cannot be read as JSON)."""
    return parse_mcp_servers(_read(path), warn=warn)


def build_agents(configs: list[AgentConfig], data_dir: Path) -> dict[str, Agent]:
    """One Agent per configured provider, in the file's order."""
    agents: dict[str, Agent] = {}
    for config in configs:
        if config.kind == "acp":
            from .acp import AcpAgent

            agents[config.provider] = AcpAgent(config, data_dir)
        elif config.kind == "claude":
            from .claude import ClaudeAgent

            agents[config.provider] = ClaudeAgent(config, data_dir)
        else:
            from .openai import OpenAiAgent

            agents[config.provider] = OpenAiAgent(config)
    return agents
