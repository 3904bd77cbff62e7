"""The two cluster install paths, tried as an operator tries them, each on a cluster of its own (both
install into fluid-system, where the session's cluster already holds the fixtures' objects):

- Helm: ``helm install`` of a chart whose values predate the ``clientless`` plugin group, the webhook's
  certificate bootstrap run with the chart's RBAC, ``helm upgrade --reuse-values`` to this chart and
  ``helm upgrade -f`` with that older values file (the group is kept, the bootstrapped caBundle too),
  then ``helm uninstall``;
- kustomize: ``kubectl apply -k manifests/``, the rollouts, ``kubectl delete -k manifests/``;

with ``kubectl fluid version`` reading the components each put there. And on the session's cluster,
everything the chart renders passes a server-side dry run.

The kwok nodes run no containers: the components' pods turn Ready without running. The webhook's
bootstrap therefore runs as a local process authenticated as the chart's ServiceAccount.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config

import localcluster
from kubectl_fluid import __version__
from kubectl_fluid.api import names
from tests.e2e import crdcleanup
from tests.e2e.fluid import MANIFESTS, WebhookProcess, kubectl, service_account_kubeconfig, wait_until_gone
from tests.e2e.test_cli_inject import kubectl_fluid, ok
from tests.e2e.wait import eventually
from tests.tools import BUILT_BY, CHART, helm, helm_binary

OLD_VALUES = Path(__file__).parent / "helm" / "values-before-clientless.yaml"
RELEASE = "fluid"
NS = names.FLUID_NAMESPACE
WORKLOADS = {
    ("Deployment", "fluid-controller"): "controller",
    ("Deployment", "fluid-webhook"): "webhook",
    ("Deployment", "fluid-csi-controller"): "csi-controller",
    ("DaemonSet", "fluid-csi-node"): "csi-node",
}

needs_helm = pytest.mark.skipif(helm_binary() is None, reason=f"helm is {BUILT_BY}")
needs_go = pytest.mark.skipif(shutil.which("go") is None, reason="a cluster of its own needs Go >= 1.26")


@pytest.fixture
def own_cluster(tmp_path: Path) -> Iterator[localcluster.Cluster]:
    with localcluster.running(tmp_path / "cluster", 2) as cluster:
        yield cluster


def helm_on(kubeconfig: Path, *args: str) -> str:
    return helm(*args, "--kubeconfig", str(kubeconfig), "--namespace", NS).stdout


def profile_in_cluster(core: client.CoreV1Api) -> Any:
    configmap = core.read_namespaced_config_map(names.WEBHOOK_PLUGINS_CONFIGMAP, NS)
    return yaml.safe_load(configmap.data["plugins.yaml"])


def older_chart(into: Path) -> Path:
    """This chart as a release before the clientless group: its values have no such group and its
    profile is the values' verbatim, as upstream's chart renders it."""
    shutil.copytree(CHART, into, symlinks=False)
    helpers = into / "templates" / "_helpers.tpl"
    text = helpers.read_text()
    start = text.index('{{- define "fluid.pluginsProfile" -}}')
    verbatim = (
        '{{- define "fluid.pluginsProfile" -}}\n{{ toYaml .Values.webhook.pluginsProfile }}\n{{- end -}}\n'
    )
    end = text.find("{{- define ", start + 1)
    helpers.write_text(text[:start] + verbatim + (text[end:] if end >= 0 else ""))
    values = yaml.safe_load((into / "values.yaml").read_text())
    del values["webhook"]["pluginsProfile"]["plugins"]["clientless"]
    (into / "values.yaml").write_text(yaml.safe_dump(values))
    chart = yaml.safe_load((into / "Chart.yaml").read_text())
    chart["version"] = chart["appVersion"] = "0.0.9"
    (into / "Chart.yaml").write_text(yaml.safe_dump(chart))
    return into


def versions_shown(kubeconfig: Path) -> dict[tuple[str, str], list[str]]:
    """``kubectl fluid version``: its client line, and per workload its row's cells."""
    out = ok(kubectl_fluid(kubeconfig, "version", "--request-timeout", "20s")).splitlines()
    assert out[0] == f"Client Version: {__version__}"
    assert out[1].startswith("Server Version: v1.")
    header, *rows = out[2:]
    assert header.split() == ["COMPONENT", "KIND", "NAME", "VERSION", "READY", "IMAGE"]
    return {(cells[1], cells[2]): cells for cells in (r.split() for r in rows)}


