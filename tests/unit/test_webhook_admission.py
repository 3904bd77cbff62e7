"""One AdmissionReview through ``Admission`` and ``ClusterLookup`` (SPEC §4), with the API server's GET
replaced by an in-memory one that counts its calls: the cache-miss path, its bounds and the size of
every denial. The same paths run against a real API server in tests/e2e/test_webhook.py."""

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
from webhook.cache import MAX_CONCURRENT_GETS, ClusterLookup

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
            return self.objects.get(resource.object_path(namespace, name))
        finally:
            self.in_flight -= 1


def _lookup(api: FakeApi) -> ClusterLookup:
    """A ClusterLookup whose watch caches never sync (every read is a miss) and whose GET is ``api``."""
    lookup = ClusterLookup(None)  # type: ignore[arg-type]
    lookup._get = api.get  # type: ignore[method-assign]
    return lookup


def _review(pod: Obj, uid: str = "u") -> Obj:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": uid, "namespace": NS, "operation": "CREATE", "object": pod},
    }


def _answer(admission: Admission, pod: Obj) -> Obj:
    response: Obj = asyncio.run(admission.review(_review(pod)))["response"]
    return response


def _message(response: Obj) -> str:
    assert response["allowed"] is False, response
    message: str = response["status"]["message"]
    return message


def _ready(name: str) -> list[Obj]:
    return [dataset(name), runtime_config(name)]


def test_a_dataset_fetched_on_a_miss_is_used_even_when_the_miss_cache_is_full() -> None:
    """Each admission below fetches a Dataset and its ConfigMap the watch has not delivered yet (as for
    a Dataset created just before its pod). However many came before, each pod finds its own."""
    api = FakeApi()
    admission = Admission(_lookup(api), default_profile())
    for i in range(1200):
        ds = f"fresh-{i}"
        for obj in _ready(ds):
            api.add(obj)
        response = _answer(admission, injection_pod(ds))
        assert response["allowed"], f"admission {i}: {response['status']['message']}"
        assert "patch" in response


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


def test_misses_are_fetched_with_bounded_concurrency() -> None:
    api = FakeApi([obj for i in range(64) for obj in _ready(f"ds{i}")], delay=0.01)
    admission = Admission(_lookup(api), default_profile())
    wanted = ",".join(f"ds{i}" for i in range(64))

    async def three_pods() -> list[Obj]:
        return await asyncio.gather(
            *(admission.review(_review(injection_pod(wanted), f"u{i}")) for i in range(3))
        )

    answers = asyncio.run(three_pods())
    assert all(a["response"]["allowed"] for a in answers)
    assert api.calls == 3 * 2 * 64
    assert api.max_in_flight == MAX_CONCURRENT_GETS


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
