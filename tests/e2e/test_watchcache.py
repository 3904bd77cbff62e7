"""The shared list-then-watch cache against a real API server: initial list in pages, live events,
reconnects after the server's routine close, a re-list when the resourceVersion is gone, and a
resource that only appears (CRD installed) after the cache started."""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

import pytest
from kubernetes import client

from kubectl_fluid.kube import http
from kubectl_fluid.kube.backoff import Backoff
from kubectl_fluid.kube.client import connect
from kubectl_fluid.kube.resources import CONFIGMAPS, Resource
from kubectl_fluid.kube.watchcache import WatchCache

# Every namespace also holds kube-root-ca.crt: the caches select only the test's own ConfigMaps.
MINE = {"test": "watchcache"}
SELECTOR = "test=watchcache"


def cm(name: str, value: str = "1") -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels=MINE), data={"v": value})


async def until(check: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


def cached(cache: WatchCache, namespace: str, name: str) -> Callable[[], bool]:
    return lambda: cache.get(namespace, name) is not None


def with_cache(
    kubeconfig: Path, make: Callable[[Any], WatchCache], body: Callable[[WatchCache], Awaitable[None]]
) -> None:
    async def main() -> None:
        api = await connect(str(kubeconfig))
        cache = make(api)
        task = asyncio.create_task(cache.run())
        try:
            await body(cache)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    asyncio.run(main())


def test_lists_in_pages_then_follows_every_change(
    kubeconfig: Path, core: client.CoreV1Api, namespace: str
) -> None:
    for i in range(7):
        core.create_namespaced_config_map(namespace, cm(f"pre-{i}"))
    events: list[tuple[str, str]] = []

    async def body(cache: WatchCache) -> None:
        cache.add_handler(lambda ev, obj: events.append((ev, obj["metadata"]["name"])))
        await asyncio.wait_for(cache.synced.wait(), 10)
        assert sorted(o["metadata"]["name"] for o in cache.items(namespace)) == [f"pre-{i}" for i in range(7)]
        assert cache.get(namespace, "pre-0")["kind"] == "ConfigMap"

        await asyncio.to_thread(core.create_namespaced_config_map, namespace, cm("live"))
        await until(lambda: cache.get(namespace, "live") is not None, "ADDED live")
        await asyncio.to_thread(core.patch_namespaced_config_map, "live", namespace, {"data": {"v": "2"}})
        await until(lambda: (cache.get(namespace, "live") or {}).get("data") == {"v": "2"}, "MODIFIED live")
        await asyncio.to_thread(core.delete_namespaced_config_map, "pre-3", namespace)
        await until(lambda: cache.get(namespace, "pre-3") is None, "DELETED pre-3")

    # page_size 3: the initial list takes three pages.
    with_cache(
        kubeconfig,
        lambda api: WatchCache(api, CONFIGMAPS, namespace=namespace, label_selector=SELECTOR, page_size=3),
        body,
    )
    assert events[:7] == [("ADDED", f"pre-{i}") for i in range(7)]
    assert events[7:] == [("ADDED", "live"), ("MODIFIED", "live"), ("DELETED", "pre-3")]


def test_survives_the_servers_routine_close_without_relisting(
    kubeconfig: Path, core: client.CoreV1Api, namespace: str
) -> None:
    async def body(cache: WatchCache) -> None:
        await asyncio.wait_for(cache.synced.wait(), 10)
        for i in range(3):
            await asyncio.sleep(1.5)  # past the 1 s timeoutSeconds: the server has closed the watch
            await asyncio.to_thread(core.create_namespaced_config_map, namespace, cm(f"after-close-{i}"))
            await until(cached(cache, namespace, f"after-close-{i}"), f"after-close-{i}")
        assert cache.relists == 0

    with_cache(
        kubeconfig,
        lambda api: WatchCache(
            api, CONFIGMAPS, namespace=namespace, label_selector=SELECTOR, watch_timeout=1
        ),
        body,
    )


# Watched straight from etcd on the local cluster (its API server keeps no watch cache for them), so
# etcd's compaction makes an old resourceVersion answer 410 Gone, as a long outage does in production.
PODTEMPLATES = Resource("", "v1", "podtemplates", "PodTemplate", True)


def podtemplate(name: str) -> Any:  # the official client takes plain dicts as bodies
    return {
        "metadata": {"name": name, "labels": MINE},
        "template": {"spec": {"containers": [{"name": "c", "image": "example.invalid/c:1"}]}},
    }


def test_relists_when_the_resource_version_is_gone_and_reports_what_changed(
    kubeconfig: Path, core: client.CoreV1Api, namespace: str
) -> None:
    core.create_namespaced_pod_template(namespace, podtemplate("kept"))
    core.create_namespaced_pod_template(namespace, podtemplate("removed"))
    events: list[tuple[str, str]] = []

    async def main() -> None:
        api = await connect(str(kubeconfig))
        cache = WatchCache(api, PODTEMPLATES, namespace=namespace, label_selector=SELECTOR)
        task = asyncio.create_task(cache.run())
        await asyncio.wait_for(cache.synced.wait(), 10)
        # The cache goes down; meanwhile one object goes, one comes, and etcd compacts past the
        # version the cache holds.
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await asyncio.to_thread(core.delete_namespaced_pod_template, "removed", namespace)
        await asyncio.to_thread(core.create_namespaced_pod_template, namespace, podtemplate("added"))
        assert cache.resource_version is not None
        await until_gone(api, namespace, cache.resource_version)

        cache.add_handler(lambda ev, obj: events.append((ev, obj["metadata"]["name"])))
        task = asyncio.create_task(cache.run())
        try:
            await until(lambda: cache.relists >= 1, "a re-list after 410 Gone", timeout=30)
            await until(cached(cache, namespace, "added"), "added after the re-list")
            assert cache.get(namespace, "removed") is None
            assert cache.get(namespace, "kept") is not None
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    asyncio.run(main())
    assert sorted(events) == [("ADDED", "added"), ("DELETED", "removed")]


async def until_gone(api: Any, namespace: str, resource_version: str) -> None:
    """Until a watch from ``resource_version`` is refused as too old (410): etcd has compacted it."""
    params = {"watch": "1", "resourceVersion": resource_version, "timeoutSeconds": "1"}
    deadline = asyncio.get_running_loop().time() + 60
    while asyncio.get_running_loop().time() < deadline:
        try:
            async with http.stream(api, PODTEMPLATES.collection_path(namespace), params, 5) as resp:
                async for line in resp.aiter_lines():
                    if line and json.loads(line).get("object", {}).get("code") == 410:
                        return
        except http.ApiError as e:
            if e.code == 410:
                return
        await asyncio.sleep(1)
    pytest.skip(
        "this cluster did not expire an old resourceVersion within 60 s (the local control plane "
        "compacts every 10 s and keeps no watch cache for PodTemplates; other clusters may do both)"
    )


def test_waits_with_backoff_for_a_resource_that_does_not_exist_yet(
    kubeconfig: Path, k8s: client.ApiClient, namespace: str
) -> None:
    group = f"wc{secrets.token_hex(4)}.test.fluid.io"
    crd_name = f"widgets.{group}"
    ext = client.ApiextensionsV1Api(k8s)
    custom = client.CustomObjectsApi(k8s)
    widgets = Resource(group, "v1", "widgets", "Widget", True)

    async def body(cache: WatchCache) -> None:
        await asyncio.sleep(1)
        assert not cache.synced.is_set()
        assert cache.backoff.attempts >= 1  # it has been failing (404) and backing off
        await asyncio.to_thread(lambda: ext.create_custom_resource_definition(cast(Any, crd(group))))

        def make_widget() -> None:
            custom.create_namespaced_custom_object(
                group,
                "v1",
                namespace,
                "widgets",
                {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w1"}},
            )

        deadline = asyncio.get_running_loop().time() + 30
        while True:  # the CRD takes a moment to be served
            try:
                await asyncio.to_thread(make_widget)
                break
            except client.ApiException:
                if asyncio.get_running_loop().time() > deadline:
                    raise
                await asyncio.sleep(0.2)
        await until(lambda: cache.get(namespace, "w1") is not None, "the widget in the cache", timeout=30)

    try:
        with_cache(
            kubeconfig,
            lambda api: WatchCache(api, widgets, namespace=namespace, backoff=Backoff(base=0.1, cap=0.5)),
            body,
        )
    finally:
        ext.delete_custom_resource_definition(crd_name)


def crd(group: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                }
            ],
        },
    }
