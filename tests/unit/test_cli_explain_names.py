"""What ``explain`` takes, as kubectl reads names: pods and workloads mixed (issue 28: it refused
``deploy/app``), ``TYPE NAME…``, and bare pod names as it always read them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubectl_fluid.cli.errors import CliError
from kubectl_fluid.cli.explain import parse_names
from kubectl_fluid.cli.workloads import EXPLAINED_KINDS, Kind, words_for
from kubectl_fluid.kube import resources

NAME = st.from_regex(r"[a-z0-9]([a-z0-9.-]{0,20}[a-z0-9])?", fullmatch=True)


def _read(args: list[str]) -> list[tuple[str | None, str]]:
    return [(k.resource.kind if k else None, n) for k, n in parse_names(args)]


@pytest.mark.parametrize(
    ("args", "read"),
    [
        (["pod/a", "deploy/b"], [(None, "a"), ("Deployment", "b")]),
        (["a", "b", "a"], [(None, "a"), (None, "b")]),
        (["po", "a", "b"], [(None, "a"), (None, "b")]),
        (["replicaset", "web-5d9c7"], [("ReplicaSet", "web-5d9c7")]),
        (
            ["rs/x", "statefulset.apps/db", "ds/agent"],
            [("ReplicaSet", "x"), ("StatefulSet", "db"), ("DaemonSet", "agent")],
        ),
        (
            ["job/once", "cj/nightly", "deployment.v1.apps/web"],
            [("Job", "once"), ("CronJob", "nightly"), ("Deployment", "web")],
        ),
    ],
)
def test_names_as_kubectl_reads_them(args: list[str], read: list[tuple[str | None, str]]) -> None:
    assert _read(args) == read


@pytest.mark.parametrize("args", [["svc/web"], ["pod/a", "svc/b"], ["deploy/"], ["a/b/c"], ["deploy", "x/y"]])
def test_what_it_does_not_take_is_one_error_naming_what_it_takes(args: list[str]) -> None:
    with pytest.raises(CliError, match="explain takes pods and workloads, as pod/NAME or deploy"):
        parse_names(args)


@given(kind=st.sampled_from(EXPLAINED_KINDS), name=NAME, data=st.data())
def test_every_spelling_of_every_kind(kind: Kind, name: str, data: st.DataObject) -> None:
    word = data.draw(st.sampled_from(sorted(words_for(kind))))
    assert parse_names([f"{word}/{name}"]) == [(kind, name)]
    assert parse_names([word, name]) == [(kind, name)]
    assert resources.PODS not in {k.resource for k in EXPLAINED_KINDS}
