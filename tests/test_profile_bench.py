"""bench/profile.py's reading of what it measures: py-spy's raw samples by package and function, and
which process is which part of a run."""

from __future__ import annotations

from bench.harness import part
from bench.profile import Profiled, cluster_part, package_of, read_spy

# Two stacks as `py-spy record --format raw --full-filenames` writes them: frames outermost first, then the count.
EXEC = "<module> (/venv/bin/pulumi-language-python-exec:9)"
STACK_PY = "run (/venv/lib/python3.11/site-packages/pulumi/runtime/stack.py:40)"
RAW = "\n".join(
    [
        f"{EXEC};{STACK_PY};_wait (/py/lib/python3.11/asyncio/tasks.py:512) 30",
        f"{EXEC};read (/work/gpu_nodes/providers/taints.py:120);raw_decode (/py/lib/python3.11/json/decoder.py:353) 10",
    ]
)


def test_a_frame_belongs_to_a_package_of_the_virtualenv_to_gpu_nodes_or_to_the_standard_library():
    assert package_of("/venv/lib/python3.11/site-packages/pulumi/runtime/stack.py") == "pulumi"
    assert package_of("/work/gpu_nodes/providers/taints.py") == "gpu_nodes"
    assert package_of("/py/lib/python3.11/asyncio/tasks.py") == "stdlib: asyncio"
    assert package_of("<frozen importlib._bootstrap>") == "stdlib: importlib"


def test_samples_count_once_per_package_on_the_stack_and_for_the_innermost_function():
    result = Profiled("preview")
    read_spy(RAW, "program", result)
    assert result.samples["program"] == 40, result.samples
    assert result.packages["program"]["pulumi"] == 30 and result.packages["program"]["gpu_nodes"] == 10, result.packages
    assert result.own["program"]["_wait (stdlib: asyncio)"] == 30, result.own
    assert result.ours["program"] == {"read (taints.py)": 10}, result.ours


def test_each_process_of_a_run_is_named_by_its_part():
    assert part("pulumi", "pulumi preview --stack bench") == "CLI"
    assert part("python", "/venv/bin/python -u /c/bin/pulumi-language-python-exec --root /w") == "program"
    assert part("pulumi-resource", "/c/plugins/pulumi-resource-kubernetes 127.0.0.1:1") == "kubernetes provider"
    assert part("python", "/venv/bin/python -u -m pulumi.dynamic 127.0.0.1:1") == "dynamic providers"
    assert part("bash", "bash -c true") is None
    assert cluster_part("kube-apiserver") == "cluster: kube-apiserver" and cluster_part("sshd") is None
