"""dcgm-exporter scrapes read from recorded `/metrics` bodies (fixtures/README.md names the source of each).

Where a test needs a variant (a GPU's lines gone, a label renamed), it changes a copy of a recording
and says how."""

from __future__ import annotations

import pytest

from gpu_nodes.proof.exporter_metrics import (
    FB_USED,
    GPU_TEMP,
    GPU_UTIL,
    POWER_USAGE,
    REQUIRED_FIELDS,
    ExporterScrape,
    missing_fields,
    read_exporter_metrics,
)
from tests.proof.recorded import H100_SCRAPE, h100_with_fb_used, recorded

H100 = H100_SCRAPE
RTX3090 = "dcgm-exporter-rtx3090-pr326.prom"
V100 = "dcgm-exporter-v100x4-issue250.prom"
README = "dcgm-exporter-readme-4.5.3-4.8.2.txt"
A30_MIG = "dcgm-exporter-a30-mig-issue317.prom"
RENAMED = "dcgm-exporter-4.9-renamed-h100x2.composed.prom"

H100_UUIDS = (
    "GPU-c4529c8d-69c4-b61d-e0bc-7b2460096005",
    "GPU-bc5610b9-79c8-fedd-8899-07539c7f868a",
    "GPU-fbc2c554-4d37-8938-0032-f923bad0f716",
    "GPU-a65a773d-52bb-bcc1-a8ee-f78c3faa2e2d",
    "GPU-82e45d1b-1618-559f-144c-eab51545030b",
    "GPU-39e28159-8c62-ee71-64db-b748edd61e15",
    "GPU-e64d69ca-b4b3-59b2-e78c-94f26c4db365",
    "GPU-04d228d3-3b5a-3534-f5cf-969706647d56",
)


def read(name: str) -> ExporterScrape:
    return read_exporter_metrics(recorded(name))


def without_gpu(text: str, index: str) -> str:
    return "\n".join(line for line in text.splitlines() if f'gpu="{index}"' not in line)


@pytest.mark.parametrize(
    ("name", "gpus", "model"),
    [
        (H100, 8, "NVIDIA H100 80GB HBM3"),
        (RTX3090, 1, "NVIDIA GeForce RTX 3090"),
        (V100, 4, "Tesla V100-SXM2-32GB"),
        (README, 1, ""),
        (A30_MIG, 2, "NVIDIA A30"),
        (RENAMED, 2, "NVIDIA H100 80GB HBM3"),
    ],
)
def test_each_gpu_of_a_scrape_is_one_record_with_its_model(name, gpus, model):
    found = read(name).gpus
    assert (len(found), {gpu.model for gpu in found}) == (gpus, {model}), name


def test_a_gpus_index_uuid_hostname_and_driver_come_from_its_labels():
    found = read(H100).gpus
    assert [(g.index, g.uuid) for g in found] == [(str(i), uuid) for i, uuid in enumerate(H100_UUIDS)], H100
    assert {(g.hostname, g.driver) for g in found} == {("gpu-node-1", "580.105.08")}, H100


