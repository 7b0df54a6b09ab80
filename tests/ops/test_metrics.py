"""GET /metrics (Prometheus) and the request log: route templates as labels (never a
collection's name or an annotator's id), the request id, and who may read the metrics."""

from __future__ import annotations

import json
import logging
import re

import pytest
from fastapi.testclient import TestClient

from app.core.config import Settings
from app.core.logs import REQUEST_LOGGER, JsonFormatter
from app.main import create_app
from tests.auth.conftest import bearer, make_key

JUDGMENTS = "topic\tdoc\tannotator\tlabel\n" + "".join(
    f"t{t}\td{d}\tannotator-xyz-{a}\t{(t + d + a) % 2}\n"
    for t in range(3) for d in range(4) for a in range(3))


def sample(body: str, name: str, **labels: str) -> float:
    """The value of the sample ``name{labels}`` in an exposition (0 when absent)."""
    for line in body.splitlines():
        if not line.startswith(name + "{") and line.split(" ")[0] != name:
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line.rsplit(" ", 1)[0]))
        if all(found.get(k) == v for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_metrics_name_route_templates_and_count_judgments(client: TestClient) -> None:
    before = client.get("/metrics").text
    client.post("/api/v1/collections", json={"name": "secret-collection", "labels": [0, 1]})
    reply = client.post("/api/v1/collections/secret-collection/judgments/file",
                        content=JUDGMENTS.encode(),
                        headers={"content-type": "text/tab-separated-values"})
    assert reply.status_code == 201, reply.text
    assert client.get("/api/v1/collections/secret-collection").status_code == 200
    assert client.get("/api/v1/collections/no-such-collection").status_code == 404
    body = client.get("/metrics").text
    assert "secret-collection" not in body and "no-such-collection" not in body
    assert "annotator-xyz" not in body
    route = "/api/v1/collections/{c}"
    count = "crowdqrels_http_request_duration_seconds_count"
    assert sample(body, count, route=route, method="GET", status="200") - sample(
        before, count, route=route, method="GET", status="200") == 1
    assert sample(body, count, route=route, method="GET", status="404") - sample(
        before, count, route=route, method="GET", status="404") == 1
    ingested = "crowdqrels_judgments_ingested_total"
    assert sample(body, ingested, source="file") - sample(before, ingested, source="file") == 36
    assert sample(body, "crowdqrels_jobs", kind="fit", status="queued") == 0
    assert "crowdqrels_http_requests_in_flight" in body
    assert "crowdqrels_cache_entries" in body or "crowdqrels_jobs" in body


def test_request_id_is_echoed_and_logged(client: TestClient, caplog) -> None:
    with caplog.at_level(logging.INFO, logger=REQUEST_LOGGER):
        given = client.get("/api/v1/collections", headers={"X-Request-ID": "abc-123"})
        made = client.get("/api/v1/collections/nope")
        bad = client.get("/healthz", headers={"X-Request-ID": "no spaces <allowed>"})
    assert given.headers["x-request-id"] == "abc-123"
    assert re.fullmatch(r"[0-9a-f]{32}", made.headers["x-request-id"])
    assert bad.headers["x-request-id"] != "no spaces <allowed>"
    lines = [json.loads(JsonFormatter().format(r)) for r in caplog.records
             if r.name == REQUEST_LOGGER]
    assert [(line["request_id"], line["route"], line["status"]) for line in lines] == [
        ("abc-123", "/api/v1/collections", 200),
        (made.headers["x-request-id"], "/api/v1/collections/{c}", 404),
        (bad.headers["x-request-id"], "/healthz", 200)]
    assert all(line["duration_ms"] >= 0 and line["method"] == "GET" for line in lines)


@pytest.mark.parametrize("public", [False, True])
def test_metrics_need_the_admin_scope_unless_public(database_url: str, public: bool) -> None:
    settings = Settings(database_url=database_url, environment="test", auth="required",
                        warm_startup_s=0, metrics_public=public)
    admin = make_key(database_url, "admin", "admin")
    reader = make_key(database_url, "reader", "read")
    with TestClient(create_app(settings)) as client, caplog_json() as lines:
        anonymous = client.get("/metrics")
        as_reader = client.get("/metrics", headers=bearer(reader))
        as_admin = client.get("/metrics", headers=bearer(admin))
    assert as_admin.status_code == 200
    assert "crowdqrels_http_request_duration_seconds" in as_admin.text
    if public:
        assert (anonymous.status_code, as_reader.status_code) == (200, 200)
    else:
        assert anonymous.status_code == 401 and anonymous.json()["code"] == "missing_api_key"
        assert as_reader.status_code == 403
        assert as_reader.json()["code"] == "insufficient_scope"
    # the log names the key that authenticated the request by its public prefix, never whole
    prefixes = [line.get("key_prefix") for line in lines]
    assert prefixes == [None, None, None] if public else [None, reader.split("_")[1],
                                                           admin.split("_")[1]]
    assert admin not in json.dumps(lines)


class caplog_json:  # noqa: N801  (a context manager read like a function)
    """The request log's lines, as JSON, while the block runs."""

    def __enter__(self) -> list[dict[str, object]]:
        self.lines: list[dict[str, object]] = []
        lines = self.lines

        class Keep(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                lines.append(json.loads(JsonFormatter().format(record)))

        self.handler = Keep()
        logger = logging.getLogger(REQUEST_LOGGER)
        self.level = logger.level
        logger.setLevel(logging.INFO)
        logger.addHandler(self.handler)
        return self.lines

    def __exit__(self, *exc: object) -> None:
        logger = logging.getLogger(REQUEST_LOGGER)
        logger.removeHandler(self.handler)
        logger.setLevel(self.level)


def test_the_grafana_dashboard_reads_metrics_that_exist() -> None:
    from pathlib import Path

    from app.core import metrics

    names = {m._name for m in vars(metrics).values() if hasattr(m, "_name")} | {
        "crowdqrels_jobs"}
    dashboard = Path(__file__).resolve().parents[2] / "deploy/grafana/dashboards/crowdqrels.json"
    exprs = [t["expr"] for p in json.loads(dashboard.read_text())["panels"] for t in p["targets"]]
    used = {re.sub(r"_(bucket|count|sum|total)$", "", n)
            for e in exprs for n in re.findall(r"crowdqrels_\w+", e)}
    assert used and used <= {re.sub(r"_total$", "", n) for n in names}, used - names
