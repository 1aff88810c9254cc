"""The code's shape: the engine has no import circle (TYPE_CHECKING included) and nothing from
Django; the apps import one another only as the composition root (ahpsite/) allows, with no
circle between them."""

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


# -- the apps and the composition root -----------------------------------------------------------

REPO = HOSTS.parent
#: The Django apps; ahpsite/ is the composition root over them, which may import any of them.
APPS = ("hosts", "usage", "automations", "audit", "mcp_servers")
ROOT = "ahpsite"
#: What usage, automations, audit and mcp_servers may import of hosts: the engine's core and
#: ports, and the shared Django-side kit. Nothing else of hosts (never hosts.models: hosts'
#: tables are its own).
SHARED_OF_HOSTS = {
    "hosts.protocol": "the wire",
    "hosts.engine": "the engine, its ports (Meter, AutomationStore) and their types",
    "hosts.api.auth": "the REST kit: who a request is",
    "hosts.api.permissions": "the REST kit: who may",
    "hosts.api.pages": "the REST kit: pages",
    "hosts.api.created": "the REST kit: 201 with its Location",
    "hosts.api.known_fields": "the REST kit: a body's unknown fields refused",
    "hosts.api.query_parameters": "the REST kit: a list's query parameters checked",
    "hosts.api.errors": "the REST kit: errors in the API's words",
    "hosts.api.engine_calls": "the REST kit: a service run through the engine client",
    "hosts.admin_engine_calls": "the admin's services through the engine client",
    "hosts.admin_csv": "the admin's CSV export",
    "hosts.admin_dates": "the admin's dates in the admin user's zone",
    "hosts.edge.engine_client": "the engine client",
    "hosts.store.engine_database": "the executor of the engine's database calls",
    "hosts.store.directory": "the people directory: who a person is, what they hold",
    "hosts.store.project_teams": "which team holds a project",
    "hosts.store.acts": "the audit trail: who asked, from where, and the record kept",
    "hosts.backends.config": "the agents file (its prices, its MCP servers and their check)",
    "hosts.backends.base": "the backend interface's shapes (McpServerSpec, for the MCP port)",
    "hosts.management.ahpd.verbs": "the `ahpd` command's parsers and output",
    "hosts.management.ahpd.server": "the `ahpd` command's way to the running server",
}
#: What an app may import of the root: the settings' typed readers, which import no app.
SHARED_OF_ROOT = ("ahpsite.env",)


def _all_modules() -> dict[str, Path]:
    return {
        _module(path): path for top in (*APPS, ROOT) for path in sorted((REPO / top).rglob("*.py"))
    }


def _edges(path: Path, modules: dict[str, Path]) -> list[tuple[int, str]]:
    """The project modules a file imports (anywhere in it, TYPE_CHECKING included), each with
    its line: `from a import b` is a.b where b is a module, else a."""
    module = _module(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name in modules]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                target = f"{base}.{alias.name}"
                target = target if target in modules else base
                if target in modules:
                    found.append((node.lineno, target))
    return found


def _allowed(importer: str, target: str) -> bool:
    """Whether a module of one app (or the root) may import a module of another."""
    source, destination = importer.split(".")[0], target.split(".")[0]
    if source == destination or source == ROOT:
        return True
    if destination == ROOT:
        return target in SHARED_OF_ROOT
    if source == "hosts":
        return False
    if destination == "hosts":
        return any(target == m or target.startswith(m + ".") for m in SHARED_OF_HOSTS)
    return False  # usage, automations, audit and mcp_servers never import each other


def test_the_apps_import_each_other_only_as_the_composition_root_allows():
    modules = _all_modules()
    forbidden = [
        f"{path.relative_to(REPO)}:{line}: {_module(path)} imports {target}"
        for path in modules.values()
        for line, target in _edges(path, modules)
        if not _allowed(_module(path), target)
    ]
    assert forbidden == [], (
        "hosts imports no other app; usage and automations import none of each other, and of "
        "hosts only "
        + ", ".join(SHARED_OF_HOSTS)
        + "; an app imports of ahpsite only "
        + ", ".join(SHARED_OF_ROOT)
        + ". What one app needs of another is wired in ahpsite/ "
        "(engine.py, urls.py, settings.py's AHPD_ENGINE_BUILDER, AHPD_COMMAND_NOUNS, "
        "AHPD_SESSIONS_USAGE):\n" + "\n".join(forbidden)
    )


def test_what_the_apps_share_of_the_root_imports_no_app():
    # So that an app importing it closes no circle through the root.
    modules = _all_modules()
    for name in SHARED_OF_ROOT:
        imported = [target for _, target in _edges(modules[name], modules)]
        assert imported == [], f"{name} imports {imported}"


def test_no_import_circle_between_the_apps():
    modules = _all_modules()
    between: dict[str, dict[str, str]] = {app: {} for app in APPS}
    for name, path in modules.items():
        app = name.split(".")[0]
        if app == ROOT:
            continue
        for _, target in _edges(path, modules):
            other = target.split(".")[0]
            if other in APPS and other != app:
                between[app].setdefault(other, f"{name} imports {target}")

    def circle(app: str, trail: list[str]) -> None:
        for other in sorted(between[app]):
            if other in trail:
                path = [*trail[trail.index(other) :], other]
                raise AssertionError(
                    "import circle between apps: "
                    + " -> ".join(path)
                    + " ("
                    + "; ".join(between[a][b] for a, b in zip(path, path[1:], strict=False))
                    + ")"
                )
            circle(other, [*trail, other])

    for app in APPS:
        circle(app, [app])


def test_no_import_circle_within_the_apps_beside_hosts_or_the_root():
    modules = _all_modules()
    graph = {
        name: {t for _, t in _edges(path, modules)} - {name}
        for name, path in modules.items()
        if name.split(".")[0] in ("usage", "automations", "mcp_servers", ROOT)
    }
    done: set[str] = set()

    def visit(name: str, trail: list[str]) -> None:
        if name in trail:
            raise AssertionError(
                "import circle: " + " -> ".join([*trail[trail.index(name) :], name])
            )
        if name in done or name not in graph:
            return
        for dependency in sorted(graph[name]):
            if not dependency.startswith(name + "."):
                visit(dependency, [*trail, name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])
