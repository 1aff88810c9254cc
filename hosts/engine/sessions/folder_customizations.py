"""What a session's working folders hold for its agent, as the protocol lists customizations:
skills, agents, rules and prompts in the places Claude Code and VS Code keep them.

In each working folder:
- `.claude/skills/<skill>/SKILL.md`: a skill (name, description from its front matter);
- `.claude/agents/*.md`: an agent (name, description, model, tools);
- `AGENTS.md` and `CLAUDE.md` at the folder's root, `.github/copilot-instructions.md`: rules
  always applied;
- `.github/instructions/*.instructions.md`: rules, applied to the files their `applyTo` globs
  match (without one, where the agent finds its description fits);
- `.github/prompts/*.prompt.md`: prompts.

Each is a child of a DirectoryCustomization for the folder it was found in, one container per
kind, as `contents` names a single type (the reference host's "one container per kind"). A
place that holds nothing adds no container; one whose files could not all be read is listed
with `load` degraded (some read) or error (none), the message naming each file and why.

What is read is read inside the fence alone: every path is walked name by name from the top
on descriptors (fence_walk), a link followed only where it leads inside the session's working
folders (and the host's served folders, never its data directory), only regular files are
opened, without waiting (a named pipe freezes nothing), and only the first HEAD_BYTES of a
file are read (front matter is at its top). Blocking file work: run it off the loop.

A container is not `writable`: the list is one for every client of the session, and whether a
person may write into a folder is their grant's to say when they write (resourceWrite), not a
promise this list can make to all of them.

Ids are the file (or folder) URIs themselves: stable across restarts, so a decision kept for
one (SessionRecord.enablement) is laid on it again when the session is read back.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...backends.fence_walk import NotRegular, Outside, opened, walk
from .front_matter import FrontMatterError, Value, parse

#: How much of a file is read: its front matter is at the top, and nothing needs the rest.
HEAD_BYTES = 64 * 1024
#: How many names of one folder are looked at; a folder holding more is listed degraded.
MOST_ENTRIES = 500

Holds = Callable[[Path], bool]


@dataclass
class Found:
    """What the folders hold: the containers, and the real folders read inside them (where a
    change means reading again; the working folders themselves are not among them)."""

    containers: list[dict[str, Any]] = field(default_factory=list)
    places: set[Path] = field(default_factory=set)


class _Unread(Exception):
    """A file or folder that could not be read; the message says which and why."""


@dataclass
class _Container:
    folder: Path
    relative: str
    contents: str
    children: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def listed(self) -> dict[str, Any] | None:
        if not self.children and not self.problems:
            return None
        where = self.folder / self.relative if self.relative else self.folder
        uri = where.as_uri()
        entry: dict[str, Any] = {
            "type": "directory",
            "id": uri,
            "uri": uri,
            "name": f"{self.folder.name}/{self.relative}" if self.relative else self.folder.name,
            "enabled": True,
            "contents": self.contents,
            "writable": False,
            "load": {"kind": "loaded"},
            "children": sorted(self.children, key=lambda child: str(child["uri"])),
        }
        if self.problems:
            said = "; ".join(self.problems)
            if self.children:
                entry["load"] = {"kind": "degraded", "message": f"Some files were not read: {said}"}
            else:
                entry["load"] = {"kind": "error", "message": f"Nothing could be read: {said}"}
        return entry


def scan(folders: Sequence[Path], holds: Holds) -> Found:
    """The containers the working `folders` hold, in their order, each folder's in a fixed
    order (skills, agents, rules, prompts); `holds` says whether a real path is inside."""
    found = Found()
    seen: set[str] = set()
    for folder in folders:
        try:
            with walk(folder, holds) as place:
                if place.found is None or not stat.S_ISDIR(place.found.st_mode):
                    continue
        except (Outside, OSError):
            continue  # a folder gone or outside the fence holds nothing for the agent
        for container in _folder(folder, holds, found.places):
            entry = container.listed()
            if entry is not None and entry["id"] not in seen:
                seen.add(entry["id"])
                found.containers.append(entry)
    return found


def _folder(folder: Path, holds: Holds, places: set[Path]) -> list[_Container]:
    skills = _Container(folder, ".claude/skills", "skill")
    for name in _names(folder, ".claude/skills", skills, holds, places):
        relative = f".claude/skills/{name}"
        try:
            kind = _kind(folder / relative, holds)
        except _Unread as unread:
            skills.problems.append(f"{relative} {unread}")
            continue
        if kind != "directory":
            continue  # a file beside the skills' folders is none of them
        _child(skills, f"{relative}/SKILL.md", holds, _skill, name)
    agents = _Container(folder, ".claude/agents", "agent")
    for name in _names(folder, ".claude/agents", agents, holds, places):
        if name.endswith(".md"):
            _child(agents, f".claude/agents/{name}", holds, _agent, name.removesuffix(".md"))
    rules = _Container(folder, "", "rule")
    for name in ("AGENTS.md", "CLAUDE.md"):
        _child(rules, name, holds, _always, name)
    github = _Container(folder, ".github", "rule")
    _child(github, ".github/copilot-instructions.md", holds, _always, "copilot-instructions.md")
    if (real := _real(folder / ".github", holds)) is not None:
        places.add(real)
    instructions = _Container(folder, ".github/instructions", "rule")
    for name in _names(folder, ".github/instructions", instructions, holds, places):
        if name.endswith(".instructions.md"):
            stem = name.removesuffix(".instructions.md")
            _child(instructions, f".github/instructions/{name}", holds, _instructions, stem)
    prompts = _Container(folder, ".github/prompts", "prompt")
    for name in _names(folder, ".github/prompts", prompts, holds, places):
        if name.endswith(".prompt.md"):
            _child(
                prompts, f".github/prompts/{name}", holds, _prompt, name.removesuffix(".prompt.md")
            )
    return [skills, agents, rules, github, instructions, prompts]


def _names(
    folder: Path, relative: str, container: _Container, holds: Holds, places: set[Path]
) -> list[str]:
    """The names in a folder, sorted (none where it is not there); a folder that cannot be
    read is the container's problem."""
    try:
        with walk(folder / relative, holds) as place:
            if place.found is None or not stat.S_ISDIR(place.found.st_mode):
                return []
            places.add(place.real)
            descriptor = opened(place, os.O_RDONLY | os.O_DIRECTORY)
            try:
                with os.scandir(descriptor) as entries:
                    names = sorted(entry.name for entry in entries)
            finally:
                os.close(descriptor)
    except Outside:
        container.problems.append(f"{relative} leads outside the session's folders (a link)")
        return []
    except (FileNotFoundError, NotADirectoryError):  # not there, or a file on the way
        return []
    except OSError as error:
        container.problems.append(f"{relative} could not be read ({_why(error)})")
        return []
    if len(names) > MOST_ENTRIES:
        container.problems.append(
            f"{relative} holds {len(names)} entries; the first {MOST_ENTRIES} were read"
        )
        names = names[:MOST_ENTRIES]
    return names


