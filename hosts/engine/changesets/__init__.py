"""Changesets: what a session changed in its git working tree, and what a person does with it."""

from .table import Changeset, Changesets, catalogue, changeset_uri, session_uri_of

__all__ = ["Changeset", "Changesets", "catalogue", "changeset_uri", "session_uri_of"]
