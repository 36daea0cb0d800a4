"""The fake machine's stand-ins for dcgmi, mpirun + all_reduce_perf and dcgm-exporter's page
(tools/fakehost/standins.py): their output read back as a parser of the real programs' output reads it, and
compared with the recorded runs and upstream files it is shaped from (tools/fakehost/fixtures/README.md)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest

from tests.fakehost.programs import metrics_samples, nccl_footer, nccl_rows, run, standins
from tests.sshd import MachineSpec, SshServer, fakehost, require_sshd, running_sshd

FIXTURES = standins.FIXTURES
SCHEMA = json.loads((FIXTURES / "dcgm_diag_schema-4.6.0.json").read_text())
RECORDED_FAILURE = FIXTURES / "dcgmi-diag-r1-gb10-persistence-mode-fail.json"
DCGM_IMAGE = "nvcr.io/nvidia/cloud-native/dcgm:4.6.0-1-ubuntu24.04"
REQUIRED_FIELDS = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE")


def machine(node: str = "gpu-node-1", gpus: int = 4, mode: str = "healthy"):
    """A node's machine as it stands without a fake machine, in `mode`."""
    m = standins.simulated_machine(node, gpus)
    return standins.Machine(m.node, m.gpus, mode)


def uuids(node: str, gpus: int) -> list[str]:
    """What the node's fake machine's nvidia-smi prints as its GPUs' UUIDs."""
    return [line.split(", ")[2] for line in fakehost.query_gpu_lines(MachineSpec(hostname=node, gpus=gpus)).splitlines()]


def simulated_env(node: str = "gpu-node-1", gpus: int = 4, visible: str = "all", **extra: str) -> dict[str, str]:
    """What the registrar hands a container on a node without a fake machine."""
    env = {
        standins.ENV_NODE: node,
        standins.ENV_GPUS: str(gpus),
        standins.ENV_FAKEHOSTS: "/nonexistent",
        standins.VISIBLE_DEVICES: visible,
        standins.ENV_IMAGE: DCGM_IMAGE,
        "HOSTNAME": "gpu-verify-pod",
    }
    return env | extra


def categorized(document: dict) -> dict[str, dict]:
    return {t["name"]: t for c in document["DCGM Diagnostic"]["test_categories"] for t in c["tests"]}


# ------------------------------------------------------------------------------ dcgmi diag

LEVEL_TESTS = {
    1: {"software"},
    2: {"software", "memory", "pcie"},
    3: {
        "software",
        "memory",
        "pcie",
        "diagnostic",
        "nvbandwidth",
        "nccl_tests",
        "memory_bandwidth",
        "targeted_stress",
        "targeted_power",
    },
    4: {"software", "memory", "pcie", "diagnostic", "nvbandwidth", "nccl_tests", "memory_bandwidth", "targeted_stress"}
    | {"targeted_power", "memtest", "pulse_test"},
}


@pytest.mark.parametrize("level", [1, 2, 3, 4])
def test_a_healthy_machine_passes_every_test_of_the_level(level):
    document, status = standins.diag_document(machine().gpus, level, "healthy", "4.6.0")
    assert status == 0
    tests = categorized(document)
    assert set(tests) == LEVEL_TESTS[level]
    for name, test in tests.items():
        # nccl_tests is skipped unless DCGM_NCCL_TESTS_BIN_PATH names its binary (NcclTestsPlugin.cpp)
        want = "Skip" if name == "nccl_tests" else "Pass"
        assert test["test_summary"] == {"status": want}
        assert [(r["entity_id"], r["status"]) for r in test["results"]] == [(i, want) for i in range(4)]


@pytest.mark.parametrize("level", [1, 2, 3, 4])
@pytest.mark.parametrize("mode", ["healthy", "persistence-mode-off"])
def test_the_document_is_valid_under_nvidias_schema(level, mode):
    document, _ = standins.diag_document(machine().gpus, level, mode, "4.6.0")
    # The schema names no draft that jsonschema knows ("http://json-schema.org/schema#"): draft 7 reads it as written.
    jsonschema.Draft7Validator(SCHEMA).validate(document)


