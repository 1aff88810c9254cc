"""Automations: the `ahp-automations://` catalogue, runs, and when schedules are due.

Pure Python, like the rest of the engine: the store behind it is a port (ports.py), over the
ORM in the `automations` Django app.
"""

from __future__ import annotations

from .catalogue import Automations
from .ports import AutomationStore

__all__ = ["AutomationStore", "Automations"]
