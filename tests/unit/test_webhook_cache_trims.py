"""What the webhook's watch caches keep of the objects they hold (webhook/cache.py): the fields
admission reads, so holding every one of a cluster's costs little."""

from __future__ import annotations

import copy

from webhook.cache import _trim_claim, _trim_configmap, _trim_pv


def test_a_runtime_config_configmap_is_held_as_its_keys() -> None:
    cm = {
        "metadata": {"name": "fluid-runtime-config-ds1", "namespace": "a", "managedFields": [{"x": 1}]},
        "data": {
            "runtime.json": "{" + "x" * 10_000 + "}",
            "runtime.sh": "#!/bin/sh\n",
            "runtime-scoped.sh": "s",
        },
        "binaryData": {"blob": "AAAA"},
    }
    _trim_configmap(cm)
    assert cm == {
        "metadata": {"name": "fluid-runtime-config-ds1", "namespace": "a"},
        "data": {"runtime.json": "", "runtime.sh": "", "runtime-scoped.sh": ""},
        "binaryData": {"blob": ""},
    }
    again = copy.deepcopy(cm)
    _trim_configmap(again)
    assert again == cm  # a trimmed one stays as it is


def test_claims_and_pvs_keep_what_admission_reads() -> None:
    pvc = {
        "metadata": {"name": "c", "namespace": "a", "labels": {"l": "v"}, "annotations": {"big": "x"}},
        "spec": {"storageClassName": "sc", "volumeName": "pv1", "resources": {}},
        "status": {"phase": "Bound"},
    }
    _trim_claim(pvc)
    assert pvc == {
        "metadata": {"name": "c", "namespace": "a", "labels": {"l": "v"}},
        "spec": {"storageClassName": "sc", "volumeName": "pv1"},
    }
    pv = {"metadata": {"name": "pv1"}, "spec": {"csi": {"driver": "d", "volumeAttributes": {"a": "b"}}}}
    _trim_pv(pv)
    assert pv == {"metadata": {"name": "pv1"}, "spec": {"csi": {"driver": "d"}}}