def test_the_categories_are_dcgms():
    document, _ = standins.diag_document(machine().gpus, 4, "healthy", "4.6.0")
    categories = {t["name"]: c["category"] for c in document["DCGM Diagnostic"]["test_categories"] for t in c["tests"]}
    assert categories["software"] == "Deployment" and categories["pcie"] == "Integration"
    assert {categories[t] for t in ("memory", "diagnostic", "nvbandwidth", "nccl_tests", "pulse_test")} == {"Hardware"}
    assert {categories[t] for t in ("memtest", "memory_bandwidth", "targeted_stress", "targeted_power")} == {"Stress"}


def test_persistence_mode_off_fails_the_software_test_on_every_gpu_in_dcgms_words():
    recorded = json.loads(RECORDED_FAILURE.read_text())
    (recorded_test,) = recorded["DCGM Diagnostic"]["test_categories"][0]["tests"]
    (recorded_warning,) = recorded_test["results"][0]["warnings"]
    document, status = standins.diag_document(machine(gpus=2).gpus, 1, "persistence-mode-off", "4.6.0")
    assert status == 226  # what the recorded run's dcgmi exited with
    software = categorized(document)["software"]
    for gpu, result in enumerate(software["results"]):
        assert result["status"] == "Fail"
        (warning,) = result["warnings"]
        assert warning == recorded_warning | {"warning": recorded_warning["warning"].replace("GPU 0", f"GPU {gpu}")}
    assert software["test_summary"]["status"] == "Fail"
    assert [w["warning"] for w in software["test_summary"]["warnings"]] == [
        r["warnings"][0]["warning"] for r in software["results"]
    ]


def test_persistence_mode_off_fails_only_the_software_test():
    document, _ = standins.diag_document(machine().gpus, 2, "persistence-mode-off", "4.6.0")
    assert {n: t["test_summary"]["status"] for n, t in categorized(document).items()} == {
        "software": "Fail",
        "memory": "Pass",
        "pcie": "Pass",
    }


def test_the_document_is_laid_out_as_dcgmi_prints_it():
    """jsoncpp's styled writer: the recording, written again, line for line (the recording lost the blank jsoncpp
    writes after a `" : "` that ends a line)."""
    text = RECORDED_FAILURE.read_text()
    again = standins.jsoncpp_styled(json.loads(text))
    assert [line.rstrip() for line in again.splitlines()] == text.splitlines()
    assert again.endswith("}\n")


@pytest.mark.parametrize(
    "value,expected",
    [
        ([], "[]"),
        ({}, "{}"),
        (["a", "b"], '[ "a", "b" ]'),
        (["x" * 80], '[\n\t"' + "x" * 80 + '"\n]'),
        ({"k": [1, 2]}, '{\n\t"k" : [ 1, 2 ]\n}'),
        ({"k": '\u00e9\t"'}, '{\n\t"k" : "\\u00e9\\t\\""\n}'),
    ],
)
def test_jsoncpp_styled_writes_what_jsoncpp_writes(value, expected):
    assert standins.jsoncpp_styled(value) == expected + "\n"


def test_dcgmi_reports_the_version_of_its_image_and_the_machines_driver():
    done = run(
        "dcgmi",
        ["diag", "-r", "1", "-j"],
        simulated_env(**{standins.ENV_IMAGE: "nvcr.io/nvidia/cloud-native/dcgm:4.5.3-1-ubuntu24.04"}),
    )
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["metadata"] == {"version": "4.5.3", "Driver Version Detected": MachineSpec().driver}
    assert document["entity_groups"] == [
        {"entities": [{"device_id": "20b2", "entity_id": i} for i in range(4)], "entity_group": "GPU", "entity_group_id": 1}
    ]


def test_dcgmi_sees_only_the_gpus_the_container_was_given():
    given = uuids("gpu-node-1", 4)[2:]
    done = run("dcgmi", ["diag", "-r", "2", "-j"], simulated_env(visible=",".join(given)))
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    # Inside the container NVML numbers the GPUs it sees from 0.
    assert [r["entity_id"] for r in categorized(document)["memory"]["results"]] == [0, 1]


def test_a_device_the_machine_does_not_have_stops_the_program():
    done = run("dcgmi", ["diag", "-r", "1", "-j"], simulated_env(visible="GPU-00000000-0000-0000-0000-000000000000"))
    assert done.returncode == 1
    assert "unknown device: GPU-00000000-0000-0000-0000-000000000000" in done.stderr


