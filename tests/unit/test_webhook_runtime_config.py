"""RuntimeConfigInjector (SPEC §4): exact output, replacement, idempotence, failing closed."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubectl_fluid.api import names
from tests.unit.webhook_samples import NS, dataset, injection_pod, ready_lookup, runtime_config
from webhook.errors import Denied
from webhook.lookup import Lookup, StaticLookup
from webhook.plugins import Context
from webhook.plugins.runtime_config import RuntimeConfigInjector
from webhook.podedit import working_copy

INJECTOR = RuntimeConfigInjector()
DONE = {names.LABEL_INJECT_DONE: "true"}


def _inject(pod: dict[str, Any], datasets: list[str], lookup: Lookup) -> tuple[dict[str, Any], Context]:
    """Run the injector as the pipeline does, checking it leaves the original pod alone."""
    before = copy.deepcopy(pod)
    work = working_copy(pod)
    ctx = Context(NS, datasets, lookup)
    INJECTOR.mutate(work, ctx)
    assert pod == before
    return work, ctx


def _mount(ds: str) -> dict[str, Any]:
    return {"name": f"fluid-runtime-config-{ds}", "mountPath": f"/etc/fluid/config/{ds}/", "readOnly": True}


def _env(name: str, ds: str) -> dict[str, Any]:
    return {"name": name, "value": f"/etc/fluid/config/{ds}/runtime.sh"}


def test_exact_output_for_a_dataset_with_a_dash() -> None:
    pod = injection_pod(
        "ds-1",
        containers=[
            {
                "name": "app",
                "env": [{"name": "MODE", "value": "serve"}],
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
            },
            {"name": "fluid-fuse-0", "image": "fuse"},
            {"name": "sidecar"},
        ],
        init_containers=[{"name": "fluid-fuse-init"}, {"name": "init"}],
        volumes=[{"name": "data", "emptyDir": {}}],
    )
    work, ctx = _inject(pod, ["ds-1"], ready_lookup("ds-1"))

    mount = _mount("ds-1")
    env = [_env("FLUID_RUNTIME_CONFIG_PATH_ds-1", "ds-1"), _env("FLUID_RUNTIME_CONFIG_PATH_DS_1", "ds-1")]
    assert work == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": "app-",
            "labels": {"fluid.io/inject": "true", "done.sidecar.fluid.io/inject": "true"},
            "annotations": {"fluid.io/dataset": "ds-1"},
        },
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "env": [{"name": "MODE", "value": "serve"}, *env],
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}, mount],
                },
                {"name": "fluid-fuse-0", "image": "fuse"},
                {"name": "sidecar", "volumeMounts": [mount], "env": env},
            ],
            "initContainers": [
                {"name": "fluid-fuse-init"},
                {"name": "init", "volumeMounts": [mount], "env": env},
            ],
            "volumes": [
                {"name": "data", "emptyDir": {}},
                {"name": "fluid-runtime-config-ds-1", "configMap": {"name": "fluid-runtime-config-ds-1"}},
            ],
        },
    }
    assert ctx.warnings == []


def test_several_datasets_in_sorted_order_and_one_env_name_when_already_shell_safe() -> None:
    work, _ = _inject(injection_pod("ds1,ds2"), ["ds1", "ds2"], ready_lookup("ds1", "ds2"))
    app = work["spec"]["containers"][0]
    assert app["volumeMounts"] == [_mount("ds1"), _mount("ds2")]
    assert [e["name"] for e in app["env"]] == [
        "FLUID_RUNTIME_CONFIG_PATH_ds1",
        "FLUID_RUNTIME_CONFIG_PATH_DS1",
        "FLUID_RUNTIME_CONFIG_PATH_ds2",
        "FLUID_RUNTIME_CONFIG_PATH_DS2",
    ]
    assert [v["name"] for v in work["spec"]["volumes"]] == [
        "fluid-runtime-config-ds1",
        "fluid-runtime-config-ds2",
    ]
    work, _ = _inject(injection_pod("123"), ["123"], ready_lookup("123"))
    assert [e["name"] for e in work["spec"]["containers"][0]["env"]] == ["FLUID_RUNTIME_CONFIG_PATH_123"]


def test_a_configmap_with_the_scoped_form_gets_its_env_var_too() -> None:
    lookup = StaticLookup(
        [dataset("ds-1"), runtime_config("ds-1", scoped=True), dataset("ds2"), runtime_config("ds2")]
    )
    work, ctx = _inject(injection_pod("ds-1,ds2"), ["ds-1", "ds2"], lookup)
    env = {e["name"]: e["value"] for e in work["spec"]["containers"][0]["env"]}
    assert env["FLUID_SCOPED_CONFIG_PATH_DS_1"] == "/etc/fluid/config/ds-1/runtime-scoped.sh"
    # ds2's ConfigMap was written before the scoped form existed: no variable points at a missing file.
    assert "FLUID_SCOPED_CONFIG_PATH_DS2" not in env
    assert env["FLUID_RUNTIME_CONFIG_PATH_DS2"] == "/etc/fluid/config/ds2/runtime.sh"
    assert ctx.warnings == []


def test_existing_entries_are_replaced_not_duplicated() -> None:
    stale_env = {"name": "FLUID_RUNTIME_CONFIG_PATH_ds1", "value": "/old"}
    pod = injection_pod(
        "ds1",
        containers=[
            {
                "name": "app",
                "env": [stale_env, {"name": "KEEP", "value": "1"}, dict(stale_env, value="/older")],
                "volumeMounts": [
                    {"name": "fluid-runtime-config-ds1", "mountPath": "/somewhere"},
                    {"name": "keep", "mountPath": "/keep"},
                    {"name": "other", "mountPath": "/etc/fluid/config/ds1"},  # same path, other volume
                ],
            }
        ],
        volumes=[
            {"name": "keep", "emptyDir": {}},
            {"name": "fluid-runtime-config-ds1", "secret": {"secretName": "x"}},
        ],
    )
    work, _ = _inject(pod, ["ds1"], ready_lookup("ds1"))
    app = work["spec"]["containers"][0]
    assert app["env"] == [
        _env("FLUID_RUNTIME_CONFIG_PATH_ds1", "ds1"),
        {"name": "KEEP", "value": "1"},
        _env("FLUID_RUNTIME_CONFIG_PATH_DS1", "ds1"),
    ]
    assert app["volumeMounts"] == [_mount("ds1"), {"name": "keep", "mountPath": "/keep"}]
    assert work["spec"]["volumes"] == [
        {"name": "keep", "emptyDir": {}},
        {"name": "fluid-runtime-config-ds1", "configMap": {"name": "fluid-runtime-config-ds1"}},
    ]


def test_running_twice_changes_nothing() -> None:
    lookup = ready_lookup("ds-1", "ds2")
    pod = injection_pod("ds-1,ds2", init_containers=[{"name": "init", "env": []}])
    once, _ = _inject(pod, ["ds-1", "ds2"], lookup)
    twice, _ = _inject(once, ["ds-1", "ds2"], lookup)
    assert twice == once


def test_no_datasets_is_a_no_op() -> None:
    pod = injection_pod(None)
    work, _ = _inject(pod, [], StaticLookup())
    assert work == pod


def _denial(lookup: Lookup, datasets: list[str]) -> str:
    pod = injection_pod(",".join(datasets), init_containers=[{"name": "init"}])
    before = copy.deepcopy(pod)
    work = working_copy(pod)
    with pytest.raises(Denied) as refused:
        INJECTOR.mutate(work, Context(NS, datasets, lookup))
    assert work == before, "nothing may be mutated when the pod is refused"
    assert pod == before
    return refused.value.message


def test_missing_dataset_is_refused_with_the_spec_message() -> None:
    assert _denial(ready_lookup("ds1"), ["ds1", "ds9"]) == 'dataset "ds9" not found in namespace "team-a"'


def test_dataset_in_another_namespace_counts_as_missing() -> None:
    lookup = StaticLookup([dataset("ds1", "other"), runtime_config("ds1", "other")])
    assert _denial(lookup, ["ds1"]) == 'dataset "ds1" not found in namespace "team-a"'


def test_missing_configmap_is_refused_with_the_spec_message() -> None:
    assert _denial(StaticLookup([dataset("ds1")]), ["ds1"]) == (
        'runtime config for dataset "ds1" is not ready: ConfigMap fluid-runtime-config-ds1 not found'
    )


def test_a_not_bound_datasets_denial_gives_the_controllers_cause_not_the_missing_configmap() -> None:
    """Issue 28, item 7: the deepest known cause, in the webhook's words too."""
    cause = 'CacheRuntimeClass "does-not-exist" not found (one of: mooncake)'
    not_bound = dataset("ds1")
    not_bound["status"] = {
        "phase": "NotBound",
        "conditions": [{"type": names.CONDITION_READY, "status": "False", "message": cause}],
    }
    assert (
        _denial(StaticLookup([not_bound]), ["ds1"])
        == f'runtime config for dataset "ds1" is not ready: {cause}'
    )
    # A ConfigMap that is there (written before the class went) is still served.
    work, _ = _inject(injection_pod("ds1"), ["ds1"], StaticLookup([not_bound, runtime_config("ds1")]))
    assert work["metadata"]["labels"][names.LABEL_INJECT_DONE] == "true"


