"""Terminals: shells under real pseudoterminals, each one a channel its owner's (access.py).

* `table`: the host's terminals, whose each is, a person's cap and the root's list of them.
* `live`: one terminal, its output and the shell's marks turned into its actions.
* `pty`: the process under its pseudoterminal, read on the event loop.
* `marks`, `scrollback`: the OSC 133 / OSC 7 marks read out of the output, and the cap on
  what a terminal holds.
* `shells`: which shell runs, with ahpd's shell integration (`shell/`), where and with what.
"""

from .live_terminal import LiveTerminal
from .terminal_table import TerminalCap, Terminals, TerminalSettings

__all__ = ["LiveTerminal", "TerminalCap", "TerminalSettings", "Terminals"]
