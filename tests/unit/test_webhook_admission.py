"""One AdmissionReview through ``Admission`` and ``ClusterLookup`` (SPEC §4), with the API server's GET
replaced by an in-memory one that counts its calls: the cache-miss path, its bounds (the memory of
404s, shared GETs, each namespace's budget and slots) and the size of every denial. The same paths run
against a real API server in tests/e2e/test_webhook.py and test_webhook_misses.py."""

from __future__ import annotations

import asyncio
import base64
import time
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubectl_fluid.api import names
from kubectl_fluid.kube import resources
from tests.unit.webhook_samples import NS, dataset, default_profile, injection_pod, runtime_config
from webhook.admission import Admission
from webhook.budgets import Budgets
from webhook.cache import MAX_CONCURRENT_GETS, NAMESPACE_CONCURRENT_GETS, ClusterLookup
from webhook.notfound import NOT_FOUND_SECONDS

Obj = dict[str, Any]
MAX_DENIAL_BYTES = 1024


class FakeApi:
    """What the API server would answer to a GET by path, with the calls and their concurrency seen."""

    def __init__(self, objects: list[Obj] = (), delay: float = 0.0) -> None:  # type: ignore[assignment]
        self.objects: dict[str, Obj] = {}
        for obj in objects:
            self.add(obj)
        self.delay = delay
        self.calls = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.held: dict[str, asyncio.Event] = {}  # namespace -> its GETs wait for this

    def add(self, obj: Obj) -> None:
        resource = resources.DATASETS if obj["kind"] == "Dataset" else resources.CONFIGMAPS
        meta = obj["metadata"]
        self.objects[resource.object_path(meta["namespace"], meta["name"])] = obj

    async def get(self, resource: resources.Resource, namespace: str, name: str) -> Obj | None:
        self.calls += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
            if namespace in self.held:
                await self.held[namespace].wait()
            return self.objects.get(resource.object_path(namespace, name))
        finally:
            self.in_flight -= 1


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _lookup(api: FakeApi, **settings: Any) -> ClusterLookup:
    """A ClusterLookup whose watch caches never sync (every read is a miss) and whose GET is ``api``."""
    lookup = ClusterLookup(None, **settings)  # type: ignore[arg-type]
    lookup._get = api.get  # type: ignore[method-assign]
    return lookup


def _review(pod: Obj, uid: str = "u", namespace: str = NS) -> Obj:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": uid, "namespace": namespace, "operation": "CREATE", "object": pod},
    }


def _answer(admission: Admission, pod: Obj) -> Obj:
    response: Obj = asyncio.run(admission.review(_review(pod)))["response"]
    return response


def _message(response: Obj) -> str:
    assert response["allowed"] is False, response
    message: str = response["status"]["message"]
    return message


def _ready(name: str, namespace: str = NS) -> list[Obj]:
    return [dataset(name, namespace), runtime_config(name, namespace)]


def test_a_dataset_fetched_on_a_miss_is_used_even_when_the_miss_cache_is_full() -> None:
    """Each admission below fetches a Dataset and its ConfigMap the watch has not delivered yet (as for
    a Dataset created just before its pod). However many came before, each pod finds its own. (One
    pod every 0.1 s: 2,400 GETs at once would be over the namespace's budget.)"""
    api = FakeApi()
    clock = Clock()
    admission = Admission(_lookup(api, clock=clock), default_profile())
    for i in range(1200):
        ds = f"fresh-{i}"
        for obj in _ready(ds):
            api.add(obj)
        response = _answer(admission, injection_pod(ds))
        assert response["allowed"], f"admission {i}: {response['status']['message']}"
        assert "patch" in response
        clock.now += 0.1


def test_a_pod_naming_thousands_of_datasets_gets_one_short_denial_and_no_lookup() -> None:
    api = FakeApi()
    admission = Admission(_lookup(api), default_profile())
    many = ",".join(f"ds-{i}" for i in range(5000))
    message = _message(_answer(admission, injection_pod(many)))
    assert len(message.encode()) < MAX_DENIAL_BYTES
    assert "5000 datasets" in message
    assert "at most 64" in message
    assert api.calls == 0


def test_the_limit_is_a_setting() -> None:
    api = FakeApi([obj for i in range(3) for obj in _ready(f"ds{i}")])
    admission = Admission(_lookup(api), default_profile(), max_datasets=2)
    assert "at most 2" in _message(_answer(admission, injection_pod("ds0,ds1,ds2")))
    assert _answer(admission, injection_pod("ds0,ds1"))["allowed"]


