"""The operator's agents, read from the JSON file AHPD_CONFIG names.

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
Every bad entry is refused at start with a message naming the entry and the field.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

from ..protocol.limits import figure_problem
from .base import Agent, AgentConfig

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


def load_agents(path: Path) -> list[AgentConfig]:
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise ConfigError(f"AHPD_CONFIG: cannot read {str(path)!r}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"AHPD_CONFIG: {str(path)!r} is not JSON: {exc}") from None
    return parse_agents(data)


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