def ready(apps: client.AppsV1Api) -> bool:
    for (kind, name), _ in WORKLOADS.items():
        if kind == "Deployment":
            d = apps.read_namespaced_deployment(name, NS)
            if (d.status.ready_replicas or 0) != d.spec.replicas:
                return False
        else:
            ds = apps.read_namespaced_daemon_set(name, NS)
            if (
                not ds.status.desired_number_scheduled
                or ds.status.number_ready != ds.status.desired_number_scheduled
            ):
                return False
    return True


@needs_helm
def test_everything_the_chart_renders_passes_a_server_side_dry_run(fluid: Path) -> None:
    rendered = helm(
        "template", RELEASE, str(CHART), "--namespace", NS, "--include-crds", "--set",
        "samples.cacheRuntimeClasses.mooncake=true,samples.cacheRuntimeClasses.curvine=true,"
        "samples.storageClasses.curvine=true",
    ).stdout  # fmt: skip
    objects = [d for d in yaml.safe_load_all(rendered) if d]
    accepted = kubectl(fluid, "apply", "--dry-run=server", "-o", "name", "-f", "-", stdin=rendered).split()
    assert len(accepted) == len(objects), accepted
    assert "mutatingwebhookconfiguration.admissionregistration.k8s.io/fluid-pod-admission-webhook" in accepted
    assert "cacheruntimeclass.data.fluid.io/mooncake" in accepted


@needs_helm
@needs_go
def test_helm_install_upgrade_from_values_without_clientless_and_uninstall(
    own_cluster: localcluster.Cluster, tmp_path: Path
) -> None:
    from webhook.profile import load_profile

    kubeconfig = own_cluster.kubeconfig
    api = config.new_client_from_config(config_file=str(kubeconfig))
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    admission = client.AdmissionregistrationV1Api(api)

    # The release before: a chart and a values file that both know nothing of clientless.
    out = helm_on(
        kubeconfig, "install", RELEASE, str(older_chart(tmp_path / "old-chart")), "--create-namespace",
        "-f", str(OLD_VALUES), "--wait", "--timeout", "180s",
    )  # fmt: skip
    assert "STATUS: deployed" in out
    assert apps.read_namespaced_deployment("fluid-webhook", NS).spec.replicas == 1
    assert "clientless" not in profile_in_cluster(core)["plugins"]

    # The certificate bootstrap, as the chart's ServiceAccount: Secret created, caBundle patched.
    sa = service_account_kubeconfig(
        kubeconfig, core, tmp_path / "webhook.kubeconfig", account="fluid-webhook"
    )
    hook = WebhookProcess(sa, kubeconfig, tmp_path)
    hook.start()
    try:
        hook.wait_ready()
        eventually(lambda: hook.ca_bundle_patched(admission), "caBundle patched by the bootstrap")
        secret = core.read_namespaced_secret(names.WEBHOOK_CERT_SECRET, NS)
        assert set(secret.data) >= {names.CA_CERT_FILE, names.TLS_CERT_FILE}
        before = apps.read_namespaced_deployment("fluid-webhook", NS).spec.template.metadata.annotations

        # `--reuse-values`: the new chart sees the old release's values, which have no clientless.
        helm_on(kubeconfig, "upgrade", RELEASE, str(CHART), "--reuse-values", "--wait", "--timeout", "180s")
        plugins = profile_in_cluster(core)["plugins"]
        assert plugins["clientless"] == {
            "withDataset": ["RuntimeConfigInjector", "MountPropagationInjector"],
            "withoutDataset": [],
        }
        text = core.read_namespaced_config_map(names.WEBHOOK_PLUGINS_CONFIGMAP, NS).data["plugins.yaml"]
        assert load_profile(text)[1] == []  # the webhook reads it without a warning
        after = apps.read_namespaced_deployment("fluid-webhook", NS).spec.template.metadata.annotations
        assert after != before, "the changed profile rolls the webhook's pods"
        assert hook.ca_bundle_patched(admission), "the upgrade kept the bootstrapped caBundle"

        # And again with the older values file given explicitly.
        helm_on(
            kubeconfig, "upgrade", RELEASE, str(CHART), "-f", str(OLD_VALUES), "--wait", "--timeout", "180s"
        )
        assert profile_in_cluster(core)["plugins"]["clientless"]["withDataset"] == [
            "RuntimeConfigInjector",
            "MountPropagationInjector",
        ]
        assert hook.ca_bundle_patched(admission)
    finally:
        hook.stop()

    eventually(lambda: ready(apps), "the chart's workloads Ready")
    shown = versions_shown(kubeconfig)
    assert set(shown) == set(WORKLOADS)
    for (kind, name), component in WORKLOADS.items():
        cells = shown[(kind, name)]
        assert cells[0] == component, cells
        assert cells[3] == __version__, cells  # the chart's version label
        assert cells[5] == "kubectl-fluid:latest"
    history = helm_on(kubeconfig, "history", RELEASE)
    assert len(history.strip().splitlines()) == 4  # header + install + two upgrades

    assert "uninstalled" in helm_on(kubeconfig, "uninstall", RELEASE, "--wait", "--timeout", "180s")
    for (kind, name), _ in WORKLOADS.items():
        read = apps.read_namespaced_deployment if kind == "Deployment" else apps.read_namespaced_daemon_set
        wait_until_gone(read, name, NS, what=f"{kind} {name}")
    wait_until_gone(
        admission.read_mutating_webhook_configuration, names.WEBHOOK_NAME, what="the webhook config"
    )
    rbac = client.RbacAuthorizationV1Api(api)
    wait_until_gone(rbac.read_cluster_role, "fluid-controller", what="ClusterRole fluid-controller")
    # Helm never deletes CRDs (nor the Datasets in them); what the webhook made at run time stays too.
    extensions = client.ApiextensionsV1Api(api)
    assert extensions.read_custom_resource_definition(f"datasets.{names.GROUP}")
    assert core.read_namespaced_secret(names.WEBHOOK_CERT_SECRET, NS)


