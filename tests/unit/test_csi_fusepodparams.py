"""The FUSE pod's resources and priority from StorageClass parameters (csi/model/fusepodparams.py):
validated and canonical, part of the mount key only when given, merged over the node's defaults
with the StorageClass winning, and into the pod csi/fuse/fusepod.py builds."""

from __future__ import annotations

import re

import kr8s.asyncio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from csi.fuse.fusepod import fuse_pod
from csi.model.errors import InvalidParameter
from csi.model.fusepodparams import (
    POD_PARAMS,
    RESOURCE_PARAMS,
    pod_resources,
    priority_class,
)
from csi.model.mountkey import mount_key
from csi.model.params import parse_params
from kubectl_fluid.api import names

BASE = {names.PARAM_MASTER_ADDRS: "m:8995", names.PARAM_FS_PATH: "/data"}
DEFAULTS = {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "2Gi"}}


def test_pod_settings_are_kept_canonical_and_in_the_volume_context() -> None:
    params = parse_params(
        {**BASE, names.PARAM_FUSE_MEMORY_LIMIT: "1024Mi", names.PARAM_FUSE_CPU_REQUEST: "0.5",
         names.PARAM_FUSE_PRIORITY_CLASS: "fuse-critical"}
    )  # fmt: skip
    assert dict(params.pod) == {
        names.PARAM_FUSE_MEMORY_LIMIT: "1Gi",
        names.PARAM_FUSE_CPU_REQUEST: "500m",
        names.PARAM_FUSE_PRIORITY_CLASS: "fuse-critical",
    }
    assert params.fuse.pod == params.pod
    # The context round-trips: NodeStage reads back what CreateVolume wrote.
    assert parse_params(params.to_context()).pod == params.pod


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        (names.PARAM_FUSE_MEMORY_LIMIT, "lots", "is not a Kubernetes quantity"),
        (names.PARAM_FUSE_CPU_REQUEST, "0", "must be more than zero"),
        (names.PARAM_FUSE_CPU_LIMIT, "-1", "must be more than zero"),
        (names.PARAM_FUSE_PRIORITY_CLASS, "Not_A_Name", "is not a PriorityClass name"),
    ],
)
def test_a_bad_value_is_refused_naming_its_key(key: str, value: str, says: str) -> None:
    with pytest.raises(InvalidParameter, match=says) as refused:
        parse_params({**BASE, key: value})
    assert refused.value.key == key


def test_a_request_above_its_own_limit_is_refused() -> None:
    with pytest.raises(InvalidParameter, match="a request cannot exceed its limit"):
        parse_params({**BASE, names.PARAM_FUSE_MEMORY_REQUEST: "2Gi", names.PARAM_FUSE_MEMORY_LIMIT: "1Gi"})


def test_the_mount_key_changes_only_where_pod_settings_are_given() -> None:
    plain = parse_params(BASE)
    sized = parse_params({**BASE, names.PARAM_FUSE_MEMORY_LIMIT: "1Gi"})
    # The key a volume without them always had (a node upgraded under staged volumes finds them).
    assert mount_key(plain) == "3394782f8a06277a0a547722d3d19ac2"  # as computed before the pod settings
    assert mount_key(sized) != mount_key(plain)
    assert mount_key(sized) == mount_key(parse_params({**BASE, names.PARAM_FUSE_MEMORY_LIMIT: "1024Mi"}))


quantities = st.sampled_from(["50m", "100m", "1", "2", "64Mi", "256Mi", "1Gi", "4Gi"])


