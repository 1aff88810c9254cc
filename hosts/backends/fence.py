"""The folder fence: the paths a backend lets an agent or a model reach.

A chat has working folders, and the host reads and writes files for its agent only inside them.
A path is judged by where it really leads: `..` and symlinks are resolved before comparing, so
neither leads outside. A relative path starts from the first folder. The file work itself walks
the path name by name and works on what the walk opened (`place`, fence_walk.py), so a folder
swapped for a link after the check is not followed out. Each backend says a refusal in its own
protocol's words; this module only decides.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from .fence_walk import Making, Outside, Place, walk


class Fence:
    """The working folders of one chat, by their real paths, the first one first."""

    def __init__(self, folders: Sequence[Path]) -> None:
        self.roots = [Path(os.path.realpath(folder)) for folder in folders]

    @property
    def first(self) -> Path | None:
        """Where relative paths start; None when the chat has no folder."""
        return self.roots[0] if self.roots else None

    def _absolute(self, path: str | Path) -> Path | None:
        target = Path(path)
        if target.is_absolute():
            return target
        return None if self.first is None else self.first / target

    def admit(self, path: str | Path) -> Path | None:
        """The real path `path` leads to when that lies inside a folder, else None: a check
        before the work, which walks again (`place`)."""
        target = self._absolute(path)
        if target is None:
            return None
        try:
            with walk(target, self.holds) as place:
                return place.real
        except (FileNotFoundError, NotADirectoryError):
            # Folders not made yet: where the path would lie once they are (the walk said
            # Outside had it led out).
            real = Path(os.path.realpath(target))
            return real if self.holds(real) else None
        except (Outside, OSError):
            return None

    def place(self, path: str | Path, *, making: Making | None = None) -> Place:
        """Where `path` leads, walked name by name inside the folders (links at the end
        followed), to work on; Outside where it leads out. `making` makes missing folders on
        the way (and is told each first)."""
        target = self._absolute(path)
        if target is None:
            raise Outside(str(path))
        return walk(target, self.holds, making=making)

    def holds(self, real: Path) -> bool:
        """Whether a real (resolved) path is one of the folders or lies inside one."""
        return any(real == root or real.is_relative_to(root) for root in self.roots)

    def shown(self, real: Path) -> str:
        """A real path as a person reads it: relative to the folder that holds it."""
        for root in self.roots:
            if real.is_relative_to(root):
                return str(real.relative_to(root)) or "."
        return str(real)
