"""DCGM's diagnostic result, read from the log of `dcgmi diag -r <level> -j`.

The writer is NVIDIA/DCGM `dcgmi/Diag.cpp` (tag v4.6.0), its key names `nvvs/include/NvvsJsonStrings.h`,
its contract `testing/python3/dcgm_diag_schema.json`. A DCGM 4.x document is one JSON object:

    {"DCGM Diagnostic": {"test_categories": [{"category": "Deployment",
                                              "tests": [{"name": "software",
                                                         "results": [{"entity_group": "GPU", "entity_id": 0,
                                                                      "status": "Fail",
                                                                      "warnings": [{"warning": ..., "error_id": 29,
                                                                                    "error_category": 8,
                                                                                    "error_severity": 5}]}],
                                                         "test_summary": {"status": "Fail", ...}}]}]},
     "entity_groups": [...], "metadata": {"version": "4.6.0", "Driver Version Detected": "580.82.09"}}

What Diag.cpp decides, and so what this module reads:

- A status is `Pass`, `Fail` or `Skip` (`HelperDisplayDiagResult`). A warning is written as `Fail`
  in JSON (only the table output says `Warn`); its `error_severity` (`dcgmErrorSeverity_t`,
  `dcgmlib/dcgm_errors.h`) tells the two apart, and dcgmi's exit code is 226 for both. A result that
  did not run is left out (`HelperJsonAddResult`: "Don't record an entry for tests that weren't run").
- A failure is a result whose status is `Fail`: its `warnings` are DCGM's messages, one failure each;
  a `Fail` without a warning still fails, and says that DCGM gave no message.
- `test_summary` carries the test's own status. From DCGM 4.5 it repeats every warning of the test
  (`includeAllErrors`); before, only those tied to no entity. So a summary warning that no entity's
  result carries is a failure of the test as a whole (no entity), and one that an entity's result
  carries is that entity's, already counted. A summary `Fail` with no failure found otherwise still
  fails the test.
- `{"DCGM Diagnostic": {"runtime_error": ..., "version": ...}}` is a run that could not start or
  complete (`HelperDisplayFailureMessage`): nothing was tested.
- DCGM 3.x named the document `"DCGM GPU Diagnostic"` (NvvsJsonStrings.h to v3.3.9; renamed in v4.0.0),
  with one test per deployment check and per-GPU `gpu_ids`. The product runs DCGM 4.5.3 or later
  (NVIDIA security bulletin 5857), so a 3.x document means an image older than the floor ran. It is
  read as a run that could not be judged (`runtime_error`, naming the version to run) rather than as
  no document at all: a log with no document reads as a result not there yet, and the proof would
  wait for one that never comes; reading its tests would judge a node by a shape no test here holds.

The JSON is found in the log as DCGM's own test harness finds it (`testing/python3/DcgmiDiag.py`,
`trimJsonText`: from the first `{` to the last `}`), and failing that, from each line that opens an
object, so a banner or trailing lines around the document do not hide it. (`dcgmi diag -i N`, which
the product does not run, wraps each run's document in `iterations`; the first of them is read.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# The document's root key, DCGM 4.x and DCGM 3.x (NVVS_NAME in nvvs/include/NvvsJsonStrings.h).
DOCUMENT = "DCGM Diagnostic"
DCGM3_DOCUMENT = "DCGM GPU Diagnostic"
# The statuses Diag.cpp writes in JSON (HelperDisplayDiagResult); "Not Run" is its word for a test
# whose every result was left out, which this module reports as such.
DCGM_PASS, DCGM_FAIL, DCGM_SKIP, DCGM_NOT_RUN = "Pass", "Fail", "Skip", "Not Run"
# The DCGM releases the product runs: those that fix NVIDIA's bulletin 5857.
SUPPORTED = "DCGM 4.5.3 or later (NVIDIA security bulletin 5857)"
NO_MESSAGE = "DCGM reported Fail and gave no message"


@dataclass(frozen=True)
class DcgmFailure:
    """One failed check of one test: on an entity (`GPU 0`), or on the test as a whole."""

    test: str
    entity: str | None
    message: str
    error_id: int | None  # DCGM_FR_* (dcgmlib/dcgm_errors.h), e.g. 29 DCGM_FR_PERSISTENCE_MODE
    severity: int | None  # dcgmErrorSeverity_t: 1 monitor, 2 isolate, 4 triage, 5 config, 6 reset

    def __str__(self) -> str:
        where = f"{self.test}, {self.entity}" if self.entity else self.test
        code = f" (DCGM error {self.error_id})" if self.error_id is not None else ""
        return f"{where}: {self.message}{code}"


@dataclass(frozen=True)
class DcgmDiagnostic:
    """What one `dcgmi diag -j` run reported."""

    version: str | None
    driver: str | None
    # (test, status) in the document's order; the status is the test summary's, as DCGM gives it.
    tests: tuple[tuple[str, str], ...]
    failures: tuple[DcgmFailure, ...]
    # DCGM's explanation of a run that did not happen (or could not be judged), else None.
    runtime_error: str | None = None

    @property
    def passed(self) -> bool:
        """No failure, no runtime error, and at least one test that passed: a run whose every test
        was skipped proved nothing."""
        return not self.problems

    @property
    def problems(self) -> tuple[str, ...]:
        """Why the run did not pass, one line each; empty when it passed."""
        if self.runtime_error is not None:
            return (f"DCGM gave no result to judge: {self.runtime_error}",)
        if self.failures:
            return tuple(str(failure) for failure in self.failures)
        if not any(status == DCGM_PASS for _, status in self.tests):
            ran = ", ".join(f"{test}: {status}" for test, status in self.tests) or "no test at all"
            return (f"DCGM passed no test ({ran})",)
        return ()


def read_diagnostic(log: str) -> DcgmDiagnostic | None:
    """The diagnostic in a pod's log, or None when the log holds no DCGM result document."""
    document = _find_document(log)
    if document is None:
        return None
    if DCGM3_DOCUMENT in document:
        return _dcgm3(document)
    return _dcgm4(document)


