"""How a component names and places its children: the fleet's and each node group's."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi


def child_name(component: str, name: str) -> str:
    """A child's resource name: its component's name, then its own, joined by `-`."""
    return f"{component}-{name}"


def claim_child(name: str) -> str:
    """The child that claims the object of child `name` (checks it is free, or this stack's) before it is created."""
    return f"{name}-claim"


@dataclass(frozen=True)
class Children:
    """Children named `<component>-<name>` and parented to it; with `legacy_root_names`, each
    also aliased to the bare `<name>` at the stack's root (its own children follow: Pulumi
    derives their aliases from the parent's, by the name's prefix)."""

    component: pulumi.Resource
    prefix: str
    legacy_root_names: bool = False
    # What every child waits for (the component's own depends_on).
    before: Sequence[pulumi.Resource] = ()

    def name(self, name: str) -> str:
        return child_name(self.prefix, name)

    def opts(self, name: str, depends_on: Sequence[pulumi.Resource] = (), **extra: object) -> pulumi.ResourceOptions:
        """The options of the child `name(name)`: parented, aliased when legacy, after `before`."""
        aliases = [pulumi.Alias(name=name, parent=pulumi.ROOT_STACK_RESOURCE)] if self.legacy_root_names else None
        return pulumi.ResourceOptions(
            parent=self.component,
            aliases=aliases,
            depends_on=[*self.before, *depends_on],
            **extra,  # type: ignore[arg-type]
        )
