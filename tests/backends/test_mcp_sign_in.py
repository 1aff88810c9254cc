"""Reading an MCP server's sign-in challenge (hosts/backends/mcp/sign_in.py)."""

from __future__ import annotations

from hosts.backends.mcp.sign_in import challenge_params, metadata_addresses, requirement

SERVER = "https://mcp.example.com/team/mcp"


def test_a_bearer_challenges_parameters_are_read_quoted_or_bare():
    header = (
        'Bearer resource_metadata="https://mcp.example.com/.well-known/x", scope="a b", '
        "error=insufficient_scope"
    )
    assert challenge_params(header) == {
        "resource_metadata": "https://mcp.example.com/.well-known/x",
        "scope": "a b",
        "error": "insufficient_scope",
    }
    assert challenge_params('Basic realm="x"') == {}
    assert challenge_params(None) == {}


def test_the_metadata_is_looked_for_on_the_servers_own_origin_only():
    named = {"resource_metadata": "https://mcp.example.com/.well-known/oauth-protected-resource/x"}
    assert metadata_addresses(SERVER, named) == [
        "https://mcp.example.com/.well-known/oauth-protected-resource/x",
        "https://mcp.example.com/.well-known/oauth-protected-resource/team/mcp",
        "https://mcp.example.com/.well-known/oauth-protected-resource",
    ]
    # A challenge naming another host (the cloud's metadata address, say) is not followed.
    elsewhere = {"resource_metadata": "http://169.254.169.254/latest/meta-data"}
    assert metadata_addresses(SERVER, elsewhere) == [
        "https://mcp.example.com/.well-known/oauth-protected-resource/team/mcp",
        "https://mcp.example.com/.well-known/oauth-protected-resource",
    ]


def test_the_requirement_says_why_and_the_scopes_asked_for():
    metadata = {"resource": SERVER}
    assert requirement(metadata, 'Bearer scope="read"', expired=False) == {
        "reason": "required",
        "resource": metadata,
        "requiredScopes": ["read"],
    }
    assert requirement(metadata, None, expired=True)["reason"] == "expired"
    step_up = 'Bearer error="insufficient_scope", scope="write"'
    assert requirement(metadata, step_up, expired=True)["reason"] == "insufficientScope"
