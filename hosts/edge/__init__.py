"""The edge: the socket and its connection check, daphne's wiring, plain HTTP on its path,
and the process's engine.

Nothing is imported here: `daphne_server` installs Twisted's asyncio reactor on import, which
only `manage.py serve` may do, and the rest is imported by the module that needs it.
"""