@needs_go
def test_kustomize_install_applies_rolls_out_and_is_deleted(own_cluster: localcluster.Cluster) -> None:
    kubeconfig = own_cluster.kubeconfig
    api = config.new_client_from_config(config_file=str(kubeconfig))
    apps = client.AppsV1Api(api)
    applied = kubectl(kubeconfig, "apply", "-k", str(MANIFESTS)).splitlines()
    assert f"namespace/{NS} created" in applied
    for (kind, name), _ in WORKLOADS.items():
        kubectl(kubeconfig, "-n", NS, "rollout", "status", f"{kind.lower()}/{name}", "--timeout=180s")
    shown = versions_shown(kubeconfig)
    assert set(shown) == set(WORKLOADS)
    for (kind, name), component in WORKLOADS.items():
        # The manifests' version label, not the image's tag (latest).
        assert shown[(kind, name)][0] == component
        assert shown[(kind, name)][3] == __version__
    try:
        deleted = kubectl(kubeconfig, "delete", "-k", str(MANIFESTS), "--wait=false")
        cleanup = crdcleanup.wait_gone(api, {path.stem for path in (MANIFESTS / "crds").glob("*.yaml")})
    except (AssertionError, subprocess.TimeoutExpired) as e:
        raise AssertionError(f"{e}\n{deletion_left(own_cluster)}") from None
    # kube-apiserver's stalled CRD cleanup, requeued (crdcleanup.py): shown, so its rate can be followed.
    print(f"CRDs gone in {cleanup.seconds:.1f}s; cleanup requeued for {cleanup.requeued or 'none'}")
    assert f'namespace "{NS}" deleted' in deleted
    wait_until_gone(client.CoreV1Api(api).read_namespace, NS, what=f"namespace {NS}", timeout=120)
    assert not apps.list_deployment_for_all_namespaces(label_selector="app.kubernetes.io/part-of=fluid").items


def deletion_left(cluster: localcluster.Cluster) -> str:
    """What an uninstall left behind: the namespace's status, the CRDs still there, and what the
    namespace controller, the garbage collector and kube-apiserver's CRD cleanup logged."""
    kc = cluster.kubeconfig
    found = []
    for args in (
        ("get", "namespace", NS, "-o", "jsonpath={.status}"),
        ("get", "crd", "-o", "custom-columns=NAME:.metadata.name,DELETING:.metadata.deletionTimestamp"),
        ("get", "all", "-n", NS, "-o", "wide"),
    ):
        try:
            found.append(f"$ kubectl {' '.join(args)}\n{kubectl(kc, *args)}")
        except (AssertionError, subprocess.TimeoutExpired) as e:
            found.append(f"$ kubectl {' '.join(args)}\n{e}")
    log = cluster.logs / "kube-controller-manager.log"
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    wanted = [line for line in lines if "namespace" in line.lower() or "garbagecollector" in line.lower()]
    found.append("kube-controller-manager.log (namespace, garbage collector):\n" + "\n".join(wanted[-30:]))
    log = cluster.logs / "kube-apiserver.log"
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    cleanup = [line for line in lines if "crd_finalizer" in line]
    found.append("kube-apiserver.log (CRD cleanup):\n" + "\n".join(cleanup[-20:]))
    return "\n".join(found)
