"""The stack config as this run holds it: every key under `gpu-nodes:`, and which were set as secrets.

`pulumi.Config` reads one key at a time; to refuse a key nobody reads (a typo), the program needs
them all, which only the SDK's internals hold (gpu_nodes/pulumi_internals.py says where).

Known keys come from the declarations (`STACK_SETTINGS`): a setting declared there is read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from gpu_nodes.config.fields import BOOLEAN, LIST, OBJECT, Setting
from gpu_nodes.config.problems import Problems, Undisclosed
from gpu_nodes.config.reading import unknown_key
from gpu_nodes.config.stack import KUBECONFIG, STACK_SETTINGS, add_secret_problems
from gpu_nodes.constants import NAMESPACE


@dataclass(frozen=True)
class StackConfig:
    """The run's config: `values` by full key (`gpu-nodes:nodeGroups`), as text; `secret_keys` set with --secret."""

    values: Mapping[str, str]
    secret_keys: frozenset[str]

    @classmethod
    def of_this_run(cls) -> StackConfig:
        from gpu_nodes.pulumi_internals import run_config

        values, secret_keys = run_config()
        return cls(values=values, secret_keys=secret_keys)

    def text(self, s: Setting) -> str | None:
        """The setting's text as given, or None when unset."""
        return self.text_of(s.key) if s.key in self.values else None

    def text_of(self, key: str) -> str:
        value = self.values[key]
        return value if isinstance(value, str) else json.dumps(value)

    def value(self, s: Setting) -> object:
        """The setting as data: a list, an object or a boolean decoded from its JSON text, as
        `pulumi.Config.get_object` would, but text that is no JSON stays text (the reader names it)."""
        text = self.text(s)
        if text is None or s.kind not in (LIST, OBJECT, BOOLEAN):
            return text
        try:
            return json.loads(text)
        except ValueError:
            return text

    def problems(self) -> list[str]:
        """Keys under `gpu-nodes:` no declaration has, and secrets that are not what they must be."""
        problems = Problems()
        known = [s.key for s in STACK_SETTINGS if s.key.startswith(f"{NAMESPACE}:")]
        for key in sorted(k for k in self.values if k.startswith(f"{NAMESPACE}:") and k not in known):
            # A typo of a secret's key (sshPrivateKeys) holds a secret all the same.
            value = Undisclosed(len(self.text_of(key))) if key in self.secret_keys else self.values[key]
            problems.add(key, value, unknown_key(key, known, prefix=f"{NAMESPACE}:"))
        add_secret_problems(problems, self.text)
        return problems.problems

    def warnings(self) -> list[str]:
        """A secret given in plain config: in the stack file for anyone who reads it."""
        warnings = []
        for s in (s for s in STACK_SETTINGS if s.secret):
            text = self.text(s)
            if text is None or s.key in self.secret_keys:
                continue
            if s is KUBECONFIG and "\n" not in text and not text.lstrip().startswith("{"):
                continue  # a path to the kubeconfig: no secret
            warnings.append(
                f"{s.key} is set in plain text in the stack's config file; set it as a secret: "
                f"pulumi config set --secret {s.key} < FILE"
            )
        return warnings
