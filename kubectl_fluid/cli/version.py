"""``kubectl fluid version``: the plugin's version, the API server's, and the version of each of the
product's server components, read from their workloads.

A component is a Deployment or DaemonSet labelled ``app.kubernetes.io/part-of: fluid`` in the
components' namespace (fluid-system, where both install paths put them; ``-n`` names another). Its
version is the tag of its first container's image when that is a release number (what runs, even where
an overlay changed the image and not the label), else its ``app.kubernetes.io/version`` label (the Helm
chart and the kustomize manifests both set it to the release, since their image
``kubectl-fluid:latest`` names none), else the image's tag, else ``<unknown>``. A component whose
version is a release number other than the plugin's is warned about, as kubectl warns about version
skew; ``latest`` and digests are compared with nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from kubectl_fluid.cli.flags import kube_command
from kubectl_fluid.cli.settings import Settings

if TYPE_CHECKING:
    from kubectl_fluid.kube.transport import Api

RELEASE = re.compile(r"v?\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?")


@dataclass(frozen=True)
class Component:
    kind: str
    name: str
    namespace: str
    component: str | None
    version: str | None
    images: list[str]
    ready: str

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "namespace": self.namespace,
            "component": self.component,
            "version": self.version,
            "images": self.images,
            "ready": self.ready,
        }


def image_tag(image: str) -> str | None:
    """The tag of an image reference (``repo:tag``, ``host:5000/repo:tag``), the digest when pinned
    by one, None when it has neither."""
    if "@" in image:
        return image.split("@", 1)[1]
    last = image.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else None


def component_of(workload: Mapping[str, Any]) -> Component:
    from kubectl_fluid.api import names

    meta = workload.get("metadata") or {}
    labels = meta.get("labels") or {}
    spec = workload.get("spec") or {}
    status = workload.get("status") or {}
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    images = [str(c.get("image") or "") for c in containers]
    kind = str(workload.get("kind") or "")
    if kind == "DaemonSet":
        ready = f"{int(status.get('numberReady') or 0)}/{int(status.get('desiredNumberScheduled') or 0)}"
    else:
        wanted = spec.get("replicas")
        ready = f"{int(status.get('readyReplicas') or 0)}/{1 if wanted is None else int(wanted)}"
    tag = image_tag(images[0]) if images else None
    version = tag if tag and RELEASE.fullmatch(tag) else labels.get(names.LABEL_APP_VERSION) or tag
    return Component(
        kind=kind,
        name=str(meta.get("name") or ""),
        namespace=str(meta.get("namespace") or ""),
        component=labels.get(names.LABEL_APP_COMPONENT),
        version=str(version) if version else None,
        images=images,
        ready=ready,
    )


def skewed(client: str, components: Sequence[Component]) -> list[Component]:
    """Components at a release other than the client's (``v0.1.0`` and ``0.1.0`` are one release)."""
    mine = client.removeprefix("v")
    return [
        c
        for c in components
        if c.version and RELEASE.fullmatch(c.version) and c.version.removeprefix("v") != mine
    ]


def read_versions(api: Api, namespace: str) -> tuple[dict[str, Any], list[Component]]:
    """The API server's /version and the product's components in ``namespace`` (also what
    ``bundle`` records)."""
    from kubectl_fluid.api import names
    from kubectl_fluid.kube import resources

    selector = {"labelSelector": f"{names.LABEL_APP_PART_OF}={names.PART_OF}"}
    server = api.request("GET", resources.VERSION_PATH) or {}
    workloads = [
        {"kind": kind, **item}
        for kind, resource in (("Deployment", resources.DEPLOYMENTS), ("DaemonSet", resources.DAEMONSETS))
        for item in api.list(resource.collection_path(namespace), selector)
    ]
    components = sorted((component_of(w) for w in workloads), key=lambda c: (c.component or "", c.name))
    return server, components


def document(server: Mapping[str, Any], components: Sequence[Component]) -> dict[str, Any]:
    """``version -o json``'s document."""
    from kubectl_fluid import __version__

    return {
        "clientVersion": {"version": __version__},
        "serverVersion": dict(server),
        "components": [c.to_json() for c in components],
    }


HEADERS = ["COMPONENT", "KIND", "NAME", "VERSION", "READY", "IMAGE"]


def row(c: Component, wide: bool) -> list[str]:
    from kubectl_fluid.cli.table import UNKNOWN, cell

    images = c.images if wide else c.images[:1]
    return [cell(c.component), c.kind, c.name, c.version or UNKNOWN, c.ready, cell(",".join(images))]


@click.command(
    epilog="\b\nExamples:\n  kubectl fluid version\n  kubectl fluid version --client\n"
    "  kubectl fluid version -o yaml"
)
@click.option("--client", "client_only", is_flag=True, help="Print the plugin's version only (no cluster).")
@kube_command(outputs=("json", "yaml", "wide"))
def version(client_only: bool, settings: Settings) -> None:
    """Print the plugin's version and that of the cluster and its Fluid components.

    \b
    Client Version   this plugin
    Server Version   the Kubernetes API server (its /version)
    then a table of the product's Deployments and DaemonSets (label
    app.kubernetes.io/part-of=fluid) in namespace fluid-system, or the one -n names:
      COMPONENT  KIND  NAME  VERSION  READY  IMAGE
    VERSION is its image's tag when that is a release number, else the workload's
    app.kubernetes.io/version label (set by the Helm chart and the manifests, whose
    image kubectl-fluid:latest names none), else the tag. -o wide lists every
    container's image.

    A component at another release than the plugin is warned about on stderr.
    """
    from kubectl_fluid import __version__
    from kubectl_fluid.api import names
    from kubectl_fluid.cli.output import dump, nothing_found, warn, write
    from kubectl_fluid.cli.table import render

    client = {"version": __version__}
    machine = settings.output in ("json", "yaml")
    if client_only:
        write(
            dump({"clientVersion": client}, str(settings.output))
            if machine
            else f"Client Version: {__version__}\n"
        )
        return
    if not machine:
        # Printed before the cluster is asked, as kubectl does: it stands even when the cluster fails.
        write(f"Client Version: {__version__}\n")
    session = settings.open()
    namespace = settings.namespace or names.FLUID_NAMESPACE
    with session.api:
        server, components = read_versions(session.api, namespace)
    for c in skewed(__version__, components):
        warn(f"{c.kind.lower()}/{c.name} runs version {c.version}, this plugin is {__version__}")
    if machine:
        write(dump(document(server, components), str(settings.output)))
        return
    write(f"Server Version: {server.get('gitVersion', '<unknown>')}\n")
    if not components:
        nothing_found(namespace)
        return
    wide = settings.output == "wide"
    write(render(HEADERS, [row(c, wide) for c in components], settings.no_headers))
