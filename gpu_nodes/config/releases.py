"""Every setting held to the release that honours it.

A setting (or one value of it) that only some releases of NVIDIA's parts read declares the first that does,
with the setting (`setting(..., needs=(Need(...),))`, gpu_nodes/config/fields.py): what we deploy for it, the
release that introduced it and where upstream says so. An older device plugin ignores an environment variable
or a config field it does not know and starts without it, so the group would run without what it asked for;
such a group is refused before anything is registered, the message naming the setting, the release found and
the first that honours it. This module finds, for a group's sections, the needs of what it sets, and weighs
them against a release.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from gpu_nodes.advisories import version_key
from gpu_nodes.config.fields import Component, Need, as_written, settings
from gpu_nodes.config.problems import Problem


@dataclass(frozen=True)
class Requirement:
    """A need of a setting a group uses: the setting's key within the group, its value as messages show it, and
    the release it needs."""

    key: str
    value: object
    need: Need

    @property
    def said(self) -> str:
        """The requirement in a line: `devicePlugin.enabledXids: v0.18.0`."""
        return f"{self.key}: v{self.need.since}"


def requirements(spec: object, component: Component, prefix: str = "") -> Iterator[Requirement]:
    """The needs of `component` that `spec`'s settings, and those of the sections it holds, call for, in
    declaration order: a need applies where its `when` holds on the section that holds the setting (without
    one, where the setting holds anything)."""
    for attr, s in settings(type(spec)):
        value = getattr(spec, attr)
        for need in s.needs:
            applies = need.when(spec) if need.when is not None else bool(value)
            if need.component is component and applies:
                shown = need.shown(spec) if need.shown is not None else as_written(value)
                yield Requirement(f"{prefix}{s.key}", shown, need)
        if s.section is not None and value is not None and not s.is_list:
            yield from requirements(value, component, f"{prefix}{s.key}.")


def declared_needs(spec: type, prefix: str = "") -> list[tuple[str, Need]]:
    """Every rule declared with the settings of `spec` and of the sections it holds, by the setting's key (the docs'
    table of them, gpu_nodes/package/generate.py; a test per rule, tests/config/test_releases.py)."""
    found: list[tuple[str, Need]] = []
    for _, s in settings(spec):
        found += [(f"{prefix}{s.key}", need) for need in s.needs]
        if s.section is not None and not s.is_list:
            found += declared_needs(s.section, f"{prefix}{s.key}.")
    return found


def unmet(found: list[Requirement], release: str) -> list[Requirement]:
    """The requirements `release` does not meet."""
    return [r for r in found if version_key(release) < version_key(r.need.since)]


def release_problem(requirement: Requirement, image_key: str, image: str, release: str) -> Problem:
    """The setting refused for the release found: `<key>: got <value>; needs <component> v<since> or later ...`."""
    need = requirement.need
    first = f"{need.component.value} {need.component.release(need.since)}"
    return Problem(
        requirement.key,
        requirement.value,
        f"needs {first} or later ({need.what}; {need.source}): {image_key} {image} is {release}, which does not read it",
    )