def _real(path: Path, holds: Holds) -> Path | None:
    """Where a path really leads, when something is there inside the fence."""
    try:
        with walk(path, holds) as place:
            return place.real if place.found is not None else None
    except (Outside, OSError):
        return None


def _kind(path: Path, holds: Holds) -> str | None:
    """Whether a path leads to a directory, a file or nothing, inside the fence."""
    try:
        with walk(path, holds) as place:
            if place.found is None:
                return None
            return "directory" if stat.S_ISDIR(place.found.st_mode) else "file"
    except Outside:
        raise _Unread("leads outside the session's folders (a link)") from None
    except (FileNotFoundError, NotADirectoryError):  # not there, or a file on the way
        return None
    except OSError as error:
        raise _Unread(f"could not be read ({_why(error)})") from None


#: Makes a child of a file's front matter and its default name; raises FrontMatterError.
Make = Callable[[dict[str, Value], str], dict[str, Any]]


def _child(
    container: _Container,
    relative: str,
    holds: Holds,
    make: Make,
    default_name: str,
) -> None:
    """The file at `relative` read and listed as the container's child, or its problem said.
    A file that is not there is no problem (nor is one gone since its folder was listed)."""
    path = container.folder / relative
    try:
        head = _head(path, holds)
    except _Unread as unread:
        container.problems.append(f"{relative} {unread}")
        return
    if head is None:
        return
    text, cut = head
    try:
        # A rule read whole into every conversation is plain markdown: no header is read.
        child = make({} if make is _always else parse(text), default_name)
    except FrontMatterError as error:
        why = str(error)
        if cut and text.startswith("---"):
            why = f"it is not closed within the first {HEAD_BYTES} bytes"
        container.problems.append(f"{relative} has front matter that cannot be read ({why})")
        return
    uri = path.as_uri()
    container.children.append({"id": uri, "uri": uri, **child})