@pytest.mark.parametrize("bad", ["a.b", "Ds1", "1ds", "ds-", "-ds", "ds_1", "x" * 43, "d s"])
def test_names_that_cannot_be_datasets_are_refused_before_any_lookup(bad: str) -> None:
    api = FakeApi(_ready("ds1"))
    admission = Admission(_lookup(api), default_profile())
    message = _message(_answer(admission, injection_pod(f"ds1,{bad}")))
    assert "DNS-1035" in message or "at most 42" in message
    assert api.calls == 0


def test_misses_are_fetched_once_a_name_and_with_bounded_concurrency() -> None:
    """Three pods naming the same 64 fresh datasets at once share each GET; one namespace has at most
    its share of the slots in flight, several namespaces together all of them."""
    spaces = [NS, "team-b", "team-c"]
    api = FakeApi([obj for ns in spaces for i in range(64) for obj in _ready(f"ds{i}", ns)], delay=0.01)
    admission = Admission(_lookup(api), default_profile())
    wanted = ",".join(f"ds{i}" for i in range(64))

    async def pods(namespaces: list[str]) -> list[Obj]:
        return await asyncio.gather(
            *(
                admission.review(_review(injection_pod(wanted), f"u{i}", ns))
                for i, ns in enumerate(namespaces)
            )
        )

    answers = asyncio.run(pods([NS] * 3))
    assert all(a["response"]["allowed"] for a in answers)
    assert api.calls == 2 * 64
    assert api.max_in_flight == NAMESPACE_CONCURRENT_GETS

    api.calls = 0
    answers = asyncio.run(pods(spaces[1:]))
    assert all(a["response"]["allowed"] for a in answers)
    assert api.calls == 2 * 2 * 64
    assert api.max_in_flight == MAX_CONCURRENT_GETS


def test_a_name_answered_404_is_remembered_until_its_time_is_up() -> None:
    api = FakeApi()
    clock = Clock()
    admission = Admission(_lookup(api, clock=clock), default_profile())
    for _ in range(50):
        assert (
            _message(_answer(admission, injection_pod("ds9")))
            == f'dataset "ds9" not found in namespace "{NS}"'
        )
    assert api.calls == 1
    clock.now += NOT_FOUND_SECONDS
    _answer(admission, injection_pod("ds9"))
    assert api.calls == 2


def test_the_watch_bringing_a_name_forgets_its_404_and_the_pod_is_admitted() -> None:
    api = FakeApi()
    lookup = _lookup(api)
    admission = Admission(lookup, default_profile())
    assert not _answer(admission, injection_pod("late"))["allowed"]
    assert len(lookup.not_found) == 1
    for obj in _ready("late"):
        api.add(obj)
    # The watch's ADDED event, as WatchCache applies it.
    lookup.datasets._apply({"type": "ADDED", "object": dataset("late")})
    assert len(lookup.not_found) == 0
    assert _answer(admission, injection_pod("late"))["allowed"]


def test_a_namespace_over_its_budget_is_refused_at_once_saying_so_and_another_is_served() -> None:
    api = FakeApi([*_ready("ds1", "team-b")])
    clock = Clock()
    lookup = _lookup(api, clock=clock, budgets=Budgets(burst=10, rate=1))
    admission = Admission(lookup, default_profile())

    def pod_in(namespace: str, datasets: str) -> Obj:
        response: Obj = asyncio.run(admission.review(_review(injection_pod(datasets), namespace=namespace)))
        return response["response"]  # type: ignore[no-any-return]

    assert "not found" in _message(pod_in(NS, ",".join(f"a{i}" for i in range(10))))
    assert api.calls == 10
    message = _message(pod_in(NS, "b1"))
    assert api.calls == 10
    assert message.startswith(
        'fluid webhook refused pod "app-*": too many lookups of datasets not in its cache'
    )
    assert f'in namespace "{NS}"' in message
    assert "retry in a few seconds" in message
    assert f"kubectl get datasets -n {NS}" in message
    assert pod_in("team-b", "ds1")["allowed"], "another namespace's budget is its own"
    assert "not found" in _message(pod_in(NS, "a1")), "a name remembered costs no budget"
    clock.now += 1
    assert "not found" in _message(pod_in(NS, "b1")), "the budget refills"


