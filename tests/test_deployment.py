"""The compose deployment and its image, read from their files (no Docker daemon runs here):
every service runs a command the image has, starts in the right order, and the image carries
what the server needs at run time and nothing of the tests'."""

from __future__ import annotations

import fnmatch
import re
import shlex
from pathlib import Path

import pytest
import yaml
from django.core.management import get_commands
from django.urls import resolve

from hosts.backends.config import load_agents
from tests.support.server import REPO

COMPOSE = yaml.safe_load((REPO / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]
DOCKERFILE = (REPO / "Dockerfile").read_text()
IGNORED = [
    line.strip()
    for line in (REPO / ".dockerignore").read_text().splitlines()
    if line.strip() and not line.startswith("#")
]
OURS = [name for name, service in SERVICES.items() if "build" in service]


def in_image(path: str) -> bool:
    """Whether `COPY . .` takes this path of the checkout into the image."""
    first = Path(path).parts[0]
    return (REPO / path).exists() and not any(
        fnmatch.fnmatch(path, pattern) or fnmatch.fnmatch(first, pattern) for pattern in IGNORED
    )


def argv(command: str | list[str]) -> list[str]:
    """The commands a service runs (a `sh -c` line split at its `&&`)."""
    words = shlex.split(command) if isinstance(command, str) else list(command)
    if words[:2] == ["sh", "-c"]:
        return [w for part in words[2].split("&&") for w in shlex.split(part) + ["&&"]][:-1]
    return words


def commands(service: dict) -> list[list[str]]:
    words = argv(service["command"])
    runs, current = [], []
    for word in words + ["&&"]:
        if word == "&&":
            runs.append(current)
            current = []
        elif word != "exec" or current:
            current.append(word)
    return runs


def requirement_names(path: Path) -> set[str]:
    names = set()
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "-r")):
            names.add(re.split(r"[=<>\[ ]", line, maxsplit=1)[0].lower())
    return names


def test_the_deployment_runs_postgres_redis_web_worker_and_beat():
    assert set(SERVICES) == {"postgres", "redis", "web", "proxy", "worker", "beat"}
    assert set(OURS) == {"web", "worker", "beat"}


def test_web_scales_behind_one_published_port():
    """`docker compose up --scale web=3`: no web container publishes a port (three could not
    bind one), the proxy publishes the one clients are told of and passes every connection,
    WebSocket upgrades included, to the containers Docker's DNS names `web`, asked again as
    they come and go."""
    web, proxy = SERVICES["web"], SERVICES["proxy"]
    assert "ports" not in web and web["expose"] == ["9187"]
    assert proxy["ports"] == ["127.0.0.1:9187:9187"]
    public = web["environment"]["AHPD_PUBLIC_URL"]
    assert public.endswith(":9187}"), public
    assert proxy["depends_on"] == {"web": {"condition": "service_healthy"}}
    [mount] = proxy["volumes"]
    source, target, mode = mount.split(":")
    assert (target, mode) == ("/etc/nginx/nginx.conf", "ro")
    conf = (REPO / source).read_text()
    assert "listen 9187;" in conf
    assert "resolver 127.0.0.11 valid=5s" in conf
    # Through a variable, so that `web` is resolved again rather than once at start.
    assert "set $node web:9187;" in conf and "proxy_pass http://$node;" in conf
    assert "proxy_set_header Upgrade $http_upgrade;" in conf
    assert "proxy_set_header Connection $connection_upgrade;" in conf
    assert "proxy_http_version 1.1;" in conf
    # Each node finds the others in the database and the channel layer they share.
    environment = web["environment"]
    assert environment["DATABASE_URL"].startswith("postgres://")
    assert environment["REDIS_URL"].startswith("redis://")
    # Nothing pins a node id: each container's defaults to its own name and port.
    assert "AHPD_NODE_ID" not in environment
    # The nodes share the folder sessions work in, so any of them may take one over.
    assert "workspace:/workspace" in web["volumes"]


@pytest.mark.parametrize("name", OURS)
def test_each_service_runs_a_command_the_image_has(name):
    runtime = requirement_names(REPO / "requirements.txt")
    for run in commands(SERVICES[name]):
        program = run[0]
        if program == "python":
            assert run[1] == "manage.py" and in_image("manage.py")
            assert run[2] in get_commands(), f"{name}: no management command {run[2]!r}"
        elif program == "celery":
            assert "celery" in runtime
            app = run[run.index("-A") + 1]
            assert in_image(f"{app}/celery.py"), f"{name}: no Celery app {app!r} in the image"
            assert run[run.index("-A") + 2] in ("worker", "beat")
        else:
            pytest.fail(f"{name} runs {program!r}, which the image does not install")


def test_web_serves_as_the_containers_first_process_so_sigterm_reaches_it():
    # `sh -c "... && python manage.py serve"` would leave sh to take the SIGTERM of
    # `docker compose stop`, which it does not pass on: no clean stop, a SIGKILL 10 s later.
    assert argv(SERVICES["web"]["command"])[-4:] == ["exec", "python", "manage.py", "serve"]