def test_configmap_without_runtime_sh_is_refused() -> None:
    lookup = StaticLookup([dataset("ds1"), runtime_config("ds1", runtime_sh=False)])
    assert _denial(lookup, ["ds1"]) == (
        'runtime config for dataset "ds1" is not ready: '
        "ConfigMap fluid-runtime-config-ds1 has no key runtime.sh"
    )


def test_runtime_sh_in_binary_data_counts() -> None:
    configmap = runtime_config("ds1", runtime_sh=False)
    configmap["binaryData"] = {names.RUNTIME_SH_KEY: "IyEvYmluL3NoCg=="}
    work, _ = _inject(injection_pod("ds1"), ["ds1"], StaticLookup([dataset("ds1"), configmap]))
    assert work["metadata"]["labels"][names.LABEL_INJECT_DONE] == "true"


def test_every_problem_is_named_at_once() -> None:
    lookup = StaticLookup([dataset("ds2"), dataset("ds3"), runtime_config("ds3")])
    assert _denial(lookup, ["ds1", "ds2", "ds3"]) == (
        'dataset "ds1" not found in namespace "team-a"; '
        'runtime config for dataset "ds2" is not ready: ConfigMap fluid-runtime-config-ds2 not found'
    )


def test_shared_shell_safe_env_name_warns() -> None:
    work, ctx = _inject(injection_pod("ds-1,ds.1"), ["ds-1", "ds.1"], ready_lookup("ds-1", "ds.1"))
    env = work["spec"]["containers"][0]["env"]
    assert env == [
        _env("FLUID_RUNTIME_CONFIG_PATH_ds-1", "ds-1"),
        _env("FLUID_RUNTIME_CONFIG_PATH_DS_1", "ds.1"),
        _env("FLUID_RUNTIME_CONFIG_PATH_ds.1", "ds.1"),
    ]
    assert len(ctx.warnings) == 1
    assert "FLUID_RUNTIME_CONFIG_PATH_DS_1" in ctx.warnings[0]
    assert "use FLUID_RUNTIME_CONFIG_PATH_ds-1" in ctx.warnings[0]


