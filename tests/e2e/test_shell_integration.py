"""The bash integration under the rc files people really have: a PROMPT_COMMAND that ends in
`;` (pyenv's, direnv's, a hand-written `history -a;`), one set as a bash 5.1 array, a DEBUG
trap already set, a prompt a theme rebuilds at every prompt (starship's way). Each terminal
still says its command lines, their exit codes and its folder, and prints no syntax error.

(zsh is not installed here; its integration is not run.)
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_terminals import PROMPT, on, open_terminal, run, screen, wait_after
from tests.support.server import ServerProcess

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
    executed, finished = await run(client, uri, "echo fine")
    assert executed["commandLine"] == "echo fine" and finished["exitCode"] == 0
    start = len(client.actions)
    await client.dispatch(uri, {"type": "terminal/input", "data": "cd /\r"})
    moved = await wait_after(client, start, on(uri, "terminal/cwdChanged"))
    assert moved["action"]["cwd"] == "file:///"
    assert "syntax error" not in screen(client, uri)
    await client.request("disposeTerminal", {"channel": uri})
