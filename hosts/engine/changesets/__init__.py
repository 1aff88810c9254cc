"""Changesets: what a session changed in its git working tree, and what a person does with it."""

from .scopes import catalogue, session_uri_of
from .table import Changeset, Changesets

__all__ = ["Changeset", "Changesets", "catalogue", "session_uri_of"]