def _head(path: Path, holds: Holds) -> tuple[str, bool] | None:
    """The first HEAD_BYTES of a regular file inside the fence, as text, and whether there is
    more; None where nothing is there. _Unread for anything else."""
    try:
        with walk(path, holds) as place:
            if place.found is None:
                return None
            with os.fdopen(opened(place), "rb") as file:
                data = file.read(HEAD_BYTES + 1)
    except Outside:
        raise _Unread("leads outside the session's folders (a link); not read") from None
    except NotRegular as error:
        raise _Unread(f"is {error.kind}; only regular files are read") from None
    except IsADirectoryError:
        raise _Unread("is a directory, not a file") from None
    except (FileNotFoundError, NotADirectoryError):  # not there, or a file on the way
        return None
    except OSError as error:
        raise _Unread(f"could not be read ({_why(error)})") from None
    cut = len(data) > HEAD_BYTES
    data = data[:HEAD_BYTES]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        # A character cut at the end of what was read is not an error in the file.
        if not (cut and error.start >= len(data) - 3):
            raise _Unread("is not UTF-8 text") from None
        text = data[: error.start].decode("utf-8")
    return text, cut


def _why(error: OSError) -> str:
    if isinstance(error, PermissionError):
        return "permission denied"
    return error.strerror or type(error).__name__


# -- the children, from their front matter -------------------------------------------------


def _text(matter: dict[str, Value], key: str) -> str | None:
    value = matter.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise FrontMatterError(f"{key} must be text")
    return value


def _texts(matter: dict[str, Value], key: str) -> list[str] | None:
    """A list of strings, given as a list or as one comma-separated string."""
    value = matter.get(key)
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise FrontMatterError(f"{key} must be text or a list")
    items = value if isinstance(value, list) else value.split(",")
    return [item.strip() for item in items if item.strip()] or None


def _flag(matter: dict[str, Value], key: str) -> bool | None:
    value = matter.get(key)
    if value is None:
        return None
    if not isinstance(value, bool):
        raise FrontMatterError(f"{key} must be true or false")
    return value


def _named(kind: str, matter: dict[str, Value], default_name: str, **fields: Any) -> dict[str, Any]:
    child: dict[str, Any] = {"type": kind, "name": _text(matter, "name") or default_name}
    if (description := _text(matter, "description")) is not None:
        child["description"] = description
    child.update({key: value for key, value in fields.items() if value is not None})
    return child


def _hint(matter: dict[str, Value]) -> dict[str, Any] | None:
    """An argument hint, under the key VS Code's host publishes it (neither SkillCustomization
    nor PromptCustomization declares one)."""
    hint = _text(matter, "argument-hint")
    return {"vscode.skill.argumentHint": hint} if hint is not None else None


def _skill(matter: dict[str, Value], default_name: str) -> dict[str, Any]:
    invocable = _flag(matter, "user-invocable")
    return _named(
        "skill",
        matter,
        default_name,
        disableModelInvocation=_flag(matter, "disable-model-invocation") or None,
        disableUserInvocation=True if invocable is False else None,
        _meta=_hint(matter),
    )


def _agent(matter: dict[str, Value], default_name: str) -> dict[str, Any]:
    return _named(
        "agent",
        matter,
        default_name,
        model=_text(matter, "model"),
        tools=_texts(matter, "tools"),
    )


def _always(matter: dict[str, Value], default_name: str) -> dict[str, Any]:
    # AGENTS.md, CLAUDE.md and copilot-instructions.md are plain markdown, read whole into
    # every conversation: their names are theirs, whatever a header in them says.
    return {"type": "rule", "name": default_name, "alwaysApply": True}


def _instructions(matter: dict[str, Value], default_name: str) -> dict[str, Any]:
    globs = _texts(matter, "applyTo")
    return _named(
        "rule",
        matter,
        default_name,
        alwaysApply=True if globs else None,
        globs=globs,
    )


def _prompt(matter: dict[str, Value], default_name: str) -> dict[str, Any]:
    return _named("prompt", matter, default_name, _meta=_hint(matter))
