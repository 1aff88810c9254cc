"""One do_* per state change (issue 24.2), read off the code: every socket rule's effect, REST
view, admin page and Celery task reaches engine state only through hosts/engine/services.

A rule's effect is thin: it calls one do_* function of services/ with what the dispatch holds,
and touches nothing of the host itself (no attribute of `d.host`, `d.session` or `d.chat`, no
assignment). The Django side reaches the engine only through the engine client, each write
naming a service whose function is a do_* of services/.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hosts.engine.rules import RULES
from hosts.engine.services.calls import SERVICES

REPO = Path(__file__).resolve().parents[2]

#: What a rule's effect may read of its dispatch, and pass on.
DISPATCH_FIELDS = {"host", "caller", "action", "channel", "session", "chat"}
#: What the Django side is: views, the admin, tasks, commands.
DJANGO_SIDE = [
    *sorted((REPO / "hosts" / "api").glob("*.py")),
    REPO / "hosts" / "admin.py",
    REPO / "hosts" / "session_admin.py",
    REPO / "hosts" / "admin_engine_calls.py",
    REPO / "automations" / "api.py",
    REPO / "automations" / "admin.py",
    REPO / "automations" / "tasks.py",
    REPO / "automations" / "cli.py",
    *sorted((REPO / "usage").glob("*.py")),
    # `serve` is where the engine starts, not a caller of it.
    *sorted(
        path for path in (REPO / "hosts" / "management").rglob("*.py") if path.name != "serve.py"
    ),
]
#: Where a service's name is passed on (engine_does, admin_does), not named.
FORWARDERS = {"hosts/api/engine_calls.py", "hosts/admin_engine_calls.py"}
#: How the Django side reaches the engine other than through the engine client.
AROUND_THE_CLIENT = {
    "call_engine",
    "run_coroutine_threadsafe",
    "async_to_sync",
    "get_host",
    "get_router",
    "engine_loop",
    "perform_on",
    "LayerRelay",
}
#: The calls that name a service, and where in them the name is.
SERVICE_CALLS = {"perform": 0, "engine_does": 1, "admin_does": 1}


def effects() -> Iterator[tuple[str, Callable[..., Any]]]:
    for action_type, rule in sorted(RULES.items()):
        if rule.effect is not None:
            yield action_type, rule.effect


def parsed(function: Callable[..., Any]) -> ast.FunctionDef | ast.AsyncFunctionDef:
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    node = tree.body[0]
    assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    return node


def is_service(function: Any) -> bool:
    return (
        callable(function)
        and getattr(function, "__name__", "").startswith("do_")
        and getattr(function, "__module__", "").startswith("hosts.engine.services")
    )


def problems_of_effect(function: Callable[..., Any]) -> list[str]:
    node = parsed(function)
    dispatch = node.args.args[0].arg
    said: list[str] = []
    services = 0
    for inner in ast.walk(node):
        if isinstance(inner, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = (
                inner.targets if isinstance(inner, (ast.Assign, ast.Delete)) else [inner.target]
            )
            if any(isinstance(t, (ast.Attribute, ast.Subscript)) for t in targets):
                said.append(f"assigns to state at line {inner.lineno}")
        if isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Attribute):
            root = inner.value
            if isinstance(root.value, ast.Name) and root.value.id == dispatch:
                if root.attr in ("host", "session", "chat", "caller"):
                    said.append(f"reaches into {dispatch}.{root.attr}.{inner.attr}")
        if isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name):
            if inner.value.id == dispatch and inner.attr not in DISPATCH_FIELDS:
                said.append(f"uses {dispatch}.{inner.attr}")
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name):
            called = function.__globals__.get(inner.func.id, getattr(builtins, inner.func.id, None))
            if called is None and function.__closure__:
                names = function.__code__.co_freevars
                cells = dict(zip(names, function.__closure__, strict=True))
                called = cells[inner.func.id].cell_contents if inner.func.id in cells else None
            if is_service(called):
                services += 1
            elif called not in (isinstance, str, int, bool, len):
                said.append(f"calls {inner.func.id}, no service of services/")
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute):
            owner = inner.func.value
            reading_action = (
                isinstance(owner, ast.Attribute)
                and owner.attr == "action"
                and isinstance(owner.value, ast.Name)
                and owner.value.id == dispatch
                and inner.func.attr == "get"
            )
            if not reading_action:
                said.append(f"calls .{inner.func.attr}(), a method of the engine's objects")
    if services != 1:
        said.append(f"calls {services} services of services/, not one")
    return said


@pytest.mark.parametrize(("action_type", "effect"), list(effects()))
def test_every_rule_effect_changes_engine_state_through_one_service(action_type, effect):
    assert problems_of_effect(effect) == []


def test_the_check_sees_an_effect_that_changes_state_itself():
    def renames(d: Any) -> None:
        d.session.record.title = d.action["title"]
        d.host.sessions.touch(d.session)

    assert sorted(problems_of_effect(renames)) == [
        "assigns to state at line 2",
        "calls .touch(), a method of the engine's objects",
        "calls 0 services of services/, not one",
        "reaches into d.host.sessions",
        "reaches into d.session.record",
    ]


def test_every_service_a_caller_outside_the_loop_names_is_a_do_function_of_services():
    assert {name: is_service(s.run) for name, s in SERVICES.items()} == dict.fromkeys(
        SERVICES, True
    )


def named_services(tree: ast.AST) -> Iterator[tuple[int, Any]]:
    """(line, the service named) of each call that names one."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name not in SERVICE_CALLS:
            continue
        if name == "perform" and not (
            isinstance(func, ast.Attribute) and getattr(func.value, "id", "") == "engine_client"
        ):
            continue
        where = SERVICE_CALLS[name]
        named = node.args[where] if len(node.args) > where else None
        yield node.lineno, named.value if isinstance(named, ast.Constant) else None


@pytest.mark.parametrize("path", DJANGO_SIDE, ids=lambda p: str(p.relative_to(REPO)))
def test_the_django_side_reaches_the_engine_only_through_the_engine_client(path):
    tree = ast.parse(path.read_text())
    around = [
        f"line {node.lineno}: {name}"
        for node in ast.walk(tree)
        for name in (
            [node.id]
            if isinstance(node, ast.Name)
            else [node.attr]
            if isinstance(node, ast.Attribute)
            else [alias.name for alias in node.names]
            if isinstance(node, ast.ImportFrom)
            else []
        )
        if name in AROUND_THE_CLIENT
    ]
    assert around == []
    forwards = str(path.relative_to(REPO)) in FORWARDERS
    unknown = [
        f"line {line}: {service!r}"
        for line, service in named_services(tree)
        if service not in SERVICES and not (forwards and service is None)
    ]
    assert unknown == []


def test_the_django_sides_writes_are_found_by_the_check():
    # The check reads the calls it should: REST's and the admin's writes, the task's calls.
    found = {
        str(path.relative_to(REPO)): sorted(
            {s for _, s in named_services(ast.parse(path.read_text())) if s is not None}
        )
        for path in DJANGO_SIDE
    }
    assert found["automations/api.py"] == [
        "create_automation",
        "remove_automation",
        "run_automation",
        "update_automation",
    ]
    assert found["automations/admin.py"] == [
        "create_automation",
        "remove_automation",
        "update_automation",
    ]
    assert found["automations/tasks.py"] == ["automation_claimed", "automations_here"]
    assert found["hosts/session_admin.py"] == ["cancel_session", "dispose_session"]
    assert found["hosts/api/session_views.py"] == [
        "cancel_session",
        "create_session",
        "dispose_session",
        "send_message",
    ]
