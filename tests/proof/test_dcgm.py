"""DCGM's diagnostic result, read from `dcgmi diag -j` documents: recorded ones and ones composed from
recorded parts by DCGM 4.6.0's writer (fixtures/README.md names each source)."""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest

from gpu_nodes.proof.dcgm import NO_MESSAGE, DcgmDiagnostic, DcgmFailure, read_diagnostic
from tests.proof.recorded import fixture_names, recorded, recorded_json

GB10 = "dcgmi-diag-r1-dcgm4.2.3-gb10-persistence-fail.json"
EIGHT_GPUS = "dcgmi-diag-r3-8gpu-pass.composed.json"
PCIE_XID = "dcgmi-diag-r2-2gpu-pcie-xid-fail.composed.json"
MIG_REFUSED = "dcgmi-diag-mig-runtime-error.composed.json"
DCGM3 = "dcgmi-diag-r2-dcgm3-virtualclient-pass.json"

PERSISTENCE = (
    'Persistence Mode: Persistence mode for GPU 0 is disabled. Enable persistence mode by running "nvidia-smi -i <gpuId> -pm 1 " '
    "as root."
)
XID = "Detected XID 45 for GPU 0 Please consult the documentation for details of this XID."


def read(name: str) -> DcgmDiagnostic:
    found = read_diagnostic(recorded(name))
    assert found is not None, f"{name}: no DCGM document found"
    return found


def read_edited(name: str, edit) -> DcgmDiagnostic:
    """A document changed by `edit` (a function of the parsed JSON), then read as dcgmi would print it."""
    document = copy.deepcopy(recorded_json(name))
    edit(document)
    found = read_diagnostic(json.dumps(document, indent="\t"))
    assert found is not None, name
    return found


def pcie_test(document) -> dict:
    """The pcie test of the two-GPU document: GPU 0's result first, its summary under `test_summary`."""
    return document["DCGM Diagnostic"]["test_categories"][1]["tests"][0]


@pytest.mark.parametrize(
    ("name", "version", "driver", "tests"),
    [
        (GB10, "4.2.3", "580.82.09", (("software", "Fail"),)),
        (EIGHT_GPUS, "4.6.0", "580.105.08", (("software", "Pass"), ("diagnostic", "Pass"))),
        (PCIE_XID, "4.6.0", "570.148.08", (("software", "Pass"), ("pcie", "Fail"), ("memory", "Pass"))),
        (MIG_REFUSED, "4.6.0", None, ()),
    ],
)
def test_a_document_gives_dcgms_version_the_driver_and_each_tests_status(name, version, driver, tests):
    found = read(name)
    assert (found.version, found.driver, found.tests) == (version, driver, tests), name


# testing/python3/dcgm_diag_schema.json at v4.6.0, which DCGM's test suite checks dcgmi's output with; its
# `$schema` names no draft, and it uses only keywords every draft has.
DCGM_SCHEMA = jsonschema.Draft7Validator(recorded_json("dcgm_diag_schema-4.6.0.json"))


@pytest.mark.parametrize("name", [n for n in fixture_names("dcgmi-diag-*.json") if n != DCGM3])
def test_every_dcgm4_document_here_holds_to_dcgms_own_schema(name):
    errors = [error.message for error in DCGM_SCHEMA.iter_errors(recorded_json(name))]
    assert errors == [], name


def test_dcgms_schema_refuses_a_dcgm3_document():
    assert not DCGM_SCHEMA.is_valid(recorded_json(DCGM3)), DCGM3


@pytest.mark.parametrize(
    ("name", "failures"),
    [
        (GB10, (DcgmFailure("software", "GPU 0", PERSISTENCE, 29, 5),)),
        # DCGM 4.5+ repeats the entity's warning in the test summary; it is one failure, GPU 0's.
        (PCIE_XID, (DcgmFailure("pcie", "GPU 0", XID, 101, 4),)),
        (EIGHT_GPUS, ()),
    ],
)
def test_each_failed_result_is_a_failure_with_dcgms_message(name, failures):
    assert read(name).failures == failures, name


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            GB10,
            "software, GPU 0: Persistence Mode: Persistence mode for GPU 0 is disabled. Enable persistence mode by running "
            '"nvidia-smi -i <gpuId> -pm 1 " as root. (DCGM error 29)',
        ),
        (PCIE_XID, f"pcie, GPU 0: {XID} (DCGM error 101)"),
    ],
)
def test_a_failure_reads_as_test_entity_message_and_dcgms_error(name, expected):
    assert [str(f) for f in read(name).failures] == [expected], name


@pytest.mark.parametrize(("name", "passed"), [(GB10, False), (EIGHT_GPUS, True), (PCIE_XID, False), (MIG_REFUSED, False)])
def test_a_run_passes_only_without_failure_or_runtime_error(name, passed):
    assert read(name).passed is passed, name


