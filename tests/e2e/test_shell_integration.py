"""The shell integrations under the rc files people really have. bash: a PROMPT_COMMAND that
ends in `;` (pyenv's, direnv's, a hand-written `history -a;`), one set as a bash 5.1 array, a
DEBUG trap already set, a prompt a theme rebuilds at every prompt, starship's own init. zsh:
hooks already in precmd_functions and preexec_functions, starship's init, a theme rebuilding
the prompt in a precmd hook that runs after ahpd's. Each terminal still says its command
lines, their exit codes and its folder, and prints no syntax error.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_terminals import PROMPT, on, open_terminal, run, screen, wait_after
from tests.support.client import Client
from tests.support.server import ServerProcess

ZSH = shutil.which("zsh")

#: What a screen shows less its escapes: zsh draws more than its prompt around it (bracketed
#: paste and keypad modes switched on after it, the PROMPT_SP line before).
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[ -/]*[0-~]")

RC_FILES = {
    "prompt command ending in a semicolon": (f"PS1='{PROMPT}'\nPROMPT_COMMAND='history -a;'\n"),
    "prompt command ending in an ampersand": (f"PS1='{PROMPT}'\nPROMPT_COMMAND='true &'\n"),
    "prompt command as an array": (
        f"PS1='{PROMPT}'\nPROMPT_COMMAND=('history -a' 'export SEEN_BY_ARRAY=1')\n"
    ),
    "a DEBUG trap already set": (
        f"PS1='{PROMPT}'\ntrap ': debug' DEBUG\nPROMPT_COMMAND='history -a'\n"
    ),
    "a prompt rebuilt at every prompt": (
        'theme_precmd() { PS1="[\\$?] ' + PROMPT + "\"; }\nPROMPT_COMMAND='theme_precmd;'\n"
    ),
    "a starship-style prompt": (
        # starship's init for bash without bash-preexec: its preexec on a DEBUG trap, its
        # precmd put before the PROMPT_COMMAND there was with a ';', the prompt rebuilt by a
        # command substitution there, and PS0 a command substitution of its own.
        "PROMPT_COMMAND='history -a'\n"
        'starship_preexec() { STARSHIP_START_TIME=$EPOCHREALTIME; : "$1"; }\n'
        "starship_precmd() { STARSHIP_CMD_STATUS=$? STARSHIP_PIPE_STATUS=(${PIPESTATUS[@]}); "
        f'PS1="$(printf \'[%s] \' "$STARSHIP_CMD_STATUS"){PROMPT}"; }}\n'
        "trap 'starship_preexec \"$_\"' DEBUG\n"
        'PROMPT_COMMAND="starship_precmd;$PROMPT_COMMAND"\n'
        "PS0='$(: starship_preexec_ps0)'\n"
    ),
}


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    home = Path(tempfile.mkdtemp(prefix="ahpd-rc-home-"))
    process = ServerProcess(
        env_extra={"SHELL": shutil.which("bash") or "/bin/bash", "HOME": str(home)}
    ).start()
    yield process
    process.close()
    shutil.rmtree(home, ignore_errors=True)


@pytest.mark.parametrize("rc", list(RC_FILES), ids=list(RC_FILES))
async def test_the_integration_holds_under_a_realistic_rc_file(server, connect, rc, tmp_path):
    # The person's .bashrc, in the home the sandbox keeps for them (and the server's HOME,
    # where a server without the sandbox reads it).
    for home in (server.home_of(server.root_ref), Path(server.env()["HOME"])):
        (home / ".bashrc").write_text(RC_FILES[rc] + "unset HISTFILE\n")
    client = await connect(server.url)
    await client.initialize()
    uri = await open_terminal(client, cwd=tmp_path.as_uri())
    executed, finished = await run(client, uri, "(exit 3)")
    assert executed["commandLine"] == "(exit 3)"
    assert finished["exitCode"] == 3
    if "[" in RC_FILES[rc]:
        # The prompt's own command, beside ahpd's, still reads the command's status.
        assert _ESCAPES.sub("", screen(client, uri)).endswith("[3] " + PROMPT)
    executed, finished = await run(client, uri, "echo fine")
    assert executed["commandLine"] == "echo fine" and finished["exitCode"] == 0
    start = len(client.actions)
    await client.dispatch(uri, {"type": "terminal/input", "data": "cd /\r"})
    moved = await wait_after(client, start, on(uri, "terminal/cwdChanged"))
    assert moved["action"]["cwd"] == "file:///"
    assert "syntax error" not in screen(client, uri)
    await client.request("disposeTerminal", {"channel": uri})


# -- zsh ---------------------------------------------------------------------------------------


ZSH_RC_FILES = {
    "hooks already in precmd_functions and preexec_functions": (
        # A hook that changes $? (a plugin's own status checks), one that sets the window
        # title as oh-my-zsh does (an OSC that is no mark), added both ways plugins add them.
        f"PS1='{PROMPT}'\n"
        "autoload -Uz add-zsh-hook\n"
        "plugin_precmd() { false; }\n"
        'title_preexec() { print -n "\\e]2;$1\\a"; }\n'
        "precmd_functions=(plugin_precmd)\n"
        "preexec_functions=(title_preexec)\n"
        "add-zsh-hook precmd plugin_precmd\n"
        "add-zsh-hook preexec title_preexec\n"
    ),
    "a starship-style prompt": (
        # starship's init for zsh: its hooks appended, the prompt a command substitution.
        "zmodload zsh/datetime\n"
        "setopt promptsubst\n"
        "starship_precmd() { STARSHIP_CMD_STATUS=$? STARSHIP_PIPE_STATUS=(${pipestatus[@]}); "
        "unset STARSHIP_START_TIME; }\n"
        "starship_preexec() { STARSHIP_START_TIME=$EPOCHREALTIME; }\n"
        "precmd_functions+=(starship_precmd)\n"
        "preexec_functions+=(starship_preexec)\n"
        "starship_zle-keymap-select() { zle reset-prompt; }\n"
        "zle -N zle-keymap-select starship_zle-keymap-select\n"
        'PROMPT=\'$(print -n "[${STARSHIP_CMD_STATUS:-0}] ")' + PROMPT + "'\n"
    ),
    "a theme that rebuilds the prompt at every prompt": (
        'theme_precmd() { PS1="%(?..[%?] )' + PROMPT + '"; }\nprecmd_functions+=(theme_precmd)\n'
    ),
}


def prompted(client: Client, uri: str) -> bool:
    return _ESCAPES.sub("", screen(client, uri)).endswith(PROMPT)


async def zsh_terminal(client: Client, cwd: Path) -> str:
    uri = f"ahp-terminal:/{uuid.uuid4()}"
    await client.request(
        "createTerminal",
        {
            "channel": uri,
            "claim": {"kind": "client", "clientId": client.client_id},
            "cwd": cwd.as_uri(),
        },
    )
    await client.request("subscribe", {"channel": uri})
    await client.wait_for(lambda: prompted(client, uri), timeout=15)
    return uri


async def zsh_run(client: Client, uri: str, line: str) -> tuple[dict[str, Any], dict[str, Any]]:
    start = len(client.actions)
    await client.dispatch(uri, {"type": "terminal/input", "data": line + "\r"})
    executed = await wait_after(client, start, on(uri, "terminal/commandExecuted"))
    command_id = executed["action"]["commandId"]
    finished = await wait_after(
        client, start, on(uri, "terminal/commandFinished", commandId=command_id)
    )
    await client.wait_for(lambda: prompted(client, uri), timeout=15)
    return executed["action"], finished["action"]


@pytest.fixture(scope="module")
def zsh_server() -> Iterator[ServerProcess]:
    home = Path(tempfile.mkdtemp(prefix="ahpd-zshrc-home-"))
    process = ServerProcess(env_extra={"SHELL": ZSH or "/usr/bin/zsh", "HOME": str(home)}).start()
    yield process
    process.close()
    shutil.rmtree(home, ignore_errors=True)


@pytest.mark.skipif(ZSH is None, reason="zsh is not installed (.ci/run installs it)")
@pytest.mark.parametrize("rc", list(ZSH_RC_FILES), ids=list(ZSH_RC_FILES))
async def test_the_zsh_integration_holds_under_a_realistic_zshrc(zsh_server, connect, rc, tmp_path):
    for home in (zsh_server.home_of(zsh_server.root_ref), Path(zsh_server.env()["HOME"])):
        (home / ".zshrc").write_text(ZSH_RC_FILES[rc] + "unset HISTFILE\n")
    client = await connect(zsh_server.url)
    await client.initialize()
    uri = await zsh_terminal(client, tmp_path)
    executed, finished = await zsh_run(client, uri, "(exit 3)")
    assert executed["commandLine"] == "(exit 3)"
    assert finished["exitCode"] == 3
    if "[" in ZSH_RC_FILES[rc]:
        # The prompt's own hooks, after ahpd's, still read the command's status.
        assert _ESCAPES.sub("", screen(client, uri)).endswith("[3] " + PROMPT)
    executed, finished = await zsh_run(client, uri, "echo fine")
    assert executed["commandLine"] == "echo fine" and finished["exitCode"] == 0
    start = len(client.actions)
    await client.dispatch(uri, {"type": "terminal/input", "data": "cd /\r"})
    moved = await wait_after(client, start, on(uri, "terminal/cwdChanged"))
    assert moved["action"]["cwd"] == "file:///"
    await client.request("disposeTerminal", {"channel": uri})
