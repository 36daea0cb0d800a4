"""This repository's program under the real engine reads every `gpu-nodes:*` key the way the
Python language host hands them over (PULUMI_CONFIG, PULUMI_CONFIG_SECRET_KEYS): a typo is
refused by name and a secret in plain text is warned about, before anything is registered.
No cluster is needed: the run stops before the provider."""

from __future__ import annotations

import os

import pytest

from tests.engine.project import ROOT, explain, new_project

pytestmark = pytest.mark.engine


def test_a_typo_under_gpu_nodes_stops_the_real_run_naming_the_closest_key(tmp_path):
    project = new_project(tmp_path, "", name="gpu-nodes")
    # The program is this repository's own __main__.py.
    main = os.path.relpath(ROOT, project.dir)
    (project.dir / "Pulumi.yaml").write_text((project.dir / "Pulumi.yaml").read_text() + f"main: {main}\n")
    project.pulumi("config", "set", "gpu-nodes:imagePullSecrets", "x")
    project.run("pulumi", "config", "set", "--stack", "test", "gpu-nodes:sshPrivateKey", "--", "not-a-key")
    result = project.pulumi("preview", check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0, explain("preview passed", result)
    assert "gpu-nodes:imagePullSecrets: got 'x'; unknown key; did you mean gpu-nodes:imagePullSecret?" in output, explain(
        "no typo", result
    )
    assert "gpu-nodes:sshPrivateKey: got a value of 9 characters" in output, explain("no key problem", result)
    assert "pulumi config set --secret gpu-nodes:sshPrivateKey" in output, explain("no warning", result)
    assert "not-a-key" not in output.replace("gpu-nodes:sshPrivateKey", ""), explain("the secret was shown", result)
    assert "Traceback" not in output, explain("a traceback", result)
    assert project.resources() == [], project.resources()