def test_one_namespaces_stalled_misses_leave_slots_for_another() -> None:
    """team-a's GETs hang (a slow API server, or thousands queued): team-b's pod, needing GETs of its
    own, is admitted all the same, not refused at the deadline."""
    api = FakeApi(_ready("ds1", "team-b"))
    api.held[NS] = asyncio.Event()
    admission = Admission(_lookup(api), default_profile(), lookup_deadline=2)
    flood = ",".join(f"missing-{i}" for i in range(64))

    async def run() -> tuple[Obj, int]:
        team_a = [
            asyncio.create_task(admission.review(_review(injection_pod(flood), f"a{i}"))) for i in range(4)
        ]
        await asyncio.sleep(0.05)
        held = api.in_flight
        team_b = await admission.review(_review(injection_pod("ds1"), "b", "team-b"))
        api.held[NS].set()
        await asyncio.gather(*team_a)
        return team_b["response"], held

    team_b, held = asyncio.run(run())
    assert held == NAMESPACE_CONCURRENT_GETS
    assert team_b["allowed"], team_b


def test_a_missing_dataset_costs_one_get_and_a_present_one_two() -> None:
    api = FakeApi(_ready("ds1"))
    admission = Admission(_lookup(api), default_profile())
    assert (
        _message(_answer(admission, injection_pod("ds9"))) == f'dataset "ds9" not found in namespace "{NS}"'
    )
    assert api.calls == 1
    assert _answer(admission, injection_pod("ds1"))["allowed"]
    assert api.calls == 3


def _patched_volumes(response: Obj) -> list[str]:
    if "patch" not in response:
        return []
    ops = orjson.loads(base64.b64decode(response["patch"]))
    return sorted(op["value"]["name"] for op in ops if op["path"] == "/spec/volumes/-")


def test_sixty_four_missing_datasets_are_one_short_denial_naming_the_first() -> None:
    api = FakeApi()
    admission = Admission(_lookup(api), default_profile())
    message = _message(_answer(admission, injection_pod(",".join(f"ds{i:02}" for i in range(64)))))
    assert len(message.encode()) < MAX_DENIAL_BYTES
    assert message.startswith(f'dataset "ds00" not found in namespace "{NS}"')
    assert "more" in message


# Plausible names, names no Dataset can have, references to other namespaces, very long entries.
# (Each kind of entry alone in a list: a single odd entry would otherwise decide every denial.)
dataset_name = st.from_regex(r"[a-z][a-z0-9-]{0,41}", fullmatch=True)
odd_name = st.text(st.sampled_from("ab1-. éX_"), max_size=300)
foreign = st.builds(lambda ns, n: f"{ns}/{n}", st.text("ab-/", max_size=100), dataset_name)
# Lists of every length up to twice the limit, not just the short ones hypothesis favours.
entries = st.sampled_from(
    [dataset_name, odd_name, foreign, st.one_of(dataset_name, odd_name, foreign)]
).flatmap(lambda entry: st.integers(0, 130).flatmap(lambda n: st.lists(entry, min_size=n, max_size=n)))


@settings(max_examples=150, deadline=None)
@given(entries, st.text(max_size=300))
def test_every_denial_stays_under_1_kib(entries: list[str], pod_name: str) -> None:
    api = FakeApi(_ready("a"))
    admission = Admission(_lookup(api), default_profile())
    pod = injection_pod(",".join(entries))
    pod["metadata"]["name"] = pod_name
    response = _answer(admission, pod)
    if not response["allowed"]:
        assert len(_message(response).encode()) < MAX_DENIAL_BYTES
    else:
        assert set(_patched_volumes(response)) <= {names.runtime_config_volume("a")}


def test_lookups_slower_than_the_deadline_deny_the_pod_in_time() -> None:
    api = FakeApi(_ready("ds1"), delay=30)
    admission = Admission(_lookup(api), default_profile(), lookup_deadline=0.2)
    started = time.monotonic()
    message = _message(_answer(admission, injection_pod("ds1")))
    assert time.monotonic() - started < 2
    assert message.startswith('fluid webhook could not read the datasets of pod "app-*" from the API server')
    assert "within 0.2s" in message
    assert api.in_flight == 0, "the GETs given up on are cancelled"


def test_an_admission_works_out_the_pods_datasets_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server collects a pod's datasets to know what to fetch; the pipeline acts on that very
    result rather than collecting again (it was ~15% of an admission's time). The real collect() is
    wrapped only to count its calls."""
    import webhook.admission
    import webhook.pipeline
    from webhook.collect import collect

    calls: list[str] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[1])
        return collect(*args, **kwargs)

    monkeypatch.setattr(webhook.admission, "collect", counted)
    monkeypatch.setattr(webhook.pipeline, "collect", counted)
    api = FakeApi(_ready("once"))
    response = _answer(Admission(_lookup(api), default_profile()), injection_pod("once"))
    assert response["allowed"], response
    assert "patch" in response
    assert calls == [NS]
