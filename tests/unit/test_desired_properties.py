"""Property: for any valid Dataset/CacheRuntime/CacheRuntimeClass, desired_children builds objects
the API server can take: names within their limits, valid label values and volume names, unique
volumes and mount paths, and the same bytes twice.

Names cannot overflow: a Dataset name has at most 42 characters, so every namespaced name (at most
``fluid-runtime-config-`` + 42 = 63) fits a DNS label, and the PV name ``{namespace}-{name}`` (at most
106) fits the 253 of a DNS subdomain; label values that combine namespace and name are shortened by
``names.fit_63``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.desired import Children, desired_children
from kubectl_fluid.api import names
from kubectl_fluid.api.cacheruntime import CacheRuntime
from kubectl_fluid.api.cacheruntimeclass import CacheRuntimeClass
from kubectl_fluid.api.dataset import Dataset
from kubectl_fluid.api.quantity import canonical_quantity

DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS_1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?")


ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"


def _dns_label(max_size: int) -> st.SearchStrategy[str]:
    # Built from parts: from_regex is slow to shrink and rarely reaches the length limits.
    edge = st.sampled_from(ALNUM)
    middle = st.text(ALNUM + "-", max_size=max_size - 2)
    return st.one_of(
        edge,
        st.tuples(edge, middle, edge).map("".join),
        st.tuples(edge, st.text(ALNUM + "-", min_size=max_size - 2, max_size=max_size - 2), edge).map(
            "".join
        ),
    )


# Any text but NUL, which no shell variable can carry (runtime.sh refuses it), and lone surrogates,
# which are not text (JSON and the API server refuse them).
characters = st.characters(codec="utf-8", exclude_characters="\x00")
text = st.text(characters, max_size=12)
nonempty_text = st.text(characters, min_size=1, max_size=12)
options = st.dictionaries(text, text, max_size=3)
secret_names = st.lists(_dns_label(30), min_size=1, max_size=3).map(".".join)
secret_keys = st.text(ALNUM + "-._ABC", min_size=1, max_size=20).filter(lambda k: k not in (".", ".."))


@st.composite
def encrypt_options(draw: st.DrawFn) -> list[dict[str, Any]]:
    return [
        {
            "name": draw(nonempty_text),
            "valueFrom": {"secretKeyRef": {"name": draw(secret_names), "key": draw(secret_keys)}},
        }
        for _ in range(draw(st.integers(0, 3)))
    ]


@st.composite
def datasets(draw: st.DrawFn, name: str, namespace: str) -> dict[str, Any]:
    mounts = [
        {
            "name": draw(text),
            "mountPoint": draw(st.text(characters, min_size=5, max_size=20)),
            "options": draw(options),
            "encryptOptions": draw(encrypt_options()),
            "readOnly": draw(st.booleans()),
        }
        for _ in range(draw(st.integers(0, 3)))
    ]
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            **({"mounts": mounts} if mounts else {}),
            "sharedOptions": draw(options),
            "sharedEncryptOptions": draw(encrypt_options()),
            "accessModes": draw(
                st.lists(st.sampled_from(["ReadOnlyMany", "ReadWriteMany"]), min_size=1, unique=True)
            ),
            "placement": draw(st.sampled_from(["", "Exclusive", "Shared"])),
            "tolerations": draw(st.lists(st.just({"key": "d", "operator": "Exists"}), max_size=1)),
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "z", "operator": "In", "values": ["a"]}]}
                    ]
                    * draw(st.integers(0, 2))
                }
            },
        },
    }


@st.composite
def levels(draw: st.DrawFn) -> list[dict[str, Any]]:
    quota = st.sampled_from(["1Gi", "512Mi", "1024Mi", "0.5Gi", 2000000000])
    out: list[dict[str, Any]] = []
    memory_used = False
    for _ in range(draw(st.integers(0, 4))):
        kinds = ["emptyDir", "hostPath", "none"] + ([] if memory_used else ["processMemory"])
        kind = draw(st.sampled_from(kinds))
        level: dict[str, Any] = {}
        if kind == "processMemory":
            memory_used = True
            level["processMemory"] = {"quota": draw(quota)}
        elif kind == "emptyDir":
            level["emptyDir"] = {"quota": draw(quota), "medium": draw(st.sampled_from(["", "Memory"]))}
        elif kind == "hostPath":
            paths = draw(st.lists(_dns_label(20), min_size=1, max_size=3, unique=True))
            level["hostPath"] = {
                "paths": [f"/mnt/{p}" for p in paths],
                "quotas": [draw(quota) for _ in paths],
            }
        for mark in ("high", "low"):
            if draw(st.booleans()):
                level[mark] = draw(st.sampled_from(["0.9", "0.5"]))
        out.append(level)
    return out


@st.composite
def component_specs(draw: st.DrawFn, component: str, volumes: list[str]) -> dict[str, Any]:
    env_names = draw(st.lists(st.sampled_from(["A", "B", "FLUID_DATASET_NAME", "POD_NAME"]), max_size=3))
    spec: dict[str, Any] = {
        "options": draw(options),
        "env": [{"name": n, "value": draw(text)} for n in env_names],
        "nodeSelector": draw(st.dictionaries(st.sampled_from(["disk", "zone"]), st.sampled_from(["a", "b"]))),
        "tolerations": draw(st.lists(st.just({"key": "k", "operator": "Exists"}), max_size=2)),
        "podMetadata": {
            "labels": draw(st.dictionaries(st.sampled_from(["l1", "l2"]), st.sampled_from(["v"])))
        },
        "volumeMounts": [
            {"name": v, "mountPath": f"/data/{v}"}
            for v in draw(st.lists(st.sampled_from(volumes), unique=True))
        ]
        if volumes
        else [],
    }
    if draw(st.booleans()):
        spec["runtimeVersion"] = {"image": "own", "imageTag": draw(st.sampled_from(["1", ""]))}
    if draw(st.booleans()):
        spec["args"] = ["--own"]
    if draw(st.booleans()):
        spec["resources"] = {"limits": {"memory": draw(st.sampled_from(["1Gi", "0", 3000000000]))}}
    if component != "master":
        spec["tieredStore"] = {"levels": draw(levels())}
    if component != "client":
        spec["replicas"] = draw(st.integers(0, 5))
    return spec


@st.composite
def definitions(draw: st.DrawFn, component: str, need_port: bool, extra: list[str]) -> dict[str, Any]:
    numbers = draw(st.lists(st.integers(1, 65535), min_size=1 if need_port else 0, max_size=3, unique=True))
    main: dict[str, Any] = {
        "name": component,
        "image": "class:1",
        "ports": [{"containerPort": n} for n in numbers],
    }
    if draw(st.booleans()):
        main["env"] = [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]
    if draw(st.booleans()):
        main["resources"] = {"requests": {"memory": "1Gi"}, "limits": {"memory": 4000000000}}
    spec: dict[str, Any] = {
        "containers": [main],
        "volumes": [{"name": "conf", "emptyDir": {}}],
    }
    if draw(st.booleans()):
        spec["initContainers"] = [{"name": "init", "image": "init:1", "env": [{"name": "OWN", "value": "1"}]}]
    definition: dict[str, Any] = {"options": draw(options), "template": {"spec": spec}}
    if need_port or draw(st.booleans()):
        definition["service"] = {"headless": {}}
    dependencies: dict[str, Any] = {}
    if draw(st.booleans()):
        dependencies["secretMount"] = {"enabled": draw(st.booleans())}
    mounted = draw(st.lists(st.sampled_from(extra), unique=True)) if extra else []
    if mounted:
        dependencies["extraResources"] = {
            "configMaps": [{"name": name, "mountPath": f"/extra/{i}"} for i, name in enumerate(mounted)]
        }
    if dependencies:
        definition["dependencies"] = dependencies
    return definition


@st.composite
def inputs(draw: st.DrawFn) -> tuple[Dataset, CacheRuntime, CacheRuntimeClass, str]:
    name = draw(_dns_label(names.MAX_DATASET_NAME_LENGTH).filter(lambda n: n[0].isalpha()))
    namespace = draw(_dns_label(names.DNS_LABEL_MAX))
    fuse = draw(st.booleans())
    extra = draw(st.lists(_dns_label(30), max_size=2, unique=True))
    volumes = draw(st.lists(st.sampled_from(["v1", "v2", "v3"]), unique=True))
    topology: dict[str, Any] = {"master": draw(definitions("master", need_port=fuse, extra=extra))}
    if fuse or draw(st.booleans()):
        topology["worker"] = draw(definitions("worker", need_port=False, extra=extra))
    if fuse:
        topology["client"] = draw(definitions("client", need_port=False, extra=extra))
    spec: dict[str, Any] = {
        "runtimeClassName": "c",
        "options": draw(options),
        "volumes": [{"name": v, "emptyDir": {}} for v in volumes],
    }
    for component in names.COMPONENTS:
        if draw(st.booleans()):
            spec[component] = draw(component_specs(component, volumes))
    if fuse and "worker" in spec:
        spec["worker"]["disabled"] = draw(st.booleans())
    file_system_type = draw(_dns_label(names.DNS_LABEL_MAX).map(str.title))
    runtime_class = {
        "metadata": {"name": "c"},
        "fileSystemType": file_system_type,
        "topology": topology,
        "extraResources": {"configMaps": [{"name": e, "data": {"k": "v"}} for e in extra]},
    }
    return (
        Dataset.model_validate(draw(datasets(name, namespace))),
        CacheRuntime.model_validate(
            {"metadata": {"name": name, "namespace": namespace, "uid": "u-1"}, "spec": spec}
        ),
        CacheRuntimeClass.model_validate(runtime_class),
        namespace,
    )


def _check_labels(labels: dict[str, str]) -> None:
    for key, value in labels.items():
        assert len(key.rpartition("/")[2]) <= names.DNS_LABEL_MAX, key
        assert len(value) <= names.DNS_LABEL_MAX, value
        assert LABEL_VALUE.fullmatch(value), value


def _check_pod(pod: dict[str, Any]) -> None:
    volumes = [v["name"] for v in pod["volumes"]]
    assert len(volumes) == len(set(volumes))
    for volume in volumes:
        assert len(volume) <= names.DNS_LABEL_MAX
        assert DNS_LABEL.fullmatch(volume), volume
    for group in ("containers", "initContainers"):
        for container in pod.get(group) or []:
            paths = [m["mountPath"] for m in container.get("volumeMounts") or []]
            assert len(paths) == len(set(paths))
            assert {m["name"] for m in container.get("volumeMounts") or []} <= set(volumes)
            env = [e["name"] for e in container.get("env") or []]
            assert len(env) == len(set(env))
    main = pod["containers"][0]
    assert [e["name"] for e in main["env"][:3]] == [
        names.ENV_DATASET_NAME,
        names.ENV_DATASET_NAMESPACE,
        names.ENV_RUNTIME_CONFIG_PATH,
    ]
    for entry in main.get("resources", {}).values():
        for value in entry.values():
            assert value == canonical_quantity(value)  # what the API server stores


def _check_agrees_with_runtime_json(children: Children) -> None:
    """runtime.json and the objects describe the same components, Services and tier paths."""
    config = json.loads(children.configmap["data"]["runtime.json"])
    workloads = {w["metadata"]["name"]: w for w in [*children.statefulsets, children.daemonset] if w}
    services = {s["metadata"]["name"] for s in children.services}
    for component in names.COMPONENTS:
        entry = config.get(component)
        name = f"{children.scope.name}-{component}"
        assert (entry is not None) == (name in workloads), component
        if entry is None:
            continue
        assert (entry["service"]["name"] in services) == bool(entry["service"]["name"])
        if component != "client":
            # runtime.json leaves a zero out, as upstream's omitempty does.
            assert entry.get("replicas", 0) == workloads[name]["spec"]["replicas"]
        main = workloads[name]["spec"]["template"]["spec"]["containers"][0]
        mounted = {m["mountPath"] for m in main["volumeMounts"]}
        for level in entry.get("tieredStoreLevels") or []:
            if level.get("quotas"):
                assert set(level["mountPaths"]) <= mounted


def _check(children: Children) -> None:
    _check_agrees_with_runtime_json(children)
    for obj in children.namespaced():
        name = obj["metadata"]["name"]
        assert len(name) <= names.DNS_LABEL_MAX, name
        assert DNS_LABEL.fullmatch(name), name
        _check_labels(obj["metadata"]["labels"])
        if obj["kind"] == "Service":
            assert DNS_1035_LABEL.fullmatch(name), name
        if obj["kind"] in ("StatefulSet", "DaemonSet"):
            _check_labels(obj["spec"]["template"]["metadata"]["labels"])
            _check_pod(obj["spec"]["template"]["spec"])
    pv_name = children.pv["metadata"]["name"]
    assert len(pv_name) <= names.DNS_SUBDOMAIN_MAX
    assert DNS_SUBDOMAIN.fullmatch(pv_name), pv_name
    _check_labels(children.pv["metadata"]["labels"])


@settings(max_examples=200, deadline=None)
@given(inputs())
def test_valid_inputs_always_build_valid_children(
    args: tuple[Dataset, CacheRuntime, CacheRuntimeClass, str],
) -> None:
    children = desired_children(*args)
    _check(children)
    assert (children.daemonset is None) == ("clientless" in children.pv["spec"]["csi"]["volumeAttributes"])
    again = desired_children(*args)
    assert json.dumps([*again.namespaced(), again.pv], sort_keys=True) == json.dumps(
        [*children.namespaced(), children.pv], sort_keys=True
    )