def test_worker_and_beat_wait_for_a_healthy_web():
    for name in ("worker", "beat"):
        assert SERVICES[name]["depends_on"] == {"web": {"condition": "service_healthy"}}
    probe = " ".join(SERVICES["web"]["healthcheck"]["test"])
    assert "/healthz" in probe
    assert resolve("/healthz").url_name == "healthz"
    assert "/healthz" in DOCKERFILE.split("HEALTHCHECK", 1)[1].split("\n\n")[0]


def test_web_is_given_an_agents_file_that_loads():
    environment = SERVICES["web"]["environment"]
    mounted = {}
    for volume in SERVICES["web"]["volumes"]:
        source, target = re.fullmatch(r"(\$\{[^}]+\}|[^:]+):([^:]+)(?::ro)?", volume).groups()
        mounted[target] = source
    assert environment["AHPD_CONFIG"] in mounted
    example = re.fullmatch(r"\$\{AHPD_AGENTS_FILE:-(.+)\}", mounted[environment["AHPD_CONFIG"]])
    assert example, "the agents file can be chosen, with the example as the default"
    agents = load_agents(REPO / example.group(1))
    assert {agent.kind for agent in agents} == {"acp", "openai"}


def test_every_variable_the_services_set_is_one_the_server_reads():
    settings_text = (REPO / "ahpsite" / "settings.py").read_text()
    for name in OURS:
        for variable in SERVICES[name]["environment"]:
            assert f'"{variable}"' in settings_text, f"{name} sets {variable}, read nowhere"


def test_printed_urls_are_the_public_one():
    assert SERVICES["web"]["environment"]["AHPD_PUBLIC_URL"].startswith("${AHPD_PUBLIC_URL:-ws://")


def test_the_image_runs_as_a_user_of_its_own():
    users = re.findall(r"^USER (\S+)", DOCKERFILE, re.MULTILINE)
    assert users and users[-1] not in ("root", "0")


def test_the_image_installs_what_runs_and_not_the_test_tools():
    runtime = requirement_names(REPO / "requirements.txt")
    assert not runtime & {"pytest", "pytest-django", "mypy", "ruff", "websockets"}
    assert "pip install -r requirements.txt" in DOCKERFILE
    assert "-r requirements-dev" not in DOCKERFILE
    assert not in_image("tests/conftest.py")
    assert in_image("hosts/engine/host.py")
    dev = (REPO / "requirements-dev.txt").read_text()
    assert dev.startswith("-r requirements.txt")


def test_the_image_collects_the_static_files_whitenoise_serves():
    run = next(line for line in DOCKERFILE.splitlines() if "collectstatic" in line)
    assert run.startswith("RUN ") and "--noinput" in run
    assert DOCKERFILE.index("COPY . .") < DOCKERFILE.index("collectstatic")


def test_an_acp_agent_can_be_built_into_the_image():
    assert "ARG AHPD_EXTRA_NPM" in DOCKERFILE
    assert "npm install --global $AHPD_EXTRA_NPM" in DOCKERFILE
    for name in OURS:
        assert SERVICES[name]["build"]["args"]["AHPD_EXTRA_NPM"] == "${AHPD_EXTRA_NPM:-}"


def test_the_image_has_git_whatever_agents_it_is_built_with():
    # Changesets run git's command line; it is installed outside the optional npm step.
    installs = [line for line in DOCKERFILE.splitlines() if "apt-get install" in line]
    assert any("git" in line.split() and "nodejs" not in line for line in installs)


def test_the_image_has_bubblewrap_for_the_sandbox():
    installs = re.search(r"apt-get install -y --no-install-recommends ([^\\&]+)", DOCKERFILE)
    assert installs is not None and "bubblewrap" in installs.group(1).split()


def test_web_may_make_the_sandboxs_namespaces():
    # bubblewrap makes a user namespace and mounts a /proc of its own: Docker's default seccomp
    # and AppArmor profiles, and its masked /proc paths, forbid both.
    assert {"seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined"} <= set(
        SERVICES["web"]["security_opt"]
    )


def test_sessions_work_in_the_workspace_volume_the_server_serves():
    assert SERVICES["web"]["environment"]["AHPD_PATHS"] == "/workspace"
    assert "workspace:/workspace" in SERVICES["web"]["volumes"]
    assert re.search(r"AHPD_PATHS=/workspace\b", DOCKERFILE)
    # Made in the image, owned by the server's user: a volume mounted there takes its owner.
    made = next(line for line in DOCKERFILE.split("RUN ") if "useradd" in line)
    assert "/workspace" in made.split("mkdir", 1)[1] and "chown ahpd:ahpd" in made


def test_worker_and_beat_do_not_inherit_a_health_check_nothing_answers():
    worker = " ".join(SERVICES["worker"]["healthcheck"]["test"])
    assert "inspect ping" in worker and "/healthz" not in worker
    assert SERVICES["beat"]["healthcheck"] == {"disable": True}


def test_the_agents_files_docker_host_resolves_on_linux():
    assert "host.docker.internal:host-gateway" in SERVICES["web"]["extra_hosts"]
