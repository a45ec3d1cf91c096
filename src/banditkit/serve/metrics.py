"""Prometheus metrics of the service: request counts and latencies, commits, policy counts.

    banditkit_serve_requests_total{policy, endpoint, code}       requests answered
    banditkit_serve_request_seconds{policy, endpoint}            time in the service (histogram)
    banditkit_serve_commit_seconds                               one group commit (histogram)
    banditkit_serve_commit_events                                events per group commit
    banditkit_serve_<count>_total{policy}                        decisions, feedbacks, defaults,
                                                                 updates, late, duplicates
    banditkit_serve_{pending,buffered,model_version,log_position}{policy}   current values
    banditkit_serve_gc_pause_seconds{generation}                 one collection of Python's
                                                                 cyclic garbage collector,
                                                                 which stops every thread

Each app has its own registry (several services can live in one process, as in tests).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["Metrics"]

_LATENCY_BUCKETS = (
    0.0005,
    0.001,
    0.002,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
)
_BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
_COUNTERS = ("decisions", "feedbacks", "defaults", "updates", "late", "duplicates")
_GAUGES = {
    "pending": "decisions waiting for feedback inside their join window",
    "buffered": "feedbacks waiting for the next learning step",
    "version": "model version (learning steps so far)",
    "log_position": "position of the policy's last logged event",
}


class _PolicyCounts:
    """A collector reading the policies' counts at scrape time."""

    def __init__(self, statuses: Callable[[], dict[str, dict[str, Any]]]) -> None:
        self.statuses = statuses

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        status = self.statuses()
        for name in _COUNTERS:
            family = CounterMetricFamily(
                f"banditkit_serve_{name}", f"{name} of each policy", labels=["policy"]
            )
            for pid, st in status.items():
                family.add_metric([pid], st[name])
            yield family
        for name, text in _GAUGES.items():
            metric = "model_version" if name == "version" else name
            gauge = GaugeMetricFamily(
                f"banditkit_serve_{metric}", text, labels=["policy"]
            )
            for pid, st in status.items():
                gauge.add_metric([pid], st[name])
            yield gauge


class Metrics:
    """The service's metrics in their own registry.

    Args:
        statuses: The served policies' counts by id (called at each scrape).
    """

    def __init__(self, statuses: Callable[[], dict[str, dict[str, Any]]]) -> None:
        from prometheus_client import CollectorRegistry, Counter, Histogram

        self.registry = CollectorRegistry()
        self.requests = Counter(
            "banditkit_serve_requests",
            "requests answered",
            ["policy", "endpoint", "code"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "banditkit_serve_request_seconds",
            "time from the request's arrival to its reply",
            ["policy", "endpoint"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.commit_seconds = Histogram(
            "banditkit_serve_commit_seconds",
            "one group commit of the event log",
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.commit_events = Histogram(
            "banditkit_serve_commit_events",
            "events written by one group commit",
            buckets=_BATCH_BUCKETS,
            registry=self.registry,
        )
        self.gc_seconds = Histogram(
            "banditkit_serve_gc_pause_seconds",
            "one collection of the cyclic garbage collector (every thread waits)",
            ["generation"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.registry.register(_PolicyCounts(statuses))
        self._children: dict[tuple[str, str, int], tuple[Any, Any]] = {}
        self._gc_started = 0.0

    def collecting(self, phase: str, info: dict[str, Any]) -> None:
        """A ``gc.callbacks`` entry: time each collection of the garbage collector."""
        if phase == "start":
            self._gc_started = time.perf_counter()
        elif self._gc_started:
            seconds = time.perf_counter() - self._gc_started
            self._gc_started = 0.0
            self.gc_seconds.labels(str(info.get("generation", ""))).observe(seconds)

    def committed(self, seconds: float, events: int) -> None:
        """Record one group commit."""
        self.commit_seconds.observe(seconds)
        self.commit_events.observe(events)

    def answered(self, policy: str, endpoint: str, code: int, seconds: float) -> None:
        """Record one answered request (each label set's children looked up once)."""
        key = (policy, endpoint, code)
        children = self._children.get(key)
        if children is None:
            children = self._children[key] = (
                self.requests.labels(policy, endpoint, str(code)),
                self.latency.labels(policy, endpoint),
            )
        count, latency = children
        count.inc()
        latency.observe(seconds)

    def text(self) -> bytes:
        """The Prometheus text exposition."""
        from prometheus_client import generate_latest

        return generate_latest(self.registry)
