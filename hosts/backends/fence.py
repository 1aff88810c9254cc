"""The folder fence: the paths a backend lets an agent or a model reach.

A chat has working folders, and the host reads and writes files for its agent only inside them.
A path is judged by where it really leads: `..` and symlinks are resolved before comparing, so
neither leads outside. A relative path starts from the first folder. Each backend says a refusal
in its own protocol's words; this module only decides.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path


class Fence:
    """The working folders of one chat, by their real paths, the first one first."""

    def __init__(self, folders: Sequence[Path]) -> None:
        self.roots = [Path(os.path.realpath(folder)) for folder in folders]

    @property
    def first(self) -> Path | None:
        """Where relative paths start; None when the chat has no folder."""
        return self.roots[0] if self.roots else None

    def admit(self, path: str | Path) -> Path | None:
        """The real path `path` leads to when that lies inside a folder, else None."""
        target = Path(path)
        if not target.is_absolute():
            if self.first is None:
                return None
            target = self.first / target
        real = Path(os.path.realpath(target))
        return real if self.holds(real) else None

    def holds(self, real: Path) -> bool:
        """Whether a real (resolved) path is one of the folders or lies inside one."""
        return any(real == root or real.is_relative_to(root) for root in self.roots)

    def shown(self, real: Path) -> str:
        """A real path as a person reads it: relative to the folder that holds it."""
        for root in self.roots:
            if real.is_relative_to(root):
                return str(real.relative_to(root)) or "."
        return str(real)
