"""The plugin's provider: a program's mistakes refused before anything is registered, each by its
property path; a program's inputs building what the Python API builds."""

from __future__ import annotations

import json
import logging
from enum import Enum

import pulumi
import pytest
from pulumi.errors import InputPropertiesError
from pulumi.provider.experimental.analyzer import Analyzer

from gpu_nodes import GpuFleet as PythonGpuFleet
from gpu_nodes import GpuFleetArgs
from gpu_nodes.package.components import GpuFleet, GpuNodeGroup, problem_details, reading
from gpu_nodes.package.provider import PACKAGE, GpuNodesProvider, refuse_mistakes
from tests.factories import SSH_KEY, group
from tests.pulumi_mocks import run_inline

FLEET = "gpu-nodes:index:GpuFleet"
GROUP = "gpu-nodes:index:GpuNodeGroup"


def inputs(*groups: dict, **more: object) -> dict:
    """A fleet's inputs as a program sends them: schema names, numbers as floats."""
    return {"nodeGroups": list(groups) or [group("a100")], "sshPrivateKey": pulumi.Output.secret(SSH_KEY), **more}


def refused(values: dict) -> list[tuple[str, str]]:
    with pytest.raises(InputPropertiesError) as raised:
        refuse_mistakes(FLEET, values)
    return [(d["property_path"], d["reason"]) for d in raised.value.errors or []]


@pytest.mark.parametrize(
    ("values", "path", "reason"),
    [
        (inputs(group("a100", gpusPerNode=0)), "nodeGroups[0].gpusPerNode", "got 0; expected at least 1"),
        (inputs(group("a100", isolation="tight")), "nodeGroups[0].isolation", "got 'tight'; expected one of default, strict"),
        (inputs(group("A100")), "nodeGroups[0].name", "got 'A100'"),
        (inputs(runtimeClass="No Such"), "runtimeClass", "got 'No Such'"),
        (inputs(handOver=["nowhere"]), "handOver[0]", "got 'nowhere'"),
        (inputs(group("a100", devicePlugin={"migStrategy": "some"})), "nodeGroups[0].devicePlugin.migStrategy", "got 'some'"),
        (inputs(group("a100", colour="red")), "nodeGroups[0].colour", "unknown key"),
        (inputs(gpuNodes=1), "gpuNodes", "unknown input"),
        ({"nodeGroups": [group("a100")]}, "sshPrivateKey", "not set; a group runs preflight"),
    ],
    ids=lambda v: v if isinstance(v, str) and "." in v or v in ("runtimeClass", "gpuNodes", "sshPrivateKey") else "",
)
def test_a_mistake_is_refused_by_the_property_path_the_program_wrote(values, path, reason):
    found = refused(values)
    assert any(p == path and reason in r for p, r in found), f"{path}: expected {reason!r}, found {found}"


def test_every_mistake_is_refused_at_once():
    found = refused(inputs(group("a100", gpusPerNode=0), group("l4", isolation="tight"), runtimeClass="No Such"))
    paths = [p for p, _ in found]
    assert {"nodeGroups[0].gpusPerNode", "nodeGroups[1].isolation", "runtimeClass"} <= set(paths), found


def test_the_message_names_only_the_mistakes_without_a_property_path():
    """The engine lists the others under it, by property (see provider.py)."""
    with pytest.raises(InputPropertiesError) as raised:
        refuse_mistakes(FLEET, {"nodeGroups": [group("a100", gpusPerNode=0)]})
    message = str(raised.value)
    assert message.startswith("invalid inputs of gpu-nodes:index:GpuFleet"), message
    assert "gpusPerNode" not in message, f"a property's problem in the message too: {message}"


def test_a_secret_given_as_text_is_named_by_its_length_never_its_text():
    found = refused(inputs(sshPrivateKey="not a key"))
    assert any(path == "sshPrivateKey" and "9 characters" in reason for path, reason in found), found
    assert "not a key" not in repr(found), f"the key's text shown: {found}"


