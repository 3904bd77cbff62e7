"""Issue 27, item 4, through the real API server: one namespace creating 40 pods a second, each naming
56 datasets that do not exist, never gets another namespace's pod refused, and what its flood costs
the API server is bounded by the webhook's memory of 404s and by the namespace's budget, not by its
number of pods.

The reviewer measured, before: team-b's pod alone allowed; while team-a flooded, refused after 3.0 s
(the lookup deadline), and 13,496 GETs, 56 a pod. Here team-b's pods each need a direct GET of their
own (their runtime config is a ConfigMap the webhook's watch does not hold, as for one created a
moment before its pod), so they compete with team-a's misses for the webhook's lookups."""

from __future__ import annotations

import asyncio
import re
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from kubectl_fluid.api import names
from tests.e2e.fluid import E2E_NAMESPACE_LABEL, WebhookProcess, kubectl, metric_sum
from tests.e2e.podload import Answer, create_pods, pod
from tests.e2e.test_controller import Fluid, dataset
from tests.e2e.wait import as_json, eventually
from webhook.budgets import NAMESPACE_BURST, NAMESPACE_RATE
from webhook.notfound import NOT_FOUND_SECONDS

RATE, SECONDS, NAMES = 40, 5.0, 56
TEAM_B_PODS = 10


@pytest.fixture
def team_b(core: client.CoreV1Api, webhook: WebhookProcess) -> Iterator[str]:
    """A second namespace, with Dataset ds1 whose runtime config the webhook can only GET."""
    name = f"e2e-team-b-{secrets.token_hex(3)}"
    core.create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name=name, labels={E2E_NAMESPACE_LABEL: "true"}))
    )
    try:
        eventually(lambda: core.read_namespaced_service_account("default", name), f"ServiceAccount in {name}")
        yield name
    finally:
        core.delete_namespace(name)


def runtime_config_unwatched(fl: Fluid, ds: str) -> None:
    """Dataset ``ds`` and its runtime config, without the managed-by label the webhook's ConfigMap
    watch selects: every admission naming ``ds`` then needs a direct GET."""
    fl.create(dataset(ds))
    fl.core.create_namespaced_config_map(
        fl.ns,
        {
            "metadata": {"name": names.runtime_config_configmap(ds)},
            "data": {names.RUNTIME_JSON_KEY: "{}", names.RUNTIME_SH_KEY: "#!/bin/sh\n"},
        },
    )


@dataclass
class TeamB:
    outcomes: list[tuple[float, str]]  # (seconds to the answer, "" when admitted else the refusal)
    stored: list[dict[str, Any]]


def flood(
    kubeconfig: Path, team_a: str, fl_b: Fluid, datasets: Callable[[int], str]
) -> tuple[list[Answer], TeamB, float]:
    """team-a's pods (pod i names ``datasets(i)``) at RATE a second for SECONDS, and meanwhile
    TEAM_B_PODS of team-b's, one after another; returns team-a's answers, team-b's, and how long it
    all took."""
    team_b = TeamB([], [])
    labels = {names.LABEL_INJECT: names.TRUE}

    def create_team_b(i: int) -> None:
        started = time.monotonic()
        body = pod(i, labels, {names.ANNOTATION_DATASET: "ds1"})
        try:
            created = fl_b.core.create_namespaced_pod(fl_b.ns, body)
        except client.ApiException as e:
            team_b.outcomes.append((time.monotonic() - started, str(e.body)))
        else:
            team_b.outcomes.append((time.monotonic() - started, ""))
            team_b.stored.append(as_json(created))

    async def during() -> None:
        for i in range(TEAM_B_PODS):
            await asyncio.sleep(SECONDS / (TEAM_B_PODS + 1))
            await asyncio.to_thread(create_team_b, i)

    started = time.monotonic()
    answers = asyncio.run(
        create_pods(
            kubeconfig,
            team_a,
            rate=RATE,
            seconds=SECONDS,
            body=lambda i: pod(i, labels, {names.ANNOTATION_DATASET: datasets(i)}),
            labelled=lambda i: True,
            during=during,
        )
    )
    return answers, team_b, time.monotonic() - started


def dataset_gets(webhook: WebhookProcess) -> float:
    return webhook.metric("fluid_webhook_api_requests_total", {"resource": "datasets"})


