"""The live view while a fleet command runs: a line per stack and the fleet's progress bar.

On a terminal it redraws in place once a second; otherwise (CI logs) it prints a stack's line
whenever its state changes, and the fleet line with it.
"""

from __future__ import annotations

import sys
import threading
from typing import TextIO

from gpu_nodes.cli.progress import StackProgress, fleet_line, view


class LiveView(threading.Thread):
    def __init__(self, stacks: list[StackProgress], out: TextIO = sys.stderr, interval: float = 1.0) -> None:
        super().__init__(daemon=True)
        self.stacks = stacks
        self.out = out
        self.interval = interval
        self.tty = out.isatty()
        self.done = threading.Event()
        self._drawn = 0
        self._seen: dict[str, str] = {}

    def run(self) -> None:
        while not self.done.wait(self.interval):
            self.draw()

    def stop(self) -> None:
        self.done.set()
        self.join()
        self.draw()

    def draw(self) -> None:
        if self.tty:
            lines = view(self.stacks)
            # Up over what was drawn last, then each line cleared and written again.
            self.out.write(f"\x1b[{self._drawn}F" if self._drawn else "")
            self.out.write("".join(f"\x1b[2K{line}\n" for line in lines))
            self._drawn = len(lines)
        else:
            width = max(len(s.name) for s in self.stacks)
            changed = [s for s in self.stacks if self._seen.get(s.name) != s.state]
            for stack in changed:
                self._seen[stack.name] = stack.state
                self.out.write(stack.line(width) + "\n")
            if changed:
                self.out.write(fleet_line(self.stacks) + "\n")
        self.out.flush()