@pytest.mark.parametrize(
    ("name", "fields"),
    [
        (H100, {GPU_TEMP, POWER_USAGE, GPU_UTIL, "DCGM_FI_DEV_MEM_COPY_UTIL"}),
        (RTX3090, {"DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_FB_FREE"}),
        (V100, {"DCGM_FI_DEV_POWER_MGMT_LIMIT", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", GPU_UTIL}),
        # The README's DCGM_FI_DEV_MEMORY_TEMP is 9223372036854775794, DCGM_INT64_NOT_SUPPORTED: no value.
        (README, {"DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK"}),
        (A30_MIG, {FB_USED, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"}),
    ],
)
def test_the_fields_of_a_scrape_are_those_with_a_value(name, fields):
    assert read(name).fields == fields, name


def test_a_gpu_exporting_the_four_fields_has_nothing_missing():
    assert missing_fields(read_exporter_metrics(h100_with_fb_used()), 8, H100_UUIDS) == [], "H100 with FB_USED"


def test_each_gpu_without_a_required_field_is_named_with_the_field():
    assert missing_fields(read(H100), 8) == [f"GPU {i} ({uuid}): no {FB_USED}" for i, uuid in enumerate(H100_UUIDS)], H100


def test_fewer_gpus_than_the_node_offers_is_a_problem():
    scrape = read_exporter_metrics(without_gpu(h100_with_fb_used(), "7"))
    assert missing_fields(scrape, 8) == ["the exporter lists 7 GPUs, the node offers 8"], "H100 without GPU 7"


def test_a_gpu_preflight_found_that_is_not_exported_is_named_by_its_uuid():
    scrape = read_exporter_metrics(without_gpu(h100_with_fb_used(), "7"))
    assert missing_fields(scrape, 8, H100_UUIDS)[1:] == [f"{H100_UUIDS[7]} that preflight found is not exported"], H100


def test_a_gpu_exported_that_preflight_did_not_find_is_named():
    """A scrape of another node's exporter shows as GPUs preflight never saw."""
    preflight = (*H100_UUIDS[:7], "GPU-00000000-0000-0000-0000-000000000007")
    problems = missing_fields(read_exporter_metrics(h100_with_fb_used()), 8, preflight)
    assert problems == [
        "GPU-00000000-0000-0000-0000-000000000007 that preflight found is not exported",
        f"{H100_UUIDS[7]} is exported, preflight did not find it",
    ], problems


def test_the_names_dcgm_gives_the_fields_anew_count_as_the_fields():
    """DCGM 4.6.0 dcgm_fields.h: GPU_UTIL_RATIO, GPU_TEMP_CELSIUS, BOARD_POWER_WATTS; exporter 4.9.0 exports them.
    FB_USED keeps its name in DCGM 4.6.0, and the composed scrape has none, so it alone is missing."""
    scrape = read(RENAMED)
    assert missing_fields(scrape, 2) == [f"GPU {i} ({uuid}): no {FB_USED}" for i, uuid in enumerate(H100_UUIDS[:2])], RENAMED


def test_the_renamed_driver_and_hostname_labels_are_read():
    assert {(g.hostname, g.driver) for g in read(RENAMED).gpus} == {("gpu-node-1", "580.105.08")}, RENAMED


def test_mig_instances_are_records_of_their_gpu_and_count_once():
    scrape = read(A30_MIG)
    instances = [(r.index, r.mig_profile, r.mig_instance) for r in scrape.records]
    assert instances == [("0", "1g.6gb", i) for i in "3456"] + [("1", "1g.6gb", i) for i in "34"], A30_MIG
    assert [(g.index, g.mig_instance) for g in scrape.gpus] == [("0", None), ("1", None)], A30_MIG


def test_a_mig_gpu_has_a_field_when_any_of_its_instances_exports_it():
    problems = missing_fields(read(A30_MIG), 2)
    assert problems == [
        f"GPU {i} ({uuid}): no {field}"
        for i, uuid in (("0", "GPU-265c9814-6156-355b-e589-ff2064894f16"), ("1", "GPU-2d20791a-b4a6-ba59-97f1-e95b99fe5b49"))
        for field in (GPU_UTIL, GPU_TEMP, POWER_USAGE)
    ], A30_MIG


@pytest.mark.parametrize(
    ("value", "has_value"),
    [
        ("29", True),
        ("0", True),
        ("113.611000", True),
        ("1e+03", True),
        ("9223372036854775792", False),  # DCGM_INT64_BLANK
        ("9223372036854775794", False),  # DCGM_INT64_NOT_SUPPORTED, as the exporter's README shows it
        ("9223372036854775795", False),  # DCGM_INT64_NOT_PERMISSIONED
        ("2147483632", False),  # DCGM_INT32_BLANK
        ("2147483634", False),  # DCGM_INT32_NOT_SUPPORTED
        ("140737488355328.000000", False),  # DCGM_FP64_BLANK, as the exporter prints a double (%f)
        ("140737488355330.000000", False),  # DCGM_FP64_NOT_SUPPORTED
        ("NaN", False),
        ("+Inf", False),
    ],
)
def test_a_blank_or_no_number_is_no_value(value, has_value):
    """The H100 scrape's GPU 1 temperature line, its value replaced."""
    line = next(line for line in recorded(H100).splitlines() if line.startswith(GPU_TEMP + '{gpu="1"'))
    scrape = read_exporter_metrics(line.rsplit(" ", 1)[0] + " " + value)
    assert (GPU_TEMP in scrape.fields) is has_value, value


def test_the_old_namespaces_uuid_label_is_read_as_the_uuid():
    """The exporter writes `uuid` instead of `UUID` with its old-namespace option (gpu_collector.go)."""
    scrape = read_exporter_metrics(recorded(H100).replace(',UUID="', ',uuid="'))
    assert tuple(g.uuid for g in scrape.gpus) == H100_UUIDS, "H100 with uuid"


def test_lines_that_are_no_gpus_are_passed_over():
    """An NVLink and an NVSwitch line as render_metrics.go writes them (gpu_uuid, not UUID; nvswitch), and a
    metric of the exporter's own: none is a GPU."""
    others = (
        'DCGM_FI_DEV_NVLINK_BANDWIDTH_L0{nvlink="0",gpu="0",gpu_uuid="GPU-c4529c8d-69c4-b61d-e0bc-7b2460096005",'
        'device="nvidia0",model_name="NVIDIA H100 80GB HBM3",hostname="gpu-node-1"} 0\n'
        'DCGM_FI_DEV_NVSWITCH_TEMPERATURE_CURRENT{nvswitch="0",hostname="gpu-node-1"} 31\n'
        "go_goroutines 14\n"
    )
    assert read_exporter_metrics(others + recorded(H100)) == read(H100), "H100 with other lines"


def test_a_label_value_with_quotes_commas_and_braces_is_read_whole():
    """Prometheus' text format escapes `\\` and `"` in label values; the XID line's err_msg is free text."""
    line = next(line for line in recorded(RTX3090).splitlines() if line.startswith("DCGM_FI_DEV_XID_ERRORS{"))
    tricky = line.replace('err_msg="Unknown Error"', 'err_msg="Graphics Engine Exception, \\"ch 3\\" {bad}"')
    assert read_exporter_metrics(tricky) == read_exporter_metrics(line), tricky


def test_text_around_the_metrics_is_passed_over():
    """The README's example has the commands and NVIDIA's `...` between the lines, and a space after a comma."""
    scrape = read(README)
    assert [(g.index, g.uuid) for g in scrape.gpus] == [("0", "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52")], README


def test_the_required_fields_are_the_four_nvidias_ai_cluster_runtime_requires():
    """NVIDIA/aicr validators/conformance/accelerator_metrics_check.go (v0.11.1): its required DCGM metrics."""
    assert REQUIRED_FIELDS == ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE")


@pytest.mark.parametrize("text", ["", "404 page not found\n", "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n"])
def test_a_body_without_gpu_lines_has_no_gpus_and_every_gpu_is_missing(text):
    assert missing_fields(read_exporter_metrics(text), 2) == ["the exporter lists 0 GPUs, the node offers 2"], text
