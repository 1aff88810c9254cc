"""What this host serves of its disk: the folders `AHPD_PATHS` names, and the fence round them.

A `file:` URI is served when the path it names really lies inside a served folder: `..` and
symlinks are resolved before comparing (so neither leads out), a percent-encoded separator or
NUL is refused rather than decoded into one, and the host's own data directory (its database,
its secret key, its token) is never inside, wherever it lies. Every other scheme is not this
host's to serve. The refusal is -32009 `Permission denied: <uri>`, as the reference says it.

The file methods (files.py) take the path as named (`named`) and walk it themselves, name by
name on descriptors (hosts/backends/fence_walk.py), so that what they judge is what they
work on; `path_of` resolves by name, for what only needs to know where a path leads now.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ...backends.fence_walk import Outside, walk
from ...protocol.errors import ErrorCode, ProtocolError, invalid_params

#: What a path may not carry percent-encoded: a separator (which would join two names into a
#: path) or a NUL (which no path holds).
_ENCODED_HAZARD = re.compile(r"%(2f|5c|00)", re.IGNORECASE)


def permission_denied(uri: str) -> ProtocolError:
    return ProtocolError(ErrorCode.PERMISSION_DENIED, f"Permission denied: {uri}")


class Served:
    """The served folders by their real paths, the first one first; and what is kept out."""

    def __init__(self, folders: Sequence[Path], private: Sequence[Path] = ()) -> None:
        self.folders = [Path(os.path.realpath(folder)) for folder in folders]
        self.private = [Path(os.path.realpath(path)) for path in private]

    @property
    def default(self) -> Path:
        """Where a session goes when it names no folder, and initialize's defaultDirectory."""
        return self.folders[0]

    def holds(self, real: Path) -> bool:
        """Whether a real (resolved) path lies inside the fence."""
        if any(real == kept or real.is_relative_to(kept) for kept in self.private):
            return False
        return any(real == root or real.is_relative_to(root) for root in self.folders)

    def is_root(self, real: Path) -> bool:
        """Whether a real path is a served folder itself (never deleted or moved)."""
        return real in self.folders

    def named(self, uri: str, method: str) -> Path:
        """The absolute path a `file:` URI names, nothing resolved: -32602 for a URI that is
        no file URI, -32009 for one that names another host or hides a separator or NUL."""
        if not isinstance(uri, str) or not uri:
            raise invalid_params(f"{method}: uri must be a non-empty string")
        parts = urlsplit(uri)
        if parts.scheme != "file":
            raise invalid_params(f"{method}: only file: URIs are served here, not {uri}")
        if parts.netloc not in ("", "localhost") or _ENCODED_HAZARD.search(parts.path):
            raise permission_denied(uri)
        if "\0" in parts.path:
            raise invalid_params(f"{method}: {uri} holds a NUL, which no path holds")
        path = Path(unquote(parts.path))
        if not path.is_absolute():
            raise invalid_params(f"{method}: {uri} names no absolute path")
        return path

    def path_of(self, uri: str, method: str, *, follow: bool = True) -> Path:
        """The path a `file:` URI names, when it lies inside the fence, resolved by name.

        With `follow`, the real path (every symlink resolved); without it, the path with its
        parent resolved and its last name kept (a link itself, as lstat sees it). -32602 for a
        URI that is no file URI; -32009 for one outside. What works on the file walks it
        instead (`walked`, files.py).
        """
        path = self.named(uri, method)
        if follow:
            real = Path(os.path.realpath(path))
        else:
            # The link itself: where it lives is resolved, and its own name kept.
            real = Path(os.path.realpath(path.parent)) / path.name
        if not self.holds(real):
            raise permission_denied(uri)
        return real

    def walked(self, uri: str, method: str) -> Path:
        """The real path a `file:` URI leads to, walked name by name from the top with every
        link read and judged by the host (fence_walk.walk): -32009 where it leads outside,
        -32008 `Resource not found: <uri>` where nothing is there. Blocking file work.

        For a watch's root: what it watches is what was judged at the moment of the walk, not
        what a link swapped in later names."""
        path = self.named(uri, method)
        try:
            with walk(path, self.holds) as place:
                if place.found is None:
                    raise FileNotFoundError(path)
                return place.real
        except Outside:
            raise permission_denied(uri) from None
        except (FileNotFoundError, NotADirectoryError):
            raise ProtocolError(ErrorCode.NOT_FOUND, f"Resource not found: {uri}") from None
        except PermissionError:
            raise permission_denied(uri) from None

    def admits(self, path: Path) -> bool:
        """Whether `path` (absolute) leads inside the fence when walked, links read by the
        host, or names nothing there yet: for judging each change a watcher reports, whose
        path the kernel followed."""
        try:
            with walk(path, self.holds, follow=False):
                return True
        except (FileNotFoundError, NotADirectoryError):
            # A change under a folder since removed: the walk refuses one that would lie
            # outside (Outside) and says not found only where it would lie inside.
            return True
        except (Outside, OSError):
            return False

    def folder_of(self, uri: str, method: str) -> Path:
        """A working folder a session names: a served folder or one inside it, that exists.

        -32602 naming it otherwise (the reference serves the whole disk; this host does not).
        """
        try:
            path = self.path_of(uri, method)
        except ProtocolError as error:
            if error.code != ErrorCode.PERMISSION_DENIED:
                raise
            raise invalid_params(
                f"{method}: {uri} is not inside a folder this host serves (AHPD_PATHS)"
            ) from None
        if not path.is_dir():
            raise invalid_params(f"{method}: {uri} is not a folder")
        return path
