"""`manage.py ahpd`, by noun: people.py (user, role), tokens.py (user token, token), teams.py
(team, project), server_status.py (status, sessions: the running server's own facts, over its
REST API by server.py), and checks.py (the database and ids, checked before anything is done)."""
