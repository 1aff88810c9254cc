"""What of the server's disk this host serves (served.py) and the `file:` store (files.py,
and copies.py for copying and moving)."""
