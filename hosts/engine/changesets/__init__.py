"""Changesets: what a session changed in its git working tree, and what a person does with it."""

from .changeset_table import Changeset, Changesets
from .scopes import catalogue, session_uri_of

__all__ = ["Changeset", "Changesets", "catalogue", "session_uri_of"]
