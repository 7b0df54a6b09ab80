"""Behaviour pinned byte for byte on the real RF10 file, through the offline CLI and the API.

The digests below were recorded on the code before the fit pipeline was shared by the CLI and
the service (issue 37): a refactoring must leave the qrels, the task and annotator tables, the
printed evaluation and the API's downloads unchanged. A change that means to alter them records
new digests here (``CROWDQRELS_PIN_PRINT=1`` prints them) and says why in its commit.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
from pathlib import Path

import pytest

from app.cli import main as cli
from tests.api.helpers import API, TSV, create_collection
from tests.api.jobs import wait_for

SEED = "7"
PRINT = os.environ.get("CROWDQRELS_PIN_PRINT") == "1"

# name -> the options of ``crowdqrels aggregate`` (on RF10, --seed 7)
CLI_RUNS = {
    "mv": ["--method", "mv"],
    "mace": ["--method", "mace", "--params", '{"n_restarts": 2}'],
    "ds": ["--method", "ds"],
    "ibcc": ["--method", "ibcc"],
    "ebcc": ["--method", "ebcc"],
    "ds-clamp-folds": ["--method", "ds", "--clamp-gold", "--folds", "3"],
    "ibcc-calibrate": ["--method", "ibcc", "--calibrate", "3"],
    "ordinal-ds-graded": ["--method", "ordinal-ds", "--graded"],
    "ordinal-ds-expected": ["--method", "ordinal-ds", "--graded", "--grade", "expected",
                            "--relevant-from", "2"],
}

# name -> sha256 of qrels, annotators table, tasks table, printed report (in that order)
CLI_DIGESTS: dict[str, tuple[str, str, str, str]] = {
    'mv': (
        "8b904255f711baabb576187b5efd249f1f4fbb611a848b64320ae3be3076e140",
        "65526347a610ebfe728a8f25b47c6b048456a6df299f7d64bd28ca3c2efbe5bc",
        "df473893c7ec99472a1368a674f38fcdb71d3274fc20d778c081c7e95c933d54",
        "d372469dd32858b583f852099e3ae0a17f750754f26d8f4f4c23864f7fc2305b",
    ),
    'mace': (
        "f6bb69b44f3ddfe00dede280e49a37d6f4f9a88e1a82ed26568a2208ba027473",
        "8a27f8269138436a272deeeba06a7208548df7374e0444d6ba2577403b3c317f",
        "3d2403a86848d98c3727f00760ebbc31c1a85c51652fd0c6e3cca38d122f98b8",
        "7e3985249e112c044a05bafda20f9e9faeda9c7e98d42f9820b096b45a946126",
    ),
    'ds': (
        "af039abc62d5acb4a25b1a8f70396541f7c41c081e1e751174c5cd767d1061bc",
        "b15a987afc0d1b4c21efe994bd40ed204b55a7c0bcc26c3f3a308c3c3f0c0360",
        "bb343a8bc221c5625e58b6ecfc3601049dd9286c62d175302a1e82cc4e9b8185",
        "6092717dbfa4c88e98539c62a57b9f7fa488bedc59960263a81242fd364ea75a",
    ),
    'ibcc': (
        "fe6d090af879ae7a8cc30ab113a5af1c0335a43fa5729d288c1353c8f18a5a71",
        "2b8b21ff67cc12c7916852f6f4c193d854473c879af86c47514e4f937b840b51",
        "d87ffc5e0915da2d5216da994a227f42d1bf355baf1ae1e23cf4fadbe1ca65b9",
        "08947d923a7584a0ef95c6433a45ea99ae07a0c25d3c0df5533f9233b28519f1",
    ),
    'ebcc': (
        "5aeadeea41ef940b01cf5b32157eab6da2e52f95e47afe5e47b3c21631c26c17",
        "2e49451d53c3b208d1601c2d19b23475cb58f6bedfd09b7fff168aa49cf39480",
        "18eec53d8cae35b2bbab1a19f1ad7e29941a89318e08d6cc9bf5a6b62f9d3559",
        "399101a20c9e290664ce0d598e8916846e283566777131eb59d3b35b1320d6eb",
    ),
    'ds-clamp-folds': (
        "ba7bbd55c0045f174ca76bd2b991ce5bafcd3ff20e76203ba4d413bdce67ad47",
        "7f81417f2d44dbcbbab12539dfc365b58f93c52284e2443205fe284fa41d72a6",
        "096ded6a25aafff32ff7085502f97a6a3d6fa3eea38dc93000003bf7a42acb85",
        "4c2040c2d01ab638239dcdd237ff4c66f6af0dcc2eada26a566325904d892569",
    ),
    'ibcc-calibrate': (
        "67656736f7b284a46c0b37149171fba229020c12eda6dc699934cc76d5156a10",
        "01a347038f6dd1eeaeb73e8b60c7ee6c573d126e26f73df595361aa5f5ccfe5d",
        "7e46663cedfffe7082fc74e5805d58ecc794459652c10b15e7f34052718292b6",
        "cd79bf7e07158fbecf99aa8e797dbc552e3f537e4499f637720d3af9c288b1d2",
    ),
    'ordinal-ds-graded': (
        "18bad1d2c8138cd93e57a02f2d70dcc4a5c7fc12dc985893ee084b183a1c4552",
        "6da5be879c94ac222f34a719b47375182358e1a5db27fd6d521f94fe21fdc276",
        "217eb81496c3ebad5e3ec50ac2177cf89a3c77a164e34d45160c518fab347adb",
        "02e545ec6317b8c06ea96bc3ebbab067fb9706c15cc546e6d0d91afc514121ef",
    ),
    'ordinal-ds-expected': (
        "417049f3a6d7923071a6f151420cf630ff9b01777290fb2f785d8a1af1ce6604",
        "6da5be879c94ac222f34a719b47375182358e1a5db27fd6d521f94fe21fdc276",
        "1acc54179792dd2c18f341bc854ea0d2cdc78e4bbb80e53c1e6054b477248d30",
        "03638e705cac9c9c0df96b2ded984d0679b58d55606cc11efe760847b0569b6c",
    ),
}

# name -> the fit request's body, through the API on a SQLite database
API_RUNS = {
    "ds": {"method": "ds", "seed": 7},
    "mace": {"method": "mace", "seed": 7, "params": {"n_restarts": 2}},
    "ibcc-clamped": {"method": "ibcc", "seed": 7, "params": {"use_gold": True}},
    "ordinal-ds": {"method": "ordinal-ds", "seed": 7, "graded": True},
}

# name -> sha256 of qrels TREC, qrels TSV, annotators JSON (canonical, without the added
# fields), tasks JSON, fit summary JSON
API_DIGESTS: dict[str, tuple[str, str, str, str, str]] = {
    'ds': (
        "af039abc62d5acb4a25b1a8f70396541f7c41c081e1e751174c5cd767d1061bc",
        "1b331d73d27b3be44674dbfbfd2b9ad61580beb22455a34de1179c0155b1d339",
        "b49cd75cf772d6222deb08a45ed72f8868301f69fbbbdf3531c293df0d714866",
        "231af142dbd791f490711d4723c5d6f44dd5902c34207e27b3f918115e13d2e2",
        "1be15da0f5e9c401110e42334bc7cf181abd8cb02fd43ec4eb771fe3f6c34b71",
    ),
    'mace': (
        "f6bb69b44f3ddfe00dede280e49a37d6f4f9a88e1a82ed26568a2208ba027473",
        "54ae3a827ab1a5692f5dcf59eeabd106821c23952054091bb0f64b591ec18250",
        "4056af93ca24d1ca97ce70c22da94b57d2714bdd2e4a9c613f2450a9dddc4978",
        "2c943a5c46eb0a17255312bf56a3cb6fcc07ee32cd89697268ada3d23d6ac3d9",
        "c075de32789adb9b556bd38047455083960b8f68466d8e498d41c8a9a057b41b",
    ),
    'ibcc-clamped': (
        "983e154b9162317dfa94c9a3b680feef27e8da8e2c6b6c4102d045dea5216cf3",
        "a0cb06c0731494f679689b640aeec75053befc7d68631465c5d070ae83df1fbe",
        "5eecf89c9c322411ddfb476b5bc40f60d0767c1c422e3f6b1ba780bbac94a77e",
        "3303ca8d38d7a7bf2f16ec4b0871df34e520ab3bc0dc2a015f34e5a535e7a8f0",
        "345772b74ea3da12b2013a6c3fd9142422b61ffa7c617c80bcdf3c098ff43ce4",
    ),
    'ordinal-ds': (
        "18bad1d2c8138cd93e57a02f2d70dcc4a5c7fc12dc985893ee084b183a1c4552",
        "1af479cf3f20b8ebc71a9b3cce8c19484428970b994fdc03681f620912b3737f",
        "4bb161cdf8676cffdf80edaef06d6892d298b925ca825ba595acfa279878e667",
        "36af587d839b27afce26e615d121e8c296d02dc5c6c394558044819604cd3978",
        "6182c37d352bf5e5fa476edc035eca2cef508814220d98d638bfe3b7bda47e82",
    ),
}


# Fields the API added to its answers after the digests were recorded (DESIGN: "add fields
# freely"): left out, so the digests still pin everything the answers said before. ``kind``:
# the annotator's kind (llm, expert, crowd), issue 38.
ADDED_ANNOTATOR_FIELDS = frozenset({"kind"})


def _without(page: dict, fields: frozenset[str]) -> str:
    """The annotators page as canonical JSON without ``fields`` in its rows."""
    rows = [{k: v for k, v in row.items() if k not in fields} for row in page["data"]]
    return json.dumps({**page, "data": rows}, sort_keys=True)


def _sha(data: str | bytes) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()


def _record(table: dict, name: str, digests: tuple) -> None:
    if PRINT:
        print(f"\n    {name!r}: {digests!r},")
        return
    assert name in table, f"no digests recorded for {name}"
    assert digests == table[name]


@pytest.mark.parametrize("name", list(CLI_RUNS))
def test_offline_cli_outputs_are_unchanged(rf10_path: Path, tmp_path: Path, name: str) -> None:
    out = {kind: tmp_path / f"{name}.{kind}" for kind in ("qrels", "annotators", "tasks")}
    report = io.StringIO()
    with contextlib.redirect_stdout(report):
        code = cli(["aggregate", str(rf10_path), *CLI_RUNS[name], "--seed", SEED, "--quiet",
                    "--output", str(out["qrels"]), "--annotators", str(out["annotators"]),
                    "--tasks", str(out["tasks"])])
    assert code == 0
    digests = (*(_sha(out[kind].read_bytes()) for kind in ("qrels", "annotators", "tasks")),
               _sha(report.getvalue()))
    _record(CLI_DIGESTS, name, digests)


@pytest.fixture(scope="module")
def rf10_api(rf10_path: Path, sqlite_url: str, tmp_path_factory: pytest.TempPathFactory):
    """One SQLite application with RF10 ingested (labels 0, 1, 2; relevant from 1)."""
    from fastapi.testclient import TestClient

    from app.core.config import Settings
    from app.main import create_app
    from tests.conftest import clean_tables

    clean_tables(sqlite_url)
    settings = Settings(database_url=sqlite_url, environment="test", warm_startup_s=0,
                        max_body_bytes=8 * 1024 * 1024)
    raw = rf10_path.read_bytes()
    with TestClient(create_app(settings)) as client:
        create_collection(client)
        response = client.post(f"{API}/collections/rf10/judgments/file", content=raw,
                               headers=TSV)
        assert response.status_code == 201, response.text
        yield client
    clean_tables(sqlite_url)


@pytest.mark.parametrize("name", list(API_RUNS))
def test_api_downloads_are_unchanged(rf10_api, name: str) -> None:
    client = rf10_api
    body = API_RUNS[name]
    created = client.post(f"{API}/collections/rf10/aggregations", json=body)
    assert created.status_code == 202, created.text
    done = wait_for(client, created.json()["id"], timeout=600)
    assert done["status"] == "succeeded", done["error"]
    a = f"{API}/aggregations/{done['id']}"
    tasks = []
    while True:
        page = client.get(f"{a}/tasks", params={"limit": 10_000, "offset": len(tasks),
                                                 "sort": "topic"}).json()
        tasks.extend(page["data"])
        if len(tasks) >= page["count"]:
            break
    summary = {k: done.get(k) for k in ("evaluation", "classes", "n_judgments", "gold",
                                        "method", "params", "info")}
    digests = (
        _sha(client.get(f"{a}/qrels").content),
        _sha(client.get(f"{a}/qrels", params={"format": "tsv"}).content),
        _sha(_without(client.get(f"{a}/annotators", params={"limit": 10_000}).json(),
                      ADDED_ANNOTATOR_FIELDS)),
        _sha(json.dumps(tasks, sort_keys=True)),
        _sha(json.dumps(summary, sort_keys=True)),
    )
    _record(API_DIGESTS, name, digests)
