"""The refusals of test_session_git_facts.py again on a server whose sandbox is off
(AHPD_SANDBOX=off), where the host's git runs as the server's user and sees every repository
it may: what keeps another person's repository unread and a repository's configuration from
running anything is then the host's own checks alone, not a sandbox that binds nothing else."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_session_git_facts import (  # noqa: F401 (fixtures and tests run here too)
    home,
    place,
    test_a_planted_git_naming_another_repository_is_not_read,
    test_a_repositorys_configuration_runs_nothing_when_it_is_read,
)
from tests.support.agents import server_with_acp_agent
from tests.support.server import ServerProcess


@pytest.fixture(scope="module")
def server(home: Path) -> Iterator[ServerProcess]:  # noqa: F811
    with server_with_acp_agent(
        HOME=str(home),
        GIT_CONFIG_GLOBAL=str(home / "none"),
        GIT_CONFIG_NOSYSTEM="1",
        AHPD_SANDBOX="off",
    ) as process:
        yield process
