"""A platform team's own Pulumi program with a GPU fleet in it (docs/own-program.md): the fleet is
built in racks.py, which the program's unit tests import too (test_program.py)."""

import pulumi
import racks

pulumi.export("nodeGroups", racks.fleet.node_groups)