def test_whole_numbers_sent_as_floats_are_counts():
    refuse_mistakes(FLEET, inputs(group("a100", gpusPerNode=4.0, verification={"gpusPerPod": [1.0, 2.0]})))


def test_valid_inputs_pass():
    refuse_mistakes(FLEET, inputs(group("a100"), group("l4")))


@pytest.mark.parametrize(
    ("problem", "path", "reason"),
    [
        ("nodeGroups[0].gpusPerNode: got 0; expected ≥ 1", "nodeGroups[0].gpusPerNode", "got 0; expected ≥ 1"),
        ("runtimeClass: got 'x y'; expected a name", "runtimeClass", "got 'x y'; expected a name"),
        ("two groups share a name: a100", "", "two groups share a name: a100"),
    ],
)
def test_a_readers_problem_names_its_property_path(problem, path, reason):
    """The reader names each problem as the program wrote its inputs (`PACKAGE_INPUTS`): its path is the property's."""
    assert problem_details(problem) == {"property_path": path, "reason": reason}, problem


def test_a_programs_inputs_build_what_the_python_api_builds():
    """The same children, names and inputs: a YAML or TypeScript program gets the Python program's fleet."""
    groups = [group("a100", preflight={"enabled": False}), group("l4", preflight={"enabled": False})]

    from_python = run_inline(lambda: PythonGpuFleet("gpus", GpuFleetArgs(node_groups=groups)))
    # As the SDK's provider maps them: the fleet's keys by GpuFleetInputs, the rest as the program wrote them.
    from_package = run_inline(lambda: GpuFleet("gpus", {"node_groups": groups}))

    def registered(run):
        return {r.urn: r.inputs for r in run.resources}

    assert registered(from_package) == registered(from_python), "the package's fleet differs from the Python API's"


def as_the_sdk_maps_them(component: type, values: dict) -> dict:
    """A program's inputs as the SDK's component provider hands them to the component: Python names,
    a value of an enum type a member of inputs.py's enum (component.py, map_inputs)."""
    provider = GpuNodesProvider()
    definitions = Analyzer(PACKAGE).analyze([GpuFleet, GpuNodeGroup])["component_definitions"]
    return provider.map_inputs(values, definitions[component.__name__])


def test_words_of_enums_build_what_the_python_apis_words_build():
    """The provider hands `isolation: strict` over as `Isolation.STRICT`, a toleration's operator as
    a member too: the fleet registers what the Python API's registers from the words."""
    raw = group(
        "a100",
        isolation="strict",
        preflight={"enabled": False, "containerRuntime": "cri-o"},
        devicePlugin={
            "migStrategy": "single",
            "imagePullPolicy": "IfNotPresent",
            "maxUnavailable": "25%",
            "tolerations": [{"key": "example.com/dedicated", "operator": "Exists", "effect": "NoSchedule"}],
            "resources": {"requests": {"cpu": "50m"}},
        },
    )
    mapped = as_the_sdk_maps_them(GpuFleet, {"nodeGroups": [raw]})
    (mapped_group,) = mapped["node_groups"]
    assert isinstance(mapped_group["isolation"], Enum), "the SDK no longer hands a member over: simplify as_written"
    assert isinstance(mapped_group["devicePlugin"]["tolerations"][0]["operator"], Enum), mapped_group["devicePlugin"]

    from_python = run_inline(lambda: PythonGpuFleet("gpus", GpuFleetArgs(node_groups=[raw])))
    from_package = run_inline(lambda: GpuFleet("gpus", mapped))

    def registered(run):
        return {r.urn: json.dumps(r.inputs, sort_keys=True, default=repr) for r in run.resources}

    assert registered(from_package) == registered(from_python), "the package's fleet differs from the Python API's"


