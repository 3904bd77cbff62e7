"""``kind/name`` as kubectl spells it, for ``inject``: aliases, qualified kinds, both argument forms,
and refusals that say what to do."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubectl_fluid.cli.errors import CliError
from kubectl_fluid.cli.workloads import WORKLOAD_KINDS, parse_target, words_for
from kubectl_fluid.kube import resources
from kubectl_fluid.kube.resources import CRONJOBS, JOBS

DNS_NAME = st.from_regex(r"[a-z0-9]([a-z0-9.-]{0,30}[a-z0-9])?", fullmatch=True)


@pytest.mark.parametrize(
    ("args", "kind", "name"),
    [
        (["deploy/x"], resources.DEPLOYMENTS, "x"),
        (["deployment/x"], resources.DEPLOYMENTS, "x"),
        (["deployments.apps/x"], resources.DEPLOYMENTS, "x"),
        (["Deployment.v1.apps/x"], resources.DEPLOYMENTS, "x"),
        (["sts/db-0"], resources.STATEFULSETS, "db-0"),
        (["statefulset", "db"], resources.STATEFULSETS, "db"),
        (["ds/agent"], resources.DAEMONSETS, "agent"),
        (["job/once"], JOBS, "once"),
        (["jobs.batch/once"], JOBS, "once"),
        (["cronjob/nightly"], CRONJOBS, "nightly"),
        (["cj/nightly"], CRONJOBS, "nightly"),
    ],
)
def test_kinds_and_forms(args: list[str], kind: resources.Resource, name: str) -> None:
    target = parse_target(args)
    assert (target.kind.resource, target.name) == (kind, name)


def test_a_target_prints_as_kubectl_names_changed_objects() -> None:
    assert str(parse_target(["deploy/x"])) == "deployment.apps/x"
    assert str(parse_target(["cj/x"])) == "cronjob.batch/x"


def test_the_cronjob_template_is_one_level_deeper() -> None:
    assert parse_target(["cj/x"]).kind.template_path == ("spec", "jobTemplate", "spec", "template")
    assert parse_target(["deploy/x"]).kind.template_path == ("spec", "template")


@pytest.mark.parametrize("word", ["pod", "po", "pods", "Pod"])
def test_a_bare_pod_is_refused_with_the_reason(word: str) -> None:
    with pytest.raises(CliError, match="spec is immutable") as e:
        parse_target([f"{word}/web"])
    assert "explain pod/web" in str(e.value)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["rs/x"], "unsupported kind; use deploy, sts, ds, job or cronjob"),
        (["x"], "write KIND/NAME, for example deploy/x"),
        (["deploy/"], "is not KIND/NAME"),
        (["/x"], "is not KIND/NAME"),
        (["deploy/a/b"], "is not KIND/NAME"),
        (["deploy/a", "b"], "expected one workload"),
        ([], "expected one workload"),
    ],
)
def test_mistakes_say_what_to_write(args: list[str], says: str) -> None:
    with pytest.raises(CliError, match=says):
        parse_target(args)


@given(kind=st.sampled_from(WORKLOAD_KINDS), name=DNS_NAME, data=st.data())
def test_every_spelling_of_every_kind_in_both_forms(kind: object, name: str, data: st.DataObject) -> None:
    from kubectl_fluid.cli.workloads import Kind

    assert isinstance(kind, Kind)
    word = data.draw(st.sampled_from(sorted(words_for(kind))))
    assert parse_target([f"{word}/{name}"]) == parse_target([word, name])
    assert parse_target([f"{word.upper()}/{name}"]).kind == kind


def test_no_spelling_belongs_to_two_kinds() -> None:
    seen: dict[str, str] = {}
    for kind in WORKLOAD_KINDS:
        for word in words_for(kind):
            assert seen.setdefault(word, kind.resource.kind) == kind.resource.kind
