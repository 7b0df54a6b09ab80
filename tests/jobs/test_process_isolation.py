"""A GP fit through the real server: TensorFlow loads in the fit's process, never in the API's."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from models.synthetic import generate

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_gp_fit_keeps_tensorflow_out_of_the_api_process(tmp_path) -> None:
    generate(200, 20, noise_level=(2.0, 4.0), redundancy=3, random_state=1).write(tmp_path)
    port = _free_port()
    env = {**os.environ, "CROWDQRELS_DATABASE_URL": f"sqlite:///{tmp_path / 'api.db'}"}
    server = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--port", str(port), "--log-level", "warning"],
        cwd=ROOT, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base, timeout=30) as client:
            for _ in range(300):
                try:
                    if client.get("/healthz").status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.1)
            client.post("/api/v1/collections", json={"name": "s", "labels": [0, 1]})
            client.post("/api/v1/collections/s/judgments/file",
                        content=(tmp_path / "judgments.tsv").read_bytes(),
                        headers={"content-type": "text/tab-separated-values"}).raise_for_status()
            client.put("/api/v1/collections/s/features",
                       content=(tmp_path / "features.tsv").read_bytes(),
                       headers={"content-type": "text/tab-separated-values"}).raise_for_status()
            created = client.post("/api/v1/collections/s/aggregations",
                                  json={"method": "magp", "seed": 1}).json()
            deadline = time.monotonic() + 600
            while True:
                body = client.get(f"/api/v1/aggregations/{created['id']}").json()
                if body["status"] in ("succeeded", "failed", "cancelled"):
                    break
                assert time.monotonic() < deadline, body
                time.sleep(0.5)
            assert body["status"] == "succeeded", body["error"]
            assert body["fallback"] is None
            prediction = client.post(f"/api/v1/aggregations/{created['id']}/predict",
                                     json={"features": [[3.0, -2.0], [-2.0, 3.0]]})
            assert prediction.status_code == 200, prediction.text
            p = prediction.json()["p_relevant"]
            assert p[0] > 0.5 > p[1]  # class +1 lies towards [1, 0], class -1 towards [0, 1]
            wrong = client.post(f"/api/v1/aggregations/{created['id']}/predict",
                                json={"features": [[1.0]]})
            assert wrong.status_code == 422 and wrong.json()["code"] == "invalid_features"
            # The dashboard's collection page lists every method with its defaults.
            assert client.get("/ui/collections/s").status_code == 200
            assert client.get("/healthz").json()["tensorflow_loaded"] is False
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_validating_gp_parameters_does_not_import_tensorflow() -> None:
    """The API validates every method's parameters and the dashboard shows their defaults;
    neither may load TensorFlow."""
    code = (
        "import sys\n"
        "from models.registry import METHOD_PATHS, get_method, validate_params\n"
        "for method in METHOD_PATHS:  # every method, as the dashboard lists their defaults\n"
        "    validate_params(method, {})\n"
        "    get_method(method).defaults\n"
        "import app.main\n"
        "assert 'tensorflow' not in sys.modules, 'tensorflow was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_a_spare_job_process_waits_without_tensorflow() -> None:
    """The in-process runner's spare imports every job body and every model but the GP ones
    while it waits: an idle spare holds no TensorFlow (110 MB, not a GP's gigabyte)."""
    code = (
        "import importlib, sys\n"
        "from app.jobs.child import preload\n"
        "names = preload()\n"
        "assert {'app.aggregations.job', 'models.dawid_skene', 'models.ordinal_ds'} <= set(names)\n"
        "for name in names:\n"
        "    importlib.import_module(name)\n"
        "assert 'tensorflow' not in sys.modules, 'tensorflow was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
