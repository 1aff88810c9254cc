"""The HTTP API under /api: people, tokens, teams, projects, roles, root config and sessions.

It signs requests in with the socket's tokens (hosts/api/auth.py) and checks the same grants
(hosts/api/permissions.py). Sessions are read from the database the engine writes behind;
nothing here drives the engine.
"""
