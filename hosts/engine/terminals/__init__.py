"""Terminals: shells under real pseudoterminals, each one a channel every client may watch.

* `table`: the host's terminals and the root's list of them.
* `live`: one terminal, its output and the shell's marks turned into its actions.
* `pty`: the process under its pseudoterminal, read on the event loop.
* `marks`, `scrollback`: the OSC 133 / OSC 7 marks read out of the output, and the cap on
  what a terminal holds.
* `shells`: which shell runs, with ahpd's shell integration (`shell/`), where and with what.
"""

from .live import LiveTerminal
from .table import Terminals, TerminalSettings

__all__ = ["LiveTerminal", "TerminalSettings", "Terminals"]
