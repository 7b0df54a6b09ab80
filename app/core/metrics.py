"""The service's Prometheus metrics (prometheus-client), defined once for every process.

Label values are bounded by construction: route templates (``/api/v1/collections/{name}``,
never a collection's name), HTTP methods and status codes, job kinds, aggregation methods (the
models' registry) and job statuses, cache names. No collection name, annotator id or key ever
becomes a label value.

Several processes: ``crowdqrels serve`` (any ``--workers``) and ``crowdqrels worker`` run in
prometheus-client's multiprocess mode (``PROMETHEUS_MULTIPROC_DIR``, set by the command before
this module is imported and emptied: app.core.metrics_dir): each process, the in-process
runner's job children and Celery's pool processes included, writes its samples to files there
and a scrape sums them (``multiprocess_registry``). Without the variable (tests' applications,
the offline CLI) the metrics live in the process's default registry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    values,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead
from prometheus_client.registry import Collector

__all__ = ["CONTENT_TYPE_LATEST", "exposition"]

UNMATCHED = "unmatched"  # the route label of a request no route matched (404s of any path)

REQUEST_SECONDS = Histogram(
    "crowdqrels_http_request_duration_seconds",
    "Time to answer an HTTP request, by route template, method and status.",
    ["route", "method", "status"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)
IN_FLIGHT = Gauge(
    "crowdqrels_http_requests_in_flight", "HTTP requests being answered.",
    multiprocess_mode="livesum",
)
JOB_SECONDS = Histogram(
    "crowdqrels_job_duration_seconds",
    "Time a job ran (started to finished), by kind, method (fits) and final status.",
    ["kind", "method", "status"],
    buckets=(0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0),
)
JOBS_FAILED = Counter(
    "crowdqrels_jobs_failed_total",
    "Jobs that ended failed, by kind and method: kind=\"fit\" counts the failed fits.",
    ["kind", "method"],
)
JUDGMENTS_INGESTED = Counter(
    "crowdqrels_judgments_ingested_total", "Judgments stored, by source (json, file).",
    ["source"],
)
CACHE_ENTRIES = Gauge(
    "crowdqrels_cache_entries",
    "Entries held by the dashboard's caches (summed over the live API processes).",
    ["cache"], multiprocess_mode="livesum",
)


class ScrapeTimeGauges(Collector):
    """Gauges read at scrape time: ``sources()`` gives (name, help, labels, rows of (label
    values, value)); a source that fails is left out of that scrape."""

    def __init__(self, sources: Callable[[], Iterable[tuple[str, str, list[str],
                                                            Iterable[tuple[list[str], float]]]]]
                 ) -> None:
        self.sources = sources

    def collect(self) -> Iterable[GaugeMetricFamily]:
        for name, doc, labels, rows in self.sources():
            family = GaugeMetricFamily(name, doc, labels=labels)
            for label_values, value in rows:
                family.add_metric(label_values, value)
            yield family


def shared() -> bool:
    """Whether this process is in multiprocess mode (chosen when prometheus_client loaded)."""
    return values.ValueClass is not values.MutexValue


def multiprocess_registry(path: str) -> CollectorRegistry:
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=path)
    return registry


def exposition(multiprocess_dir: str | None, extra: Collector | None = None) -> bytes:
    """The text exposition of every process's metrics (multiprocess mode) or this process's,
    followed by ``extra``'s gauges (read now)."""
    registry = multiprocess_registry(multiprocess_dir) if multiprocess_dir else REGISTRY
    body = generate_latest(registry)
    if extra is not None:
        scraped = CollectorRegistry(auto_describe=False)
        scraped.register(extra)
        body += generate_latest(scraped)
    return body


def process_ended(pid: int) -> None:
    """A process that shared its metrics has exited: its in-flight requests and cache entries
    leave the sums (its counters and histograms stay, as Prometheus expects)."""
    if shared():
        from app.core.config import get_settings

        directory = get_settings().metrics_dir
        if directory:
            mark_process_dead(pid, directory)