def test_a_groups_words_of_enums_build_what_the_words_build(caplog):
    """And its messages say the word (`'cri-o'`), not the member (`<ContainerRuntime.CRI_O: 'cri-o'>`)."""
    raw = group("a100", isolation="strict", allocator="devicePlugin", preflight={"enabled": False, "containerRuntime": "cri-o"})
    mapped = as_the_sdk_maps_them(GpuNodeGroup, raw)
    assert isinstance(mapped["preflight"]["containerRuntime"], Enum), mapped

    def objects(run):
        return sorted(json.dumps(r.inputs, sort_keys=True, default=repr) for r in run.resources)

    from_words = objects(run_inline(lambda: GpuNodeGroup("gpus", raw)))
    with caplog.at_level(logging.WARNING):
        from_members = objects(run_inline(lambda: GpuNodeGroup("gpus", mapped)))
    assert from_members == from_words, "a group built from members differs from one built from the words"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(w.startswith("preflight.containerRuntime: 'cri-o' has no effect") for w in warnings), warnings


def refused_group(values: dict) -> list[tuple[str, str]]:
    with pytest.raises(InputPropertiesError) as raised:
        refuse_mistakes(GROUP, values)
    assert str(raised.value).startswith("invalid inputs of gpu-nodes:index:GpuNodeGroup"), str(raised.value)
    return [(d["property_path"], d["reason"]) for d in raised.value.errors or []]


@pytest.mark.parametrize(
    ("changes", "path", "reason"),
    [
        ({"gpusPerNode": 0}, "gpusPerNode", "got 0"),
        ({"devicePlugin": {"migStrategy": "some"}}, "devicePlugin.migStrategy", "got 'some'"),
        ({"nodes": []}, "nodes", "got []"),
        ({"runtimeClass": "No Such"}, "runtimeClass", "got 'No Such'"),
        ({"nodeGroups": []}, "nodeGroups", "unknown input"),
    ],
    ids=["gpusPerNode", "devicePlugin.migStrategy", "nodes", "runtimeClass", "nodeGroups"],
)
def test_a_groups_mistake_is_refused_by_its_own_property_path(changes, path, reason):
    found = refused_group({**group("a100"), "sshPrivateKey": pulumi.Output.secret(SSH_KEY), **changes})
    assert any(p == path and reason in r for p, r in found), f"{path}: expected {reason!r}, found {found}"


def test_a_groups_valid_inputs_pass():
    refuse_mistakes(GROUP, {**group("a100"), "sshPrivateKey": pulumi.Output.secret(SSH_KEY)})


def test_a_group_on_its_own_builds_what_a_fleet_of_that_group_builds():
    """The same objects with the same inputs, the group's own children named `<name>-...` under it."""
    one = group("a100", preflight={"enabled": False})
    from_fleet = run_inline(lambda: GpuFleet("gpus", {"node_groups": [one]}))
    alone = run_inline(lambda: GpuNodeGroup("gpus", one))

    def objects(run):
        return sorted((r.type, json.dumps(r.inputs, sort_keys=True, default=str)) for r in run.resources if r.type != FLEET)

    assert objects(alone) == objects(from_fleet), "a group on its own differs from a fleet of that group"
    (component,) = [r for r in alone.resources if r.type == GROUP and not r.parent.count(GROUP)]
    names = [r.name for r in alone.resources if r.parent == component.urn]
    assert names and all(n.startswith("gpus-") for n in names), f"{component.urn}: children {names}"


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (lambda raw: GpuFleet("gpus", {"node_groups": [raw]}), "nodeGroups[0].preflight.minDriver: '550' has no effect"),
        (lambda raw: GpuNodeGroup("gpus", raw), "preflight.minDriver: '550' has no effect"),
    ],
    ids=["GpuFleet", "GpuNodeGroup"],
)
def test_a_setting_with_no_effect_is_warned_about_by_its_property_path(caplog, build, expected):
    raw = group("a100", preflight={"enabled": False, "minDriver": "550"})
    with caplog.at_level(logging.WARNING):
        run_inline(lambda: build(raw))
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(w.startswith(expected) for w in warnings), warnings