def test_a_warning_is_a_fail_in_json_and_fails_the_run():
    """Persistence mode off is DCGM_ERROR_CONFIG (severity 5), a warning that dcgmi prints as Fail (exit 226)."""
    found = read(GB10)
    assert [(f.severity, f.error_id) for f in found.failures] == [(5, 29)], GB10
    assert not found.passed, GB10


def test_a_summary_warning_no_entity_carries_fails_the_whole_test():
    """An error of no entity (DCGM_FE_NONE) is written only in the test summary (Diag.cpp HelperJsonAddTestSummary)."""

    def on_no_entity(document):
        pcie = pcie_test(document)
        pcie["results"][0] = {k: v for k, v in pcie["results"][0].items() if k != "warnings"} | {"status": "Pass"}

    found = read_edited(PCIE_XID, on_no_entity)
    assert found.failures == (DcgmFailure("pcie", None, XID, 101, 4),), PCIE_XID
    assert str(found.failures[0]) == f"pcie: {XID} (DCGM error 101)", PCIE_XID


def test_a_fail_without_a_warning_still_fails_and_says_dcgm_gave_no_message():
    def without_warnings(document):
        pcie = pcie_test(document)
        del pcie["results"][0]["warnings"], pcie["test_summary"]["warnings"]

    found = read_edited(PCIE_XID, without_warnings)
    assert found.failures == (DcgmFailure("pcie", "GPU 0", NO_MESSAGE, None, None),), PCIE_XID
    assert not found.passed, PCIE_XID


def test_a_failed_summary_with_nothing_else_failed_still_fails_the_test():
    def summary_only(document):
        pcie = pcie_test(document)
        pcie["results"][0] = {"entity_group": "GPU", "entity_group_id": 1, "entity_id": 0, "status": "Pass"}
        del pcie["test_summary"]["warnings"]

    found = read_edited(PCIE_XID, summary_only)
    assert found.failures == (DcgmFailure("pcie", None, NO_MESSAGE, None, None),), PCIE_XID


def test_a_run_whose_every_test_was_skipped_does_not_pass():
    def all_skipped(document):
        for category in document["DCGM Diagnostic"]["test_categories"]:
            for test in category["tests"]:
                test["test_summary"]["status"] = "Skip"
                for result in test["results"]:
                    result["status"] = "Skip"

    found = read_edited(EIGHT_GPUS, all_skipped)
    assert not found.passed, EIGHT_GPUS
    assert found.problems == ("DCGM passed no test (software: Skip, diagnostic: Skip)",), EIGHT_GPUS


def test_a_run_that_could_not_start_gives_dcgms_explanation():
    found = read(MIG_REFUSED)
    assert found.runtime_error == (
        "Error: Cannot run diagnostic: MIG is enabled, but no compute instances are configured. "
        "CUDA needs to execute on a compute instance if MIG is enabled."
    ), MIG_REFUSED
    assert found.problems == (f"DCGM gave no result to judge: {found.runtime_error}",), MIG_REFUSED


def test_a_dcgm3_document_is_recognised_and_refused_naming_the_release_to_run():
    found = read(DCGM3)
    assert (found.tests, found.failures, found.passed) == ((), (), False), DCGM3
    assert found.runtime_error is not None and "DCGM 3.x format" in found.runtime_error, found.runtime_error
    assert "DCGM 4.5.3 or later" in found.runtime_error, found.runtime_error


@pytest.mark.parametrize(
    ("where", "wrap"),
    [
        ("a banner before", lambda text: "Successfully ran diagnostic for group.\n" + text),
        ("lines after", lambda text: text + "W1207 12:00:00 dcgmi exited {code: 226}\n"),
        ("both, with braces", lambda text: "{not json\n" + text + "}\n"),
        ("a JSON log line before", lambda text: '{"level": "info", "msg": "starting"}\n' + text),
    ],
)
@pytest.mark.parametrize("name", [GB10, PCIE_XID])
def test_a_document_among_other_lines_reads_as_the_document_alone(name, where, wrap):
    assert read_diagnostic(wrap(recorded(name))) == read(name), f"{name} with {where}"


@pytest.mark.parametrize(
    ("what", "log"),
    [
        ("an empty log", ""),
        ("dcgmi's own error", "Error: unable to establish a connection to the specified host: localhost\n"),
        ("another program's JSON", '{"level": "info", "msg": "no GPU found"}\n'),
        ("a document cut short", recorded(GB10)[:600]),
    ],
)
def test_a_log_without_a_whole_dcgm_document_reads_as_none(what, log):
    assert read_diagnostic(log) is None, what
