"""sessionConfigCompletions: the values a session config key may take, for what somebody types.

`branch` is this host's own key and answered here for every agent, as VS Code's host answers
it: the branches of the working folder's repository whose names hold the query, the most
recently committed first, twenty at the most. Any other key is the backend's to answer; one it
does not answer is an enum the client already has, answered with nothing.
"""

from __future__ import annotations

from typing import Any

from ...protocol.validation import config_object, optional_str, required_str
from ..changesets import git
from ..host import Host
from .caller import Caller
from .sessions import agent_for

METHOD = "sessionConfigCompletions"
#: Branches answered at the most, as VS Code's host answers.
MAX_BRANCHES = 20


async def do_session_config_completions(
    host: Host, caller: Caller, params: dict[str, Any]
) -> list[dict[str, str]]:
    """The SessionConfigValueItem objects for `params['property']` matching `params['query']`.

    Every param is checked before anything runs: the key, the query, the config, the agent
    (-32002 for one this host does not run) and the folder (one this host serves)."""
    caller.may("session:create")
    key = required_str(params, METHOD, "property")
    query = optional_str(params, METHOD, "query") or ""
    config_object(params.get("config"), METHOD)
    provider = agent_for(host, params.get("provider"))
    directory = optional_str(params, METHOD, "workingDirectory")
    folder = (
        host.served.folder_of(directory, METHOD) if directory is not None else host.served.default
    )
    if key != "branch":
        return await host.sessions.agents[provider].session_config_completions(key, query)
    top = git.repository_of(folder)
    if top is None:
        return []
    wanted = query.casefold()
    names = [name for name in await git.branches(folder) if wanted in name.casefold()]
    return [{"value": name, "label": name} for name in names[:MAX_BRANCHES]]