def apiserver_dataset_gets(kubeconfig: Path) -> float:
    """GETs of Datasets the API server itself counted (from any client)."""
    text = kubectl(kubeconfig, "get", "--raw", "/metrics")
    return metric_sum(text, "apiserver_request_total", {"resource": "datasets", "verb": "GET"})


def check_team_b(team_b: TeamB) -> None:
    refused = [message for _, message in team_b.outcomes if message]
    print(
        f"team-b: {len(team_b.outcomes) - len(refused)}/{len(team_b.outcomes)} admitted, slowest "
        f"{max(took for took, _ in team_b.outcomes):.2f}s"
    )
    assert refused == [], refused[0]
    assert len(team_b.stored) == TEAM_B_PODS
    for stored in team_b.stored:
        volumes = {v["name"] for v in stored["spec"].get("volumes", [])}
        assert names.runtime_config_volume("ds1") in volumes, stored["metadata"]["name"]


def summary(answers: list[Answer]) -> dict[str, int]:
    """team-a's refusals by kind."""
    kinds: dict[str, int] = {}
    for answer in answers:
        assert answer.status != 201, "team-a's pods name datasets that do not exist"
        kind = "not found" if "not found" in answer.message else re.sub(r'"[^"]*"', '""', answer.message)[:90]
        kinds[kind] = kinds.get(kind, 0) + 1
    return kinds


def test_pods_naming_the_same_missing_datasets_cost_a_get_per_name_and_another_namespace_is_served(
    k8s: client.ApiClient, kubeconfig: Path, namespace: str, team_b: str, webhook: WebhookProcess
) -> None:
    fl_b = Fluid(k8s, team_b)
    runtime_config_unwatched(fl_b, "ds1")
    gets, seen = dataset_gets(webhook), apiserver_dataset_gets(kubeconfig)
    missing = ",".join(f"gone-{i:02}" for i in range(NAMES))
    answers, team_b_answers, took = flood(kubeconfig, namespace, fl_b, lambda i: missing)
    spent, counted = dataset_gets(webhook) - gets, apiserver_dataset_gets(kubeconfig) - seen
    kinds = summary(answers)
    print(
        f"team-a: {len(answers)} pods in {took:.1f}s, {kinds}; {spent:.0f} Dataset GETs ({counted:.0f} seen)"
    )
    check_team_b(team_b_answers)
    # One GET per name whenever its 404 is forgotten (every NOT_FOUND_SECONDS), one round more for
    # the round under way when the flood ended; the reviewer's run made one per name and pod.
    # Per worker: each has its own 404 memory (``--workers``).
    rounds = 2 + int(took / NOT_FOUND_SECONDS)
    assert spent <= NAMES * rounds * webhook.serving_processes(), (
        f"{spent} Dataset GETs for {len(answers)} pods"
    )
    assert counted >= spent
    assert kinds.get("not found", 0) == len(answers), kinds


def test_a_namespace_past_its_budget_is_refused_saying_so_and_another_namespace_is_served(
    k8s: client.ApiClient, kubeconfig: Path, namespace: str, team_b: str, webhook: WebhookProcess
) -> None:
    fl_b = Fluid(k8s, team_b)
    runtime_config_unwatched(fl_b, "ds1")
    gets = dataset_gets(webhook)
    answers, team_b_answers, took = flood(
        kubeconfig, namespace, fl_b, lambda i: ",".join(f"p{i}-{j:02}" for j in range(NAMES))
    )
    spent = dataset_gets(webhook) - gets
    kinds = summary(answers)
    print(f"team-a: {len(answers)} pods in {took:.1f}s, {kinds}; {spent:.0f} Dataset GETs")
    check_team_b(team_b_answers)
    # Each worker has its own budget (``--workers``).
    budget = (NAMESPACE_BURST + NAMESPACE_RATE * took) * webhook.serving_processes()
    assert spent <= budget, f"{spent} Dataset GETs for {len(answers)} pods"
    over = [a.message for a in answers if "too many lookups" in a.message]
    assert over, kinds
    assert f'too many lookups of datasets not in its cache in namespace "{namespace}"' in over[0]
    assert "retry in a few seconds" in over[0]
    assert webhook.metric("fluid_webhook_lookups_over_budget_total") >= len(over)