def test_done_label_is_added_to_a_pod_without_labels() -> None:
    pod: dict[str, Any] = {"metadata": {}, "spec": {"containers": [{"name": "app"}]}}
    work, _ = _inject(pod, ["ds1"], ready_lookup("ds1"))
    assert work["metadata"]["labels"] == DONE


def test_a_shared_scoped_prefix_warns_with_what_still_tells_them_apart() -> None:
    lookup = StaticLookup(
        [
            dataset("ds-1"),
            runtime_config("ds-1", scoped=True),
            dataset("ds.1"),
            runtime_config("ds.1", scoped=True),
        ]
    )
    work, ctx = _inject(injection_pod("ds-1,ds.1"), ["ds-1", "ds.1"], lookup)
    env = {e["name"]: e["value"] for e in work["spec"]["containers"][0]["env"]}
    assert env["FLUID_SCOPED_CONFIG_PATH_DS_1"] == "/etc/fluid/config/ds.1/runtime-scoped.sh"
    scoped = [w for w in ctx.warnings if "FLUID_SCOPED_CONFIG_PATH_DS_1" in w]
    assert len(scoped) == 1
    assert "FLUID_DS_1_* names" in scoped[0]
    assert "runtime.sh (FLUID_RUNTIME_CONFIG_PATH_ds-1) on its own" in scoped[0]
