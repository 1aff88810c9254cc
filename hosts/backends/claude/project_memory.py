"""A working folder's CLAUDE.md, read by the host for the CLI, which reads no settings source.

The CLI reads a project's CLAUDE.md only with its `project` settings source, and that source
also takes the repository's `.claude/settings.json`, whose `env` could send the operator's key
elsewhere (chat.py). So the host reads the project's memory itself and hands it to the CLI as
an addition to its system prompt, in the words the CLI puts it in. Each file is read inside
the chat's folders (the fence: a CLAUDE.md that is a link out of them is not read) and cut at
MAX_BYTES.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from hosts.backends.fence import Fence
from hosts.backends.fence_walk import NotRegular, Outside, read_regular

log = logging.getLogger(__name__)

#: Where in a folder the CLI looks for a project's memory.
NAMES = ("CLAUDE.md", ".claude/CLAUDE.md")
#: The most of one file handed over.
MAX_BYTES = 64 * 1024


def project_memory(folders: Sequence[Path]) -> str | None:
    """The folders' CLAUDE.md files, each under the heading the CLI gives one; None when
    there are none."""
    fence = Fence(folders)
    said: list[str] = []
    for root in fence.roots:
        for name in NAMES:
            try:
                with fence.place(root / name) as place:
                    if place.found is None:
                        continue
                    data = read_regular(place, MAX_BYTES)
            except (Outside, NotRegular, OSError) as error:
                log.info("%s is not read as project memory: %s", root / name, error)
                continue
            text = data.decode("utf-8", errors="replace").strip()
            if text:
                said.append(
                    f"Contents of {place.real} (project instructions, checked into the "
                    f"codebase):\n\n{text}"
                )
    return "\n\n".join(said) or None
