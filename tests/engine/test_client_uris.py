"""Client-scheme URIs in VS Code's own form (its toAgentClientUri and fromAgentClientUri)."""

from __future__ import annotations

import pytest

from hosts.engine.client_requests import client_uri, to_client_uri

# (as the client knows it, as this host names it on client `editor`)
FORMS = [
    # An empty authority is written `-`: the seed's own example.
    ("file:///work/a.ts", "vscode-agent-client://editor/file/-/work/a.ts"),
    ("file://server/share/a.ts", "vscode-agent-client://editor/file/server/share/a.ts"),
    # A URI with no path of slashes (an unsaved buffer) marks its scheme `!`.
    ("untitled:Untitled-1", "vscode-agent-client://editor/untitled!/-/Untitled-1"),
    (
        "vscode-userdata:/User/settings.json",
        "vscode-agent-client://editor/vscode-userdata/-/User/settings.json",
    ),
    (
        "virtual://plugin/a.md?ref=main#top",
        "vscode-agent-client://editor/virtual/plugin/a.md?ref=main#top",
    ),
]


@pytest.mark.parametrize(("known", "named"), FORMS)
def test_a_client_uri_is_written_and_read_as_vscode_writes_and_reads_it(known, named):
    assert to_client_uri("editor", known) == named
    assert client_uri(named) == ("editor", known)


def test_an_empty_authority_written_empty_is_still_read():
    assert client_uri("vscode-agent-client://editor/file//work/a.ts") == (
        "editor",
        "file:///work/a.ts",
    )


@pytest.mark.parametrize(
    "uri",
    [
        "file:///work/a.ts",
        "vscode-agent-client://",
        "vscode-agent-client:///file/-/x",
        "vscode-agent-client://editor",
        "vscode-agent-client://editor/file",
    ],
)
def test_what_names_no_clients_file_is_no_client_uri(uri):
    assert client_uri(uri) is None