def _find_document(log: str) -> dict[str, Any] | None:
    for candidate in _json_objects(log):
        if DOCUMENT in candidate or DCGM3_DOCUMENT in candidate:
            return candidate
    return None


def _json_objects(log: str) -> Iterator[dict[str, Any]]:
    """The objects the log may hold: DCGM's own trim first, then each object that opens a line."""
    first, last = log.find("{"), log.rfind("}")
    if 0 <= first < last:
        try:
            whole = json.loads(log[first : last + 1])
        except ValueError:
            pass
        else:
            if isinstance(whole, dict):
                yield whole
    decoder = json.JSONDecoder()
    offset = 0
    for line in log.splitlines(keepends=True):
        start = offset + len(line) - len(line.lstrip())
        offset += len(line)
        if log.startswith("{", start):
            try:
                found, _ = decoder.raw_decode(log, start)
            except ValueError:
                continue
            if isinstance(found, dict):
                yield found


def _dcgm4(document: Mapping[str, Any]) -> DcgmDiagnostic:
    body = _mapping(document.get(DOCUMENT))
    metadata = _mapping(document.get("metadata"))
    version = _text(metadata.get("version")) or _text(body.get("version"))
    driver = _text(metadata.get("Driver Version Detected"))
    if "runtime_error" in body:
        message = (_text(body.get("runtime_error")) or "").strip() or "no explanation given"
        return DcgmDiagnostic(version, driver, tests=(), failures=(), runtime_error=message)
    tests: list[tuple[str, str]] = []
    failures: list[DcgmFailure] = []
    for test in _tests(body):
        name = _text(test.get("name")) or "unnamed test"
        results = [_mapping(r) for r in _sequence(test.get("results"))]
        summary = _mapping(test.get("test_summary"))
        tests.append((name, _status(summary, results)))
        failures += _test_failures(name, results, summary)
    return DcgmDiagnostic(version, driver, tuple(tests), tuple(failures))


def _tests(body: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for category in _sequence(body.get("test_categories")):
        for test in _sequence(_mapping(category).get("tests")):
            yield _mapping(test)


def _status(summary: Mapping[str, Any], results: Sequence[Mapping[str, Any]]) -> str:
    """The summary's status; a test without one is judged by its results (worst first)."""
    if summary.get("status"):
        return str(summary["status"])
    statuses = {r.get("status") for r in results}
    return next((s for s in (DCGM_FAIL, DCGM_PASS, DCGM_SKIP) if s in statuses), DCGM_NOT_RUN)


def _test_failures(name: str, results: Sequence[Mapping[str, Any]], summary: Mapping[str, Any]) -> list[DcgmFailure]:
    found: list[DcgmFailure] = []
    for result in results:
        if result.get("status") == DCGM_FAIL:
            entity = _entity(result)
            warnings = [_mapping(w) for w in _sequence(result.get("warnings"))]
            found += [_failure(name, entity, w) for w in warnings] or [DcgmFailure(name, entity, NO_MESSAGE, None, None)]
    if summary.get("status") == DCGM_FAIL:
        # The warnings an entity's result carries; the summary repeats them from DCGM 4.5 on.
        attributed = {_key(_mapping(w)) for r in results for w in _sequence(r.get("warnings"))}
        whole = [_mapping(w) for w in _sequence(summary.get("warnings"))]
        found += [_failure(name, None, w) for w in whole if _key(w) not in attributed]
        if not found:
            found.append(DcgmFailure(name, None, NO_MESSAGE, None, None))
    return found


def _failure(test: str, entity: str | None, warning: Mapping[str, Any]) -> DcgmFailure:
    message = (_text(warning.get("warning")) or "").strip() or NO_MESSAGE
    return DcgmFailure(test, entity, message, _number(warning.get("error_id")), _number(warning.get("error_severity")))


def _key(warning: Mapping[str, Any]) -> tuple[str, int | None]:
    return ((_text(warning.get("warning")) or "").strip(), _number(warning.get("error_id")))


def _entity(result: Mapping[str, Any]) -> str | None:
    """`GPU 0`: the entity group's name (DcgmFieldsGetEntityGroupString, dcgmlib/src/dcgm_fields.cpp) and its id."""
    entity_id = _number(result.get("entity_id"))
    if entity_id is None:
        return None
    return f"{_text(result.get('entity_group')) or 'entity'} {entity_id}"


def _dcgm3(document: Mapping[str, Any]) -> DcgmDiagnostic:
    """A DCGM 3.x document: its version where it names one, and why it is not judged."""
    version = _text(document.get("version")) or _text(_mapping(document.get(DCGM3_DOCUMENT)).get("version"))
    driver = _text(document.get("Driver Version Detected"))
    written_by = f"DCGM {version}" if version else "an older DCGM"
    explanation = (
        f"{written_by} wrote its result in the DCGM 3.x format (root {DCGM3_DOCUMENT!r}), "
        f"which gpu-nodes does not read: run {SUPPORTED}"
    )
    return DcgmDiagnostic(version, driver, tests=(), failures=(), runtime_error=explanation)


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _sequence(value: object) -> Sequence[Any]:
    return value if isinstance(value, list) else []


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _number(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
