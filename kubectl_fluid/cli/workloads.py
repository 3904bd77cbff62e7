"""The workloads ``inject`` edits: which kinds, the names kubectl accepts for them, and where each
keeps the pod template whose metadata the webhook reads when its pods are created."""

from __future__ import annotations

from dataclasses import dataclass

from kubectl_fluid.cli.errors import CliError
from kubectl_fluid.kube import resources
from kubectl_fluid.kube.resources import Resource


@dataclass(frozen=True)
class Kind:
    resource: Resource
    aliases: tuple[str, ...]  # what a person may type, short name first (kubectl's)
    template_path: tuple[str, ...]  # object keys down to the pod template

    @property
    def short(self) -> str:
        return self.aliases[0]

    @property
    def display(self) -> str:
        """``deployment.apps``: how kubectl names the kind in its messages."""
        r = self.resource
        return f"{r.kind.lower()}.{r.group}" if r.group else r.kind.lower()


WORKLOAD_KINDS: tuple[Kind, ...] = (
    Kind(resources.DEPLOYMENTS, ("deploy", "deployment", "deployments"), ("spec", "template")),
    Kind(resources.STATEFULSETS, ("sts", "statefulset", "statefulsets"), ("spec", "template")),
    Kind(resources.DAEMONSETS, ("ds", "daemonset", "daemonsets"), ("spec", "template")),
    Kind(resources.JOBS, ("job", "jobs"), ("spec", "template")),
    Kind(resources.CRONJOBS, ("cronjob", "cj", "cronjobs"), ("spec", "jobTemplate", "spec", "template")),
)
# Not injectable (its Deployment owns the template), but explain reads one: a Deployment's pods are
# created, or refused, by its newest ReplicaSet.
REPLICASET_KIND = Kind(resources.REPLICASETS, ("rs", "replicaset", "replicasets"), ("spec", "template"))
EXPLAINED_KINDS: tuple[Kind, ...] = (*WORKLOAD_KINDS, REPLICASET_KIND)
POD_ALIASES = ("pod", "po", "pods")
SUPPORTED = "deploy, sts, ds, job or cronjob"


@dataclass(frozen=True)
class Target:
    kind: Kind
    name: str

    def __str__(self) -> str:
        """``deployment.apps/x``, as kubectl prints a changed object."""
        return f"{self.kind.display}/{self.name}"


def words_for(kind: Kind) -> set[str]:
    """Every spelling kubectl accepts: aliases, the kind, each qualified by group and version."""
    r = kind.resource
    base = {*kind.aliases, r.kind.lower()}
    return base | {f"{w}.{r.group}" for w in base} | {f"{w}.{r.version}.{r.group}" for w in base}


def lookup(word: str, kinds: tuple[Kind, ...] = WORKLOAD_KINDS) -> Kind | None:
    """The kind ``word`` names among ``kinds``, in any spelling kubectl accepts."""
    return next((kind for kind in kinds if word.lower() in words_for(kind)), None)


def parse_target(args: tuple[str, ...] | list[str]) -> Target:
    """``deploy/x`` or ``deploy x`` (both kubectl forms), ``deployment.apps/x`` too. A Pod is refused
    here with the reason; an unknown kind names the supported ones."""
    if len(args) == 1 and "/" in args[0]:
        word, _, name = args[0].partition("/")
    elif len(args) == 2 and "/" not in args[0]:
        word, name = args
    elif len(args) == 1:
        raise CliError(
            f'"{args[0]}" names no kind: write KIND/NAME, for example deploy/{args[0]} ({SUPPORTED})'
        )
    else:
        raise CliError(f"expected one workload, KIND/NAME or KIND NAME, got: {' '.join(args) or 'nothing'}")
    if not word or not name or "/" in name:
        raise CliError(f'"{"/".join(args)}" is not KIND/NAME; for example deploy/app ({SUPPORTED})')
    if word.lower() in POD_ALIASES or word.lower() == "pod.v1":
        raise CliError(
            f"cannot inject pod/{name}: a Pod's spec is immutable and the webhook acts only when a pod is "
            "created; inject the Deployment, StatefulSet, DaemonSet, Job or CronJob that creates it, or "
            "recreate the pod with the label and annotation (kubectl fluid explain pod/" + name + ")"
        )
    kind = lookup(word)
    if kind is None:
        raise CliError(f'cannot inject "{word}": unsupported kind; use {SUPPORTED}')
    return Target(kind, name)
