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
            "mounts": mounts,
            "sharedOptions": draw(options),
            "sharedEncryptOptions": draw(encrypt_options()),
            "accessModes": draw(
                st.lists(st.sampled_from(["ReadOnlyMany", "ReadWriteMany"]), min_size=1, unique=True)
            ),
        },
    }


@st.composite
def levels(draw: st.DrawFn) -> list[dict[str, Any]]:
    # hostPath levels get distinct paths: two levels on one path are refused (tested elsewhere).
    host_paths = iter(draw(st.lists(_dns_label(20), max_size=4, unique=True)))
    out = []
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["processMemory", "emptyDir", "hostPath"]))
        path = next(host_paths, None)
        if kind == "hostPath" and path is not None:
            medium: dict[str, Any] = {"hostPath": {"path": f"/mnt/{path}"}}
        elif kind == "emptyDir":
            medium = {"emptyDir": {"medium": draw(st.sampled_from(["", "Memory"]))}}
        else:
            medium = {"processMemory": {}}
        out.append({"medium": medium, "quota": draw(st.sampled_from([None, "1Gi", "512Mi"]))})
    return out


@st.composite
def component_specs(draw: st.DrawFn, caching: bool) -> dict[str, Any]:
    env_names = draw(
        st.lists(st.text("ABCFLUID_", min_size=1, max_size=8), max_size=3, unique=True).map(
            lambda ns: [n for n in ns if not n.startswith("FLUID_")]
        )
    )
    spec: dict[str, Any] = {
        "replicas": draw(st.integers(0, 5)),
        "options": draw(options),
        "env": [{"name": n, "value": draw(text)} for n in env_names],
        "image": draw(st.sampled_from([None, "own:1"])),
    }
    if caching:
        spec["tieredStore"] = {"levels": draw(levels())}
    return spec


@st.composite
def templates(draw: st.DrawFn, need_port: bool) -> dict[str, Any]:
    numbers = draw(st.lists(st.integers(1, 65535), min_size=1 if need_port else 0, max_size=3, unique=True))
    port_names = draw(
        st.lists(st.text("abcdefgh", min_size=1, max_size=8), min_size=3, max_size=3, unique=True)
    )
    ports = [
        {"containerPort": n, **({"name": port_names[i]} if draw(st.booleans()) else {})}
        for i, n in enumerate(numbers)
    ]
    return {"image": "class:1", "options": draw(options), "ports": ports}


@st.composite
def inputs(draw: st.DrawFn) -> tuple[Dataset, CacheRuntime, CacheRuntimeClass, str]:
    name = draw(_dns_label(names.MAX_DATASET_NAME_LENGTH))
    namespace = draw(_dns_label(names.DNS_LABEL_MAX))
    fuse = draw(st.booleans())
    topology = {
        "master": draw(templates(need_port=fuse)),
        "worker": draw(templates(need_port=False)),
        **({"client": draw(templates(need_port=False))} if fuse else {}),
    }
    spec: dict[str, Any] = {"runtimeClassName": "c", "options": draw(options)}
    for component in ("master", "worker", "client"):
        if draw(st.booleans()):
            spec[component] = draw(component_specs(caching=component != "master"))
    if not fuse:
        spec.setdefault("client", {})["disabled"] = True
    elif "worker" in spec:
        spec["worker"]["disabled"] = draw(st.booleans())
    file_system_type = draw(_dns_label(names.DNS_LABEL_MAX).map(str.title))
    return (
        Dataset.model_validate(draw(datasets(name, namespace))),
        CacheRuntime.model_validate(
            {"metadata": {"name": name, "namespace": namespace, "uid": "u-1"}, "spec": spec}
        ),
        CacheRuntimeClass.model_validate(
            {"metadata": {"name": "c"}, "fileSystemType": file_system_type, "topology": topology}
        ),
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
    (container,) = pod["containers"]
    paths = [m["mountPath"] for m in container["volumeMounts"]]
    assert len(paths) == len(set(paths))
    assert {m["name"] for m in container["volumeMounts"]} == set(volumes)
    env = [e["name"] for e in container["env"]]
    assert len(env) == len(set(env))


def _check(children: Children) -> None:
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