@pytest.mark.parametrize(
    "args", [["discovery", "-l"], ["diag", "-r", "1"], ["diag", "-r", "9", "-j"], ["diag", "-j", "--host", "x"]]
)
def test_what_the_stand_in_does_not_play_is_refused_not_guessed(args):
    done = run("dcgmi", args, simulated_env())
    assert done.returncode == 255 and done.stdout == "" and "stand-in" in done.stderr


# ------------------------------------------------------------------------------ all_reduce_perf

RECORDED_HEALTHY = FIXTURES / "nccl-dgx-a100-4gpu-nvswitch.table.txt"
RECORDED_P2P_DISABLED = FIXTURES / "nccl-dgx-a100-4gpu-p2p-disabled.table.txt"


def report(args: list[str], gpus: int = 4, mode: str = "healthy", procs: int = 1) -> tuple[str, str, int]:
    opts = standins.nccl_options(args)
    assert not isinstance(opts, str), opts
    return standins.all_reduce_report(
        "all_reduce_perf_mpi", opts, machine(gpus=8).gpus[:gpus], mode, procs, "gpu-verify-pod", 4242
    )


@pytest.mark.parametrize(
    "args,sizes",
    [
        (["-b", "4G", "-e", "4G", "-f", "2", "-g", "4"], [4 << 30]),
        (["-b", "8", "-e", "128M", "-f", "2", "-g", "4"], [8 << i for i in range(25)]),
        (["-b", "1G", "-e", "8G", "-f", "2", "-g", "4"], [1 << 30, 2 << 30, 4 << 30, 8 << 30]),
        (["-b", "1M", "-e", "3M", "-i", "1M", "-g", "4"], [1 << 20, 2 << 20, 3 << 20]),
        (["-g", "4"], [32 << 20]),  # the defaults: 32M to 32M
        (["-b", "10", "-e", "10", "-g", "4"], [8]),  # counts of 4-byte floats
    ],
)
def test_the_rows_are_the_sizes_the_command_asks_for(args, sizes):
    out, _, status = report(args)
    assert status == 0
    rows = nccl_rows(out)
    assert [r.size for r in rows] == sizes
    assert [r.count for r in rows] == [s // 4 for s in sizes]
    assert {r.wrong for r in rows} == {("0", "0")}


@pytest.mark.parametrize("recording,mode", [(RECORDED_HEALTHY, "healthy"), (RECORDED_P2P_DISABLED, "p2p-disabled")])
def test_on_four_gpus_at_the_recorded_sizes_busbw_is_the_recordings(recording, mode):
    out, _, _ = report(["-b", "1G", "-e", "8G", "-f", "2", "-g", "4"], mode=mode)
    recorded = [line.split() for line in recording.read_text().splitlines() if not line.startswith("#")]
    assert [(r.size, f"{r.out_of_place_busbw:.2f}", f"{r.in_place_busbw:.2f}") for r in nccl_rows(out)] == [
        (int(r[0]), r[7], r[11]) for r in recorded
    ]


@pytest.mark.parametrize("gpus", [2, 4, 8])
def test_the_largest_size_holds_the_fabrics_bandwidth_and_without_p2p_a_fraction_of_it(gpus):
    healthy = nccl_rows(report(["-b", "4G", "-e", "4G", "-g", str(gpus)], gpus=gpus)[0])[-1]
    degraded = nccl_rows(report(["-b", "4G", "-e", "4G", "-g", str(gpus)], gpus=gpus, mode="p2p-disabled")[0])[-1]
    assert healthy.out_of_place_busbw == pytest.approx(232.81, abs=0.01)
    assert degraded.out_of_place_busbw == pytest.approx(5.20, abs=0.01)


def test_avg_bus_bandwidth_is_the_mean_of_every_busbw_as_nccl_tests_sums_them():
    out, _, _ = report(["-b", "1G", "-e", "8G", "-f", "2", "-g", "4"])
    rows = nccl_rows(out)
    mean = sum(r.out_of_place_busbw + r.in_place_busbw for r in rows) / (2 * len(rows))
    assert float(nccl_footer(out, "Avg bus bandwidth")) == pytest.approx(mean, abs=0.01)
    assert float(nccl_footer(out, "Avg bus bandwidth")) == pytest.approx(222.066, abs=0.01)  # the recording's footer
    assert nccl_footer(out, "Out of bounds values") == "0 OK"


def test_the_output_is_laid_out_as_nccl_tests_2_19_6_prints_it():
    out, err, status = report(["-b", "4G", "-e", "4G", "-f", "2", "-g", "2"])
    lines = out.splitlines()
    assert (status, err) == (0, "")
    assert lines[0] == "# nccl-tests version 2.19.6 nccl-headers=23005 nccl-library=23005"
    assert lines[1] == "# Collective test starting: all_reduce_perf_mpi"
    assert lines[2] == (
        "# nThread 1 nGpus 2 minBytes 4294967296 maxBytes 4294967296 step: 2(factor) warmup iters: 1 iters: 20 "
        "agg iters: 1 validation: 1 graph: 0 unalign: 0"
    )
    assert lines[3:5] == ["#", "# Using devices"]
    assert lines[5:7] == [
        "#  Rank  0 Group  0 Pid   4242 on gpu-verify-pod device  0 [0000:07:00] NVIDIA A100-SXM4-80GB",
        "#  Rank  1 Group  0 Pid   4242 on gpu-verify-pod device  1 [0000:08:00] NVIDIA A100-SXM4-80GB",
    ]
    assert lines[7] == "#"
    assert lines[8].split() == ["#", "out-of-place", "in-place"]
    assert lines[9].split() == ["#", "size", "count", "type", "redop", "root"] + ["time", "algbw", "busbw", "#wrong"] * 2
    assert re.fullmatch(
        r"  4294967296    1073741824     float     sum      -1(  [ \d.]{7}  [ \d.]{6}  [ \d.]{6}       0){2}", lines[11]
    )
    assert lines[-6:] == [
        "# Out of bounds values : 0 OK",
        lines[-5],
        "#",
        "# Collective test concluded: all_reduce_perf_mpi",
        "#",
        "",
    ]
    assert lines[-5].startswith("# Avg bus bandwidth    : ") and lines[-5].endswith(" ")


def test_without_validation_wrong_values_are_not_counted():
    out, _, _ = report(["-b", "1G", "-e", "1G", "-c", "0", "-g", "4"])
    assert "validation: 0" in out and nccl_rows(out)[0].wrong == ("N/A", "N/A")


def test_more_gpus_than_the_container_was_given_fails_with_nccl_tests_words_and_status():
    out, err, status = report(["-b", "1G", "-e", "1G", "-g", "4"], gpus=2)
    assert status == 5  # testNotImplemented
    assert err.splitlines() == [
        "Invalid number of GPUs: 4 requested but only 2 were found.",
        "Please check the number of processes and GPUs per process.",
    ]
    assert out.splitlines()[-1] == " .. gpu-verify-pod pid 4242: Test failure common.cu:1454"
    assert nccl_rows(out) == []


def test_a_size_beyond_the_gpus_memory_is_reduced_as_nccl_tests_reduces_it():
    out, _, _ = report(["-b", "1G", "-e", "64G", "-f", "2", "-g", "4"])
    # (81920 MiB - a reserve of 4 GiB - 1 GiB) / 3 buffers = 25 GiB
    assert "# Reducing maxBytes to 26843545600 due to memory limitation" in out.splitlines()
    assert nccl_rows(out)[-1].size == 16 << 30


@pytest.mark.parametrize(
    "args,message",
    [
        (["-b", "4X"], "invalid size specified for 'minbytes'"),
        (["-d", "half"], "only -o sum -d float are simulated"),
        (["-G", "1"], "option -G is not simulated"),
        (["--bogus"], "unrecognized option '--bogus'"),
    ],
)
def test_options_it_cannot_play_stop_it(args, message):
    assert message in standins.nccl_options(args)


@pytest.mark.parametrize(
    "value,width,text",
    [
        (7163.5, 7, "7163.50"),
        (13989.0, 7, "13989.0"),
        (123456.7, 7, " 123457"),
        (0.5, 6, "  0.50"),
        (232.8123, 6, "232.81"),
        (1e9, 6, " 1e+09"),
    ],
)
def test_numbers_are_squeezed_into_their_columns_as_getfloatstr_does(value, width, text):
    assert standins.float_str(value, width) == text


@pytest.mark.parametrize(
    "text,size", [("4G", 4 << 30), ("128M", 128 << 20), ("8", 8), ("1.5K", 1536), ("2g", 2 << 30), ("x", -1.0)]
)
def test_sizes_are_read_as_parsesize_reads_them(text, size):
    assert standins.parse_size(text) == size


def test_mpirun_runs_the_images_program_by_its_file_name_and_hands_back_its_status():
    args = ["-np", "1", "/usr/local/bin/all_reduce_perf_mpi", "-b", "4G", "-e", "4G", "-f", "2", "-g", "4"]
    done = run("mpirun", args, simulated_env())
    assert done.returncode == 0, done.stderr
    assert nccl_rows(done.stdout)[-1].out_of_place_busbw == pytest.approx(232.81, abs=0.01)
    failing = run("mpirun", ["-np", "1", "/usr/local/bin/all_reduce_perf_mpi", "-g", "8"], simulated_env())
    assert failing.returncode == 5 and "Invalid number of GPUs: 8 requested" in failing.stderr


def test_mpirun_with_two_processes_prints_every_ranks_devices():
    done = run("mpirun", ["-np", "2", "all_reduce_perf_mpi", "-b", "1G", "-e", "1G", "-g", "2"], simulated_env())
    assert done.returncode == 0, done.stderr
    ranks = [line.split()[2] for line in done.stdout.splitlines() if line.startswith("#  Rank")]
    assert ranks == ["0", "1", "2", "3"]


def test_mpirun_without_the_program_in_the_image_says_so():
    done = run("mpirun", ["-np", "1", "/opt/nothing/here"], simulated_env())
    assert done.returncode == 1 and "Executable: /opt/nothing/here" in done.stderr


# ------------------------------------------------------------------------------ dcgm-exporter's page


def test_every_gpu_of_the_machine_has_the_four_fields_and_its_own_labels():
    samples = metrics_samples(standins.exporter_page(machine(gpus=8), "gpu-node-1"))
    by_gpu: dict[str, set[str]] = {}
    for s in samples:
        by_gpu.setdefault(s.labels["gpu"], set()).add(s.field)
        index = int(s.labels["gpu"])
        assert s.labels["UUID"] == uuids("gpu-node-1", 8)[index]
        assert s.labels["pci_bus_id"] == fakehost.pci_bus_id(index) and s.labels["device"] == f"nvidia{index}"
        assert (s.labels["modelName"], s.labels["hostname"]) == ("NVIDIA A100-SXM4-80GB", "gpu-node-1")
        assert s.labels["DCGM_FI_DRIVER_VERSION"] == MachineSpec().driver
    assert sorted(by_gpu, key=int) == [str(i) for i in range(8)]
    for fields in by_gpu.values():
        assert set(REQUIRED_FIELDS) <= fields


def test_the_labels_come_in_the_order_the_exporter_writes_them():
    line = next(x for x in standins.exporter_page(machine(), "h").splitlines() if x.startswith("DCGM_FI_DEV_XID_ERRORS{"))
    assert re.findall(r'(\w+)="', line) == [
        "gpu", "UUID", "pci_bus_id", "device", "modelName", "hostname", "DCGM_FI_DRIVER_VERSION", "err_code", "err_msg",
    ]  # fmt: skip
    assert line.endswith(',err_code="0",err_msg="No Error"} 0')


def test_each_family_has_the_help_and_type_of_the_collector_csv():
    page = standins.exporter_page(machine(), "h")
    counters = {c.field: c for c in standins.default_counters()}
    for field in {s.field for s in metrics_samples(page)}:
        assert f"# HELP {field} {counters[field].help}\n# TYPE {field} {counters[field].prom_type}\n" in page
    assert "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n" in page


def test_the_four_fields_have_the_values_of_the_recorded_scrape():
    recorded = {}
    for line in (FIXTURES / standins.METRICS_RECORDING).read_text().splitlines():
        field, rest = line.split("{", 1)
        recorded[(field, re.search(r'gpu="(\d+)"', rest).group(1))] = line.rsplit(" ", 1)[1]
    for s in metrics_samples(standins.exporter_page(machine(gpus=8), "h")):
        if (s.field, s.labels["gpu"]) in recorded:
            assert s.value == recorded[(s.field, s.labels["gpu"])]
    fb = {
        s.labels["gpu"]: s.value
        for s in metrics_samples(standins.exporter_page(machine(), "h"))
        if s.field == "DCGM_FI_DEV_FB_FREE"
    }
    assert fb == {str(i): str(81920 - 454 - 1) for i in range(4)}


def test_metrics_stopped_leaves_no_gpu_lines():
    assert standins.exporter_page(machine(mode="metrics-stopped"), "gpu-node-1") == ""


def test_other_modes_leave_the_page_as_it_was():
    healthy = standins.exporter_page(machine(), "gpu-node-1")
    for mode in ("persistence-mode-off", "p2p-disabled"):
        assert standins.exporter_page(machine(mode=mode), "gpu-node-1") == healthy


def test_a_node_of_the_other_model_reports_it():
    other = standins.simulated_machine("gpu-node-2", 2, "NVIDIA H100 PCIe")
    assert {s.labels["modelName"] for s in metrics_samples(standins.exporter_page(other, "gpu-node-2"))} == {"NVIDIA H100 PCIe"}
    with pytest.raises(standins.StandinError, match="no fake machine has GPU model"):
        standins.simulated_machine("gpu-node-2", 2, "NVIDIA B200")


# ------------------------------------------------------------------------------ on a running fake machine

NODE = "gpu-node-7"
SPEC = MachineSpec(hostname=NODE, gpus=2, driver="580.95.05", cuda_version="13.0")


@pytest.fixture(scope="module")
def fake_machine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    """A fake machine as tools/fakehost/up.sh runs one, kept where the registrar looks for it (<fakehosts>/<node>)."""
    require_sshd()
    with running_sshd(tmp_path_factory.mktemp("fakehosts"), SPEC, state=NODE) as server:
        yield server


@pytest.fixture
def mode(fake_machine: SshServer) -> Iterator[object]:
    """Sets the machine's mode for a test (break.sh's), and makes it healthy again after."""
    yield fake_machine.set_mode
    fake_machine.set_mode("healthy")


def machine_env(server: SshServer, visible: str = "all") -> dict[str, str]:
    fakehosts = Path(server.machine.state).parent
    # GPU_NODES_SIMULATED_GPUS is ignored where the fake machine runs: its nvidia-smi says how many.
    return simulated_env(NODE, gpus=8, visible=visible, **{standins.ENV_FAKEHOSTS: str(fakehosts)})


def test_the_machine_is_what_its_nvidia_smi_prints(fake_machine):
    found = standins.machine_from_env(machine_env(fake_machine))
    assert [(g.index, g.uuid, g.name, g.driver, g.memory_mib) for g in found.gpus] == [
        (i, u, "NVIDIA A100-SXM4-80GB", "580.95.05", 81920) for i, u in enumerate(uuids(NODE, 2))
    ]
    page = standins.exporter_page(found, NODE)
    assert {s.labels["DCGM_FI_DRIVER_VERSION"] for s in metrics_samples(page)} == {"580.95.05"}


def test_break_sh_persistence_mode_off_fails_dcgmi_and_healthy_restores_it(fake_machine, mode):
    mode("persistence-mode-off")
    failed = run("dcgmi", ["diag", "-r", "1", "-j"], machine_env(fake_machine))
    assert failed.returncode == 226
    assert categorized(json.loads(failed.stdout))["software"]["test_summary"]["status"] == "Fail"
    mode("healthy")
    assert run("dcgmi", ["diag", "-r", "1", "-j"], machine_env(fake_machine)).returncode == 0


def test_break_sh_p2p_disabled_drops_the_bus_bandwidth(fake_machine, mode):
    args = ["-np", "1", "/usr/local/bin/all_reduce_perf_mpi", "-b", "4G", "-e", "4G", "-f", "2", "-g", "2"]
    mode("p2p-disabled")
    done = run("mpirun", args, machine_env(fake_machine))
    assert done.returncode == 0  # nccl-tests: no value wrong, no NCCL_TESTS_MIN_BW
    assert nccl_rows(done.stdout)[-1].out_of_place_busbw == pytest.approx(5.20, abs=0.01)


def test_break_sh_metrics_stopped_empties_the_page(fake_machine, mode):
    mode("metrics-stopped")
    assert standins.exporter_page(standins.machine_from_env(machine_env(fake_machine)), NODE) == ""


def test_a_machine_whose_driver_is_gone_answers_nothing(fake_machine, mode):
    mode("driver")
    done = run("dcgmi", ["diag", "-r", "1", "-j"], machine_env(fake_machine))
    assert done.returncode == 1 and "the machine's nvidia-smi fails (exit 9)" in done.stderr


def test_a_machine_of_the_other_model_is_seen_as_such(fake_machine, mode):
    mode("other-model")
    found = standins.machine_from_env(machine_env(fake_machine))
    assert {g.name for g in found.gpus} == {"NVIDIA H100 PCIe"}
    done = run("dcgmi", ["diag", "-r", "1", "-j"], machine_env(fake_machine))
    assert {e["device_id"] for e in json.loads(done.stdout)["entity_groups"][0]["entities"]} == {"2331"}


# ------------------------------------------------------------------------------ ls of IMEX channels

CHANNEL0 = f"{standins.IMEX_CHANNEL_DIR}/channel0"
CHANNEL1 = f"{standins.IMEX_CHANNEL_DIR}/channel1"
NVLINK_NODE = "gpu-node-8"
# A clique as the GPU feature discovery labels it, "<ClusterUUID>.<CliqueId>", from a recorded GB200 tray
# (tests/scripts/fixtures/nvidia-smi-q-fabric-health-healthy-r580.txt).
CLIQUE = "9c6f5af3-53bf-49b5-a436-b66766c413c3.4026"


@pytest.fixture(scope="module")
def nvlink_machine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    """An NVLink-domain fake machine with channel 0 made, as `up.sh --nvlink` runs one."""
    require_sshd()
    spec = fakehost.nvlink_machine(MachineSpec(hostname=NVLINK_NODE, gpus=2), CLIQUE, ("127.0.10.1", "127.0.10.2"))
    with running_sshd(tmp_path_factory.mktemp("fakehosts"), spec, state=NVLINK_NODE) as server:
        yield server


def nvlink_env(server: SshServer, **extra: str) -> dict[str, str]:
    fakehosts = Path(server.machine.state).parent
    return simulated_env(NVLINK_NODE, gpus=2, **{standins.ENV_FAKEHOSTS: str(fakehosts)}, **extra)


def test_ls_finds_a_channel_the_claim_was_given_as_gnu_ls_prints_it():
    done = run("ls", [CHANNEL0], simulated_env(GPU_NODES_IMEX_CHANNELS="0"))
    assert (done.returncode, done.stdout, done.stderr) == (0, f"{CHANNEL0}\n", "")


def test_ls_of_a_channel_not_given_fails_in_gnu_ls_words_and_status():
    done = run("ls", [CHANNEL0, CHANNEL1], simulated_env(GPU_NODES_IMEX_CHANNELS="0"))
    assert done.returncode == 2  # coreutils src/ls.c: LS_FAILURE, "serious trouble"
    assert done.stdout == f"{CHANNEL0}\n"
    assert done.stderr == f"ls: cannot access '{CHANNEL1}': No such file or directory\n"


def test_the_plugins_channel_is_there_only_where_the_machine_has_it(nvlink_machine):
    """The device plugin passes the host's channel through: the NVLink machine's channel 0, not a channel it lacks,
    and nothing on a node without a fake machine."""
    given = run("ls", [CHANNEL0], nvlink_env(nvlink_machine, NVIDIA_IMEX_CHANNELS="0"))
    assert (given.returncode, given.stdout) == (0, f"{CHANNEL0}\n")
    lacking = run("ls", [CHANNEL1], nvlink_env(nvlink_machine, NVIDIA_IMEX_CHANNELS="1"))
    assert lacking.returncode == 2 and "cannot access" in lacking.stderr
    elsewhere = run("ls", [CHANNEL0], simulated_env(NVIDIA_IMEX_CHANNELS="0"))
    assert elsewhere.returncode == 2 and elsewhere.stdout == ""


def test_ls_of_anything_but_imex_channels_is_refused_not_guessed():
    done = run("ls", ["/etc"], simulated_env(GPU_NODES_IMEX_CHANNELS="0"))
    assert done.returncode != 0 and "only /dev/nvidia-caps-imex-channels/channel<N> operands are simulated" in done.stderr
