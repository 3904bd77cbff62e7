"""The Helm chart (charts/kubectl-fluid), rendered by the real Helm (built from Go modules): it lints,
renders for default values the very objects ``kubectl kustomize manifests/`` builds (plus Helm's own
labels), and each value lands where it says; bad values fail the render with a line that says why.

What "the same objects" allows, and nothing else: the Namespace (Helm's ``--create-namespace`` makes
the release namespace; a chart cannot own it), Helm's bookkeeping labels on each object's metadata,
the webhook pods' profile checksum (a changed profile must roll them), and the profile's text, which
is compared as the YAML it is (the manifest's comments are its own)."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_fluid import __version__
from kubectl_fluid.api import names
from tests.e2e.fluid import MANIFESTS, kubectl_binary
from tests.tools import BUILT_BY, CHART, helm, helm_binary

pytestmark = pytest.mark.skipif(helm_binary() is None, reason=f"helm is {BUILT_BY}")

Doc = dict[str, Any]
Key = tuple[str, str, str, str]
HELM_LABELS = (
    "helm.sh/chart",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/instance",
    names.LABEL_APP_VERSION,
)
CHECKSUM = "checksum/plugins-profile"
PROFILE = ("ConfigMap", names.WEBHOOK_PLUGINS_CONFIGMAP)
RELEASE = "fluid"


def render(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return helm("template", RELEASE, str(CHART), "--namespace", names.FLUID_NAMESPACE, *args, check=check)


def documents(text: str) -> list[Doc]:
    return [d for d in yaml.safe_load_all(text) if d]


def rendered(*args: str) -> list[Doc]:
    return documents(render("--include-crds", *args).stdout)


def key(doc: Doc) -> Key:
    meta = doc["metadata"]
    return doc["apiVersion"], doc["kind"], meta.get("namespace", ""), meta["name"]


def by_key(docs: list[Doc]) -> dict[Key, Doc]:
    out: dict[Key, Doc] = {}
    for doc in docs:
        assert key(doc) not in out, f"{key(doc)} rendered twice"
        out[key(doc)] = doc
    return out


def find(docs: list[Doc], kind: str, name: str) -> Doc:
    (doc,) = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return doc


def pod_spec(docs: list[Doc], kind: str, name: str) -> Doc:
    spec: Doc = find(docs, kind, name)["spec"]["template"]["spec"]
    return spec


def container(docs: list[Doc], kind: str, name: str, index: int = 0) -> Doc:
    found: Doc = pod_spec(docs, kind, name)["containers"][index]
    return found


def profile(docs: list[Doc]) -> Any:
    return yaml.safe_load(find(docs, *PROFILE)["data"]["plugins.yaml"])


def without_helm_metadata(doc: Doc) -> Doc:
    doc = copy.deepcopy(doc)
    labels = doc["metadata"].get("labels") or {}
    for label in HELM_LABELS:
        labels.pop(label, None)
    template = (doc.get("spec") or {}).get("template") or {}
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    annotations.pop(CHECKSUM, None)
    if template and not annotations:
        template["metadata"].pop("annotations", None)
    if (doc["kind"], doc["metadata"]["name"]) == PROFILE:
        doc["data"] = {k: yaml.safe_load(v) for k, v in doc["data"].items()}
    return doc


def kustomized() -> list[Doc]:
    run = subprocess.run(
        [kubectl_binary(), "kustomize", str(MANIFESTS)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return documents(run.stdout)


def test_the_chart_lints_strictly() -> None:
    out = helm("lint", "--strict", str(CHART), "--namespace", names.FLUID_NAMESPACE).stdout
    assert "1 chart(s) linted, 0 chart(s) failed" in out
    everything = [
        "--set",
        "samples.cacheRuntimeClasses.mooncake=true,samples.cacheRuntimeClasses.curvine=true",
    ]
    helm("lint", "--strict", str(CHART), "--namespace", names.FLUID_NAMESPACE, *everything)


def test_default_values_render_the_objects_of_the_kustomize_install() -> None:
    chart = by_key([without_helm_metadata(d) for d in rendered()])
    kustomize = by_key([without_helm_metadata(d) for d in kustomized()])
    namespace = kustomize.pop(("v1", "Namespace", "", names.FLUID_NAMESPACE))
    assert namespace["metadata"]["labels"][names.LABEL_APP_PART_OF] == names.PART_OF
    assert sorted(chart) == sorted(kustomize)
    for k, doc in kustomize.items():
        assert chart[k] == doc, k


def test_every_object_carries_helms_labels_and_pod_templates_only_the_manifests() -> None:
    for doc in rendered():
        if doc["kind"] == "CustomResourceDefinition":
            continue  # crds/ are the manifests' files verbatim: Helm neither templates nor labels them
        labels = doc["metadata"]["labels"]
        assert labels["app.kubernetes.io/managed-by"] == "Helm", key(doc)
        assert labels["app.kubernetes.io/instance"] == RELEASE
        assert labels[names.LABEL_APP_VERSION] == __version__
        assert labels["helm.sh/chart"] == f"kubectl-fluid-{__version__}"
        template = (doc.get("spec") or {}).get("template")
        if template:
            assert not set(HELM_LABELS) & set(template["metadata"]["labels"]), key(doc)


def test_the_chart_and_the_plugin_share_one_version() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["version"] == chart["appVersion"] == __version__


def test_the_crds_are_the_generated_ones() -> None:
    crds = {d["metadata"]["name"]: d for d in rendered() if d["kind"] == "CustomResourceDefinition"}
    generated = {
        d["metadata"]["name"]: d
        for p in sorted((MANIFESTS / "crds").glob("*.yaml"))
        for d in documents(p.read_text())
    }
    assert crds == generated


def test_the_profile_defaults_are_the_webhooks_built_in_ones() -> None:
    from webhook.plugins.registry import PLUGINS
    from webhook.profile import DEFAULT_PROFILE

    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert values["webhook"]["pluginsProfile"] == yaml.safe_load(DEFAULT_PROFILE)
    # With no profile at all in the values, the template's own defaults: the same.
    assert profile(rendered("--set", "webhook.pluginsProfile.plugins=null")) == yaml.safe_load(
        DEFAULT_PROFILE
    )
    helpers = (CHART / "templates" / "_helpers.tpl").read_text()
    known = helpers.split("$known := list ", 1)[1].split(" -}}", 1)[0]
    assert sorted(json.loads(f"[{known.replace(' ', ',')}]")) == sorted(PLUGINS)


def values_file(tmp_path: Path, values: Doc) -> str:
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    return str(path)


def test_a_values_file_without_the_clientless_group_keeps_it(tmp_path: Path) -> None:
    from webhook.profile import load_profile

    old = {"webhook": {"pluginsProfile": {"plugins": {
        "serverful": {"withDataset": ["MountPropagationInjector"], "withoutDataset": []},
    }}}}  # fmt: skip
    # Merged into this chart's values the group is there anyway; with the values' group gone (here
    # nulled; `helm upgrade --reuse-values` from an older chart, tests/e2e/test_install.py) the
    # template brings it back.
    nulled = "webhook.pluginsProfile.plugins.clientless=null"
    docs = rendered("-f", values_file(tmp_path, old), "--set", nulled)
    got = profile(docs)
    assert got["plugins"]["clientless"] == {
        "withDataset": ["RuntimeConfigInjector", "MountPropagationInjector"],
        "withoutDataset": [],
    }
    assert got["plugins"]["serverful"]["withDataset"] == ["MountPropagationInjector"]
    _, warnings = load_profile(find(docs, *PROFILE)["data"]["plugins.yaml"])
    assert warnings == []


def test_a_changed_profile_rolls_the_webhook_pods(tmp_path: Path) -> None:
    def checksum(*args: str) -> str:
        meta = find(rendered(*args), "Deployment", "fluid-webhook")["spec"]["template"]["metadata"]
        return str(meta["annotations"][CHECKSUM])

    changed: Doc = {"webhook": {"pluginsProfile": {"plugins": {"serverless": {"withDataset": []}}}}}
    assert checksum() == checksum()
    assert checksum() != checksum("-f", values_file(tmp_path, changed))


@pytest.mark.parametrize(
    ("values", "says"),
    [
        (
            {"webhook": {"pluginsProfile": {"plugins": {"clientless": {"withDataset": ["FuseSidecar"]}}}}},
            'webhook.pluginsProfile.plugins.clientless.withDataset: unknown plugin "FuseSidecar"; known: ',
        ),
        (
            {"webhook": {"pluginsProfile": {"plugins": {"clientless": {"withDataset": []}}}}},
            "clientless.withDataset is empty: pods labelled fluid.io/inject",
        ),
        ({"controller": {"replica": 3}}, "replica"),
        ({"csi": {"node": {"mountMode": "fast"}}}, "mountMode"),
        ({"webhook": {"pluginsProfile": {"plugins": {"clientles": {}}}}}, "clientles"),
        (
            {"samples": {"cacheRuntimeClasses": {"alluxio": True}}},
            "samples.cacheRuntimeClasses.alluxio: no such sample",
        ),
    ],
    ids=["unknown-plugin", "empty-clientless", "typo-key", "mount-mode", "typo-group", "no-sample"],
)
def test_bad_values_fail_the_render_saying_why(tmp_path: Path, values: Doc, says: str) -> None:
    run = render("-f", values_file(tmp_path, values), check=False)
    assert run.returncode != 0
    assert says in run.stderr, run.stderr


def test_another_namespace_is_refused_with_what_to_do() -> None:
    run = helm("template", RELEASE, str(CHART), "--namespace", "fluid", check=False)
    assert run.returncode != 0
    assert 'installs into namespace fluid-system, not "fluid"' in run.stderr
    assert "--namespace fluid-system --create-namespace" in run.stderr


def test_values_land_where_they_say(tmp_path: Path) -> None:
    values = {
        "image": {"repository": "registry.example/fluid", "tag": "0.1.0", "pullPolicy": "Always"},
        "imagePullSecrets": [{"name": "pull"}],
        "controller": {
            "replicas": 1,
            "image": {"tag": "dev"},
            "resources": {"requests": {"cpu": "1"}, "limits": None},
        },
        "webhook": {
            "replicas": 3,
            "maxDatasetsPerPod": 8,
            "tolerations": [{"key": "k", "operator": "Exists"}],
        },
        "csi": {
            "fuse": {
                "image": "mirror.example/curvine:1",
                "binary": "/usr/local/bin/curvine-fuse",
                "settings": "[fuse]\nenable_splice = true\n",
                "resources": {"limits": {"memory": "512Mi"}, "requests": None},
                "priorityClassName": "fuse-critical",
            },
            "node": {
                "mountMode": "embedded",
                "nodeSelector": {"fluid.io/fuse": "true"},
                "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
                "resources": {"limits": {"memory": "1Gi"}, "requests": None},
            },
            "controller": {"provisioner": {"image": "mirror.example/csi-provisioner:v5.3.0"}},
        },
    }
    docs = rendered("-f", values_file(tmp_path, values))
    ctrl = container(docs, "Deployment", "fluid-controller")
    assert (ctrl["image"], ctrl["imagePullPolicy"]) == ("registry.example/fluid:dev", "Always")
    # Helm merges maps into the defaults: a key is changed alone, and null removes one.
    assert ctrl["resources"] == {"requests": {"cpu": "1", "memory": "128Mi"}}
    assert find(docs, "Deployment", "fluid-controller")["spec"]["replicas"] == 1
    assert not [
        d for d in docs if d["kind"] == "PodDisruptionBudget" and d["metadata"]["name"] == "fluid-controller"
    ]
    assert pod_spec(docs, "Deployment", "fluid-controller")["imagePullSecrets"] == [{"name": "pull"}]
    hook = container(docs, "Deployment", "fluid-webhook")
    assert hook["image"] == "registry.example/fluid:0.1.0"
    assert "--max-datasets-per-pod=8" in hook["args"]
    assert find(docs, "Deployment", "fluid-webhook")["spec"]["replicas"] == 3
    assert pod_spec(docs, "Deployment", "fluid-webhook")["tolerations"] == [
        {"key": "k", "operator": "Exists"}
    ]
    node_pod = pod_spec(docs, "DaemonSet", "fluid-csi-node")
    assert node_pod["nodeSelector"] == {"fluid.io/fuse": "true", "kubernetes.io/os": "linux"}
    assert node_pod["tolerations"] == [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
    node = container(docs, "DaemonSet", "fluid-csi-node")
    assert node["resources"] == {"limits": {"memory": "1Gi"}}
    for arg in ("--mount-mode=embedded", "--fuse-binary=/usr/local/bin/curvine-fuse",
                "--fuse-image=mirror.example/curvine:1", '--fuse-resources={"limits":{"memory":"512Mi"}}',
                "--fuse-priority-class-name=fuse-critical"):  # fmt: skip
        assert arg in node["args"]
    assert (
        container(docs, "Deployment", "fluid-csi-controller", 1)["image"]
        == "mirror.example/csi-provisioner:v5.3.0"
    )
    controller_args = container(docs, "Deployment", "fluid-csi-controller")["args"]
    assert "--fuse-binary=/usr/local/bin/curvine-fuse" in controller_args
    # Both CSI pods copy the program from Curvine's image to where --fuse-binary names it.
    for kind, name in (("DaemonSet", "fluid-csi-node"), ("Deployment", "fluid-csi-controller")):
        pod = pod_spec(docs, kind, name)
        [copy_in] = pod["initContainers"]
        assert copy_in["image"] == "mirror.example/curvine:1"
        assert copy_in["command"] == ["cp", "/usr/local/bin/curvine-fuse", "/curvine-bin/"]
        [mount] = [m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "curvine-bin"]
        assert mount["mountPath"] == "/usr/local/bin"
    settings = find(docs, "ConfigMap", "fluid-csi-fuse-settings")["data"]["curvine-fuse.toml"]
    assert settings == "[fuse]\nenable_splice = true\n"
    # Embedded mode runs no FUSE pods: the node service gets no right to create pods, and no policy.
    assert not [d for d in docs if d["metadata"]["name"] == "fluid-csi-node-fuse-pods"]


def test_another_kubelet_root_dir_moves_every_path_of_the_csi_node(tmp_path: Path) -> None:
    # k0s, microk8s and the like keep kubelet's root elsewhere: kubelet hands the driver paths there.
    root = "/var/snap/microk8s/common/var/lib/kubelet"
    docs = rendered("-f", values_file(tmp_path, {"csi": {"kubeletRootDir": root}}))
    pod = pod_spec(docs, "DaemonSet", "fluid-csi-node")
    text = yaml.safe_dump(pod)
    assert "/var/lib/kubelet" not in text.replace(root, "")
    paths = [v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v]
    assert sum(p.startswith(root + "/") for p in paths) == 5
    args = container(docs, "DaemonSet", "fluid-csi-node")["args"]
    assert f"--mount-root={root}/plugins" in args
    assert f"--plugin-registration-dir={root}/plugins_registry" in args
    assert f"--kubelet-registration-path={root}/plugins/curvine.csi.fluid.io/csi.sock" in args
    run = render("-f", values_file(tmp_path, {"csi": {"kubeletRootDir": "var/lib/k0s/kubelet"}}), check=False)
    assert run.returncode != 0
    assert "kubeletRootDir" in run.stderr, run.stderr


def test_an_earlier_releases_registrar_values_install_and_run_no_sidecar(tmp_path: Path) -> None:
    # The node service registers the driver with kubelet itself; values files written for the
    # node-driver-registrar sidecar still install (helm upgrade -f old-values.yaml), and change nothing.
    registrar = {
        "image": "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.15.0",
        "pullPolicy": "IfNotPresent",
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "64Mi"}},
    }
    docs = rendered("-f", values_file(tmp_path, {"csi": {"node": {"registrar": registrar}}}))
    assert docs == rendered()
    pod = pod_spec(docs, "DaemonSet", "fluid-csi-node")
    assert [c["name"] for c in pod["containers"]] == ["csi-driver"]


def test_the_fuse_is_curvines_and_the_policy_pins_what_the_values_name(tmp_path: Path) -> None:
    docs = rendered("--set", "csi.fuse.image=mirror/curvine:2,csi.kubeletRootDir=/var/lib/k0s/kubelet")
    assert "--fuse-image=mirror/curvine:2" in container(docs, "DaemonSet", "fluid-csi-node")["args"]
    policy = find(docs, "ValidatingAdmissionPolicy", "fluid-csi-node-fuse-pods")["spec"]
    variables = {v["name"]: v["expression"] for v in policy["variables"]}
    assert variables["image"] == "'mirror/curvine:2'"
    assert variables["program"] == "'/opt/curvine/curvine-fuse'"
    assert variables["mountRoot"] == "'/var/lib/k0s/kubelet/plugins/kubernetes.io/csi/curvine/'"


@pytest.mark.parametrize(
    ("values", "says"),
    [
        ({"csi": {"backendRoot": "/var/lib/curvine-standin"}}, "csi.backendRoot is gone"),
        ({"csi": {"node": {"fuse": {"binary": "curvine-fuse-standin"}}}}, "csi.node.fuse is gone"),
    ],
    ids=["backend-root", "node-fuse"],
)
def test_an_earlier_releases_stand_in_values_are_refused_naming_what_replaces_them(
    tmp_path: Path, values: Doc, says: str
) -> None:
    run = render("-f", values_file(tmp_path, values), check=False)
    assert run.returncode != 0
    assert says in run.stderr, run.stderr
    assert "csi.fuse" in run.stderr, run.stderr


def test_components_can_be_left_out() -> None:
    docs = rendered("--set", "controller.enabled=false,webhook.enabled=false,csi.enabled=false")
    assert {d["kind"] for d in docs} == {"CustomResourceDefinition"}


def test_samples_are_the_repositorys_files_where_asked() -> None:
    assert not [d for d in rendered() if d["kind"] in ("CacheRuntimeClass", "StorageClass")]
    docs = rendered(
        "--set", "samples.cacheRuntimeClasses.mooncake=true,samples.storageClasses.curvine=true"
    )  # fmt: skip
    samples = MANIFESTS / "samples"
    expected = documents((samples / "cacheruntimeclass-mooncake.yaml").read_text()) + documents(
        (samples / "storageclass-curvine.yaml").read_text()
    )
    got = [d for d in docs if d["kind"] in ("CacheRuntimeClass", "StorageClass")]
    assert sorted(got, key=key) == sorted(expected, key=key)
