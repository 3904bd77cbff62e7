"""Leader election on a coordination.k8s.io Lease, as client-go does it.

A replica acts only while it holds the Lease. Another replica's claim is judged expired by *our*
clock: from the moment we last saw the record change, not from the holder's timestamps, so clock
skew between nodes cannot make two leaders. A leader that cannot renew within ``renew_deadline``
stops acting at once (its work is cancelled) and becomes a candidate again in the same process, its
watch caches still warm: an API server outage longer than the deadline costs leadership, never the
process (no restart, no crash loop). On a clean shutdown it releases the Lease so a standby takes over
at once instead of after the lease duration.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import kr8s.asyncio

from kubectl_fluid.kube import http
from kubectl_fluid.kube.resources import LEASES

log = logging.getLogger(__name__)


class LostLeadership(Exception):
    """The Lease could not be renewed in time: stop acting now."""


def micro_time(now: datetime.datetime | None = None) -> str:
    now = now or datetime.datetime.now(datetime.UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class LeaseConfig:
    namespace: str
    name: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


class LeaderElector:
    def __init__(self, api: kr8s.asyncio.Api, config: LeaseConfig) -> None:
        self.api = api
        self.config = config
        self.is_leader = False
        self.transitions_seen = 0
        self._observed: tuple[str, str] | None = None  # (holder, renewTime) as last seen
        self._observed_at = 0.0

    @property
    def _path(self) -> str:
        return LEASES.object_path(self.config.namespace, self.config.name)

    async def run(self, lead: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Wait for the Lease, then run ``lead()`` while renewing. Raises LostLeadership if the
        Lease slips away; returns when ``lead()`` returns (and releases the Lease)."""
        cfg = self.config
        while True:
            try:
                if await self._try_acquire_or_renew():
                    break
            except Exception as e:  # the API server away: a candidate waits it out, it never exits
                log.warning("acquiring the lease failed: %s", e)
            await asyncio.sleep(cfg.retry_period)
        self.is_leader = True
        log.info("became leader", extra={"lease": f"{cfg.namespace}/{cfg.name}", "identity": cfg.identity})
        work = asyncio.create_task(lead())
        renew = asyncio.create_task(self._keep_renewing())
        try:
            done, _ = await asyncio.wait({work, renew}, return_when=asyncio.FIRST_COMPLETED)
            if renew in done:
                renew.result()  # raises LostLeadership
            work.result()
        finally:
            self.is_leader = False
            for task in (work, renew):
                task.cancel()
            await asyncio.gather(work, renew, return_exceptions=True)

    async def _keep_renewing(self) -> None:
        cfg = self.config
        last_ok = time.monotonic()
        while True:
            await asyncio.sleep(cfg.retry_period)
            try:
                if await self._try_acquire_or_renew():
                    last_ok = time.monotonic()
                    continue
            except Exception as e:  # an unreachable API server is what the deadline is for
                log.warning("renewing the lease failed: %s", e)
            if time.monotonic() - last_ok > cfg.renew_deadline:
                raise LostLeadership(
                    f"could not renew lease {cfg.namespace}/{cfg.name} for {cfg.renew_deadline:.0f}s"
                )

    async def _try_acquire_or_renew(self) -> bool:
        cfg = self.config
        now = micro_time()
        lease = await http.get(self.api, self._path)
        if lease is None:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": cfg.name, "namespace": cfg.namespace},
                "spec": self._spec(now, now, 0),
            }
            try:
                await http.request(self.api, "POST", LEASES.collection_path(cfg.namespace), body=body)
            except http.ApiError as e:
                if e.code == 409:  # another replica created it first
                    return False
                raise
            return True
        spec: dict[str, Any] = lease.get("spec", {})
        holder = spec.get("holderIdentity") or ""
        record = (holder, str(spec.get("renewTime", "")))
        if record != self._observed:
            self._observed, self._observed_at = record, time.monotonic()
        transitions = int(spec.get("leaseTransitions", 0))
        acquired = spec.get("acquireTime") or now
        if holder and holder != cfg.identity:
            duration = float(spec.get("leaseDurationSeconds", cfg.lease_duration))
            if time.monotonic() - self._observed_at < duration:
                return False
            log.info("lease of %s expired; taking over", holder)
        if holder != cfg.identity:
            transitions += 1
            acquired = now
        lease["spec"] = self._spec(acquired, now, transitions)
        try:
            # resourceVersion in the body makes this a compare-and-swap: one replica wins a race.
            await http.request(self.api, "PUT", self._path, body=lease)
        except http.ApiError as e:
            if e.code == 409:
                return False
            raise
        self.transitions_seen = transitions
        return True

    def _spec(self, acquired: str, renewed: str, transitions: int) -> dict[str, Any]:
        return {
            "holderIdentity": self.config.identity,
            "leaseDurationSeconds": round(self.config.lease_duration),
            "acquireTime": acquired,
            "renewTime": renewed,
            "leaseTransitions": transitions,
        }

    async def release(self) -> None:
        """Give the Lease up (clean shutdown): a standby acquires it on its next try."""
        try:
            lease = await http.get(self.api, self._path)
            if lease is None or lease.get("spec", {}).get("holderIdentity") != self.config.identity:
                return
            lease["spec"].update({"holderIdentity": "", "leaseDurationSeconds": 1, "renewTime": micro_time()})
            await http.request(self.api, "PUT", self._path, body=lease)
            log.info("released the lease")
        except Exception as e:
            log.warning("releasing the lease failed (a standby takes over when it expires): %s", e)