@given(
    st.dictionaries(st.sampled_from(list(RESOURCE_PARAMS)), quantities),
    st.booleans(),
)
def test_merged_resources_take_the_storageclass_and_never_put_a_request_above_a_limit(
    given_settings: dict[str, str], with_defaults: bool
) -> None:
    from csi.model.fusepodparams import _amount
    from kubectl_fluid.api.quantity import Quantity

    defaults = DEFAULTS if with_defaults else {}
    settings = tuple(sorted(given_settings.items()))
    merged = pod_resources(defaults, settings)
    for key, (section, resource) in RESOURCE_PARAMS.items():
        if key in given_settings:
            other = "limits" if section == "requests" else "requests"
            other_key = next(k for k, w in RESOURCE_PARAMS.items() if w == (other, resource))
            if other_key not in given_settings:  # only a clash with a default may move it
                assert merged[section][resource] == given_settings[key] or (
                    section == "limits" and merged[section][resource] == merged["requests"][resource]
                )
    for resource in ("cpu", "memory"):
        request = merged.get("requests", {}).get(resource)
        limit = merged.get("limits", {}).get(resource)
        if request and limit:
            assert _amount(Quantity.parse(request)) <= _amount(Quantity.parse(limit))


def test_the_pod_carries_resources_and_priority() -> None:
    settings = (
        (names.PARAM_FUSE_MEMORY_LIMIT, "64Mi"),
        (names.PARAM_FUSE_PRIORITY_CLASS, "fuse-critical"),
    )
    resources = pod_resources(DEFAULTS, settings)
    assert resources == {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"memory": "64Mi"}}
    pod = fuse_pod(
        "node-a", "k" * 32, ["/opt/curvine/curvine-fuse"], "/x/k/fuse-mount", "img",
        resources=resources, priority_class=priority_class("system-node-critical", settings),
    )  # fmt: skip
    assert pod["spec"]["priorityClassName"] == "fuse-critical"
    assert pod["spec"]["containers"][0]["resources"] == resources
    bare = fuse_pod("node-a", "k" * 32, ["/opt/curvine/curvine-fuse"], "/x/k/fuse-mount", "img")
    assert "priorityClassName" not in bare["spec"]
    assert "resources" not in bare["spec"]["containers"][0]
    assert priority_class("system-node-critical", ()) == "system-node-critical"


def test_every_pod_param_is_a_name_of_names() -> None:
    assert set(POD_PARAMS) == {
        names.PARAM_FUSE_CPU_REQUEST,
        names.PARAM_FUSE_CPU_LIMIT,
        names.PARAM_FUSE_MEMORY_REQUEST,
        names.PARAM_FUSE_MEMORY_LIMIT,
        names.PARAM_FUSE_PRIORITY_CLASS,
    }


def test_the_nodes_defaults_are_checked_and_canonical() -> None:
    from csi.model.fusepodparams import node_resources

    given = '{"requests": {"cpu": "0.1", "memory": "262144Ki"}, "limits": {"memory": "2048Mi"}}'
    assert node_resources(given) == {
        "requests": {"cpu": "100m", "memory": "256Mi"},
        "limits": {"memory": "2Gi"},
    }
    for text, says in (
        ("x", "is not JSON"),
        ('{"request": {}}', '"requests" and/or "limits"'),
        ('{"limits": {"gpu": "1"}}', '"cpu" and/or "memory"'),
        ('{"limits": {"cpu": "lots"}}', "limits.cpu"),
        ('{"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}', "requests.cpu 2 is above limits.cpu 1"),
    ):
        with pytest.raises(ValueError, match=re.escape(says)):
            node_resources(text)


def test_the_manager_builds_its_pods_with_the_nodes_defaults_and_the_classs_own() -> None:
    from csi.fuse.fusepods import FusePodManager

    async def never() -> kr8s.asyncio.Api:
        raise AssertionError("no API call")

    manager = FusePodManager(
        "node-a", never, "img", resources=DEFAULTS, priority_class="system-node-critical"
    )
    plain = manager.pod_body("k" * 32, ["/opt/curvine/curvine-fuse"], "/x/k/fuse-mount")
    assert plain["spec"]["priorityClassName"] == "system-node-critical"
    assert plain["spec"]["containers"][0]["resources"] == DEFAULTS
    sized = manager.pod_body(
        "k" * 32, ["/opt/curvine/curvine-fuse"], "/x/k/fuse-mount", ((names.PARAM_FUSE_MEMORY_LIMIT, "48Mi"),)
    )
    assert sized["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "100m", "memory": "48Mi"},
        "limits": {"memory": "48Mi"},
    }