def program_error(program) -> BaseException | None:
    """What running `program` under mocks raised, if anything; asyncio kept quiet about the outputs a
    failed registration leaves unread, as Pulumi's language host keeps it (tests/resources/test_outputs.py)."""
    try:
        run_inline(program)
    except Exception as error:  # noqa: BLE001 -- the test reads it
        return error
    finally:
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    return None


def fleet_of(raw: dict) -> GpuFleet:
    """The package's fleet of one group, its inputs as the SDK's provider maps them."""
    return GpuFleet("gpus", {"node_groups": [raw], "ssh_private_key": pulumi.Output.secret(SSH_KEY)})


def two_nodes(address: object) -> dict:
    """A group whose second machine's address another resource gives (as a program sends it: an Output)."""
    raw = group("a100")
    raw["nodes"][1]["sshHost"] = address
    return raw


@pytest.mark.parametrize(
    ("build", "path"),
    [
        (lambda raw: fleet_of(raw), "nodeGroups[0]."),
        (lambda raw: GpuNodeGroup("gpus", {**raw, "ssh_private_key": pulumi.Output.secret(SSH_KEY)}), ""),
    ],
    ids=["GpuFleet", "GpuNodeGroup"],
)
def test_a_wrong_value_known_only_when_it_resolves_is_refused_by_its_property_path(build, path):
    """As a wrong value known up front is (refuse_mistakes): the engine lists it under the component's error."""
    error = program_error(lambda: build(two_nodes(pulumi.Output.from_input("gpu-a-02:22"))))
    assert isinstance(error, InputPropertiesError), f"expected an InputPropertiesError, got {error!r}"
    reason = "got 'gpu-a-02:22'; expected a host name or an IP address, without a port (that is sshPort) or a user"
    assert error.errors == [{"property_path": f"{path}nodes[1].sshHost", "reason": reason}], error.errors
    up_front = refused(inputs(two_nodes("gpu-a-02:22")))
    assert up_front == [("nodeGroups[0].nodes[1].sshHost", reason)], up_front


def test_a_port_from_another_resource_sent_as_a_float_is_a_port():
    """Numbers reach the provider as floats, an Output's too."""
    raw = group("a100")
    raw["nodes"][1]["sshPort"] = pulumi.Output.from_input(2222.0)
    assert program_error(lambda: fleet_of(raw)) is None


def test_an_output_where_a_name_belongs_is_refused_by_its_property_path_saying_why():
    found: list = []

    def program() -> None:
        raw = group("a100")
        raw["nodes"][0]["name"] = pulumi.Output.from_input("a100-node-1")
        found.extend(refused(inputs(raw)))

    run_inline(program)
    assert ("nodeGroups[0].nodes[0].name", NAME_FROM_A_RESOURCE) in found, found


NAME_FROM_A_RESOURCE = (
    "got another resource's output; expected a string given as it is: it names resources, and names of resources must "
    "be known when the program runs"
)


def test_the_component_is_built_from_the_arguments_the_provider_read(monkeypatch):
    """Read once: `construct` reads the inputs (to refuse a mistake before anything registers), and the component
    takes those arguments rather than reading its inputs again."""
    reads: list[GpuFleetArgs] = []
    read_once = GpuFleetArgs._read_once

    def counted(self):
        reads.append(self)
        return read_once(self)

    monkeypatch.setattr(GpuFleetArgs, "_read_once", counted)
    inputs = {"nodeGroups": [group("a100", preflight={"enabled": False})]}
    arguments = refuse_mistakes("gpu-nodes:index:GpuFleet", inputs)
    run_inline(lambda: _built_while_reading(arguments, inputs))
    assert reads == [arguments], f"read {len(reads)} times"


def _built_while_reading(arguments: GpuFleetArgs, inputs: dict) -> GpuFleet:
    with reading(arguments):
        return GpuFleet("gpus", as_the_sdk_maps_them(GpuFleet, inputs))
