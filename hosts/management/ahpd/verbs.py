"""How a noun module adds its verbs, and what a verb answers: data for `--json`, and the
lines a person reads (rows of `key=value` unless the verb says otherwise)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

JSON_HELP = "print JSON a script can rely on (allowed anywhere on the line)"


@dataclass
class Shown:
    """A verb's answer: `data` for --json; `lines` on stdout and `notes` on stderr otherwise
    (`lines` left empty: the data as rows)."""

    data: Any
    lines: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


Run = Callable[[dict[str, Any]], Shown | dict[str, Any] | list[dict[str, Any]]]


def json_flag() -> argparse.ArgumentParser:
    """The parent every noun and verb parser takes, so --json is read wherever it is written;
    its default is left out, so a verb's parser does not undo a --json written before it."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help=JSON_HELP)
    return parent


def noun(nouns: Any, name: str, help: str) -> Any:
    """A noun's parser and the group its verbs go in."""
    parser = nouns.add_parser(name, help=help, description=help, parents=[json_flag()])
    return parser.add_subparsers(dest="verb", required=True, metavar="VERB", title="verbs")


def verb(
    verbs: Any, name: str, help: str, run: Run, *, database: bool = True
) -> argparse.ArgumentParser:
    """A verb's parser; `run` answers it (after the database is checked, when it needs it)."""
    parser: argparse.ArgumentParser = verbs.add_parser(
        name, help=help, description=help, parents=[json_flag()]
    )
    parser.set_defaults(run=run, database=database)
    return parser


def rows(data: Any) -> list[str]:
    """The data as a person reads it: a line of `key=value` for each row."""
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        return [str(data)]
    return ["  ".join(f"{key}={_value(value)}" for key, value in row.items()) for row in data]


def _value(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(str(item) for item in value)
    return "-" if value is None else str(value)
