"""The live view in a CI log (no terminal): a stack's line each time its state changes, with the fleet line."""

from __future__ import annotations

import io

from gpu_nodes.cli.live import LiveView
from gpu_nodes.cli.progress import StackProgress


def test_a_log_gets_a_line_per_state_change_and_the_fleet_line():
    a, b = StackProgress("a", ("n1",)), StackProgress("b", ("n2",))
    out = io.StringIO()
    live = LiveView([a, b], out=out)
    live.draw()
    a.start("up")
    live.draw()
    live.draw()  # nothing changed: nothing printed
    a.finish(True)
    b.skip("not started: the owner a did not run")
    live.draw()
    lines = out.getvalue().splitlines()
    states = [line.split()[:2] for line in lines if not line.startswith("fleet")]
    assert states == [["a", "waiting"], ["b", "waiting"], ["a", "running"], ["a", "passed"], ["b", "skipped"]], lines
    assert sum(line.startswith("fleet [") for line in lines) == 3, lines
    assert lines[-1].endswith("stacks finished 2/2"), lines
