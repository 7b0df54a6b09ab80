"""Pages and plots (issue 35, item 6): the heatmap's colours follow the printed values, the fits
table shows which fit started warm from which."""

from __future__ import annotations

from app.ui import charts
from tests.api.helpers import API, create_collection
from tests.api.jobs import wait_for


def test_cells_that_print_alike_are_coloured_alike() -> None:
    figure = charts.heatmap(["a", "b"], ["a", "b"], [[1.0, 0.99996], [0.99996, 1.0]],
                            title="agreement", x="fit", y="fit")
    assert figure is not None
    trace = figure["data"][0]
    assert trace["text"] == [["1.000", "1.000"], ["1.000", "1.000"]]
    assert trace["zmin"] < 0.99996 and trace["zmax"] == 1.0  # both at the scale's top
    close = charts.heatmap(["a", "b"], ["a"], [[0.9994, 0.99996]], title="t", x="x", y="y")
    assert close is not None  # .999 and 1.000: the scale over the printed values
    assert (close["data"][0]["zmin"], close["data"][0]["zmax"]) == (0.999, 1.0)
    spread = charts.heatmap(["a", "b"], ["a"], [[0.5, 0.75]], title="t", x="x", y="y")
    assert spread is not None and "zmin" not in spread["data"][0]  # the values' own range


def test_the_fits_table_names_the_warm_start(client) -> None:
    create_collection(client, name="warm", labels=[0, 1], relevant_from=1)
    judgments = [{"topic": "t", "doc": f"d{i}", "annotator": f"w{j}", "label": (i * j) % 2}
                 for i in range(8) for j in range(3)]
    assert client.post(f"{API}/collections/warm/judgments",
                       json={"judgments": judgments}).status_code == 201
    first = client.post(f"{API}/collections/warm/aggregations", json={"method": "ds"}).json()
    assert wait_for(client, first["id"])["status"] == "succeeded"
    second = client.post(f"{API}/collections/warm/aggregations",
                         json={"method": "ds", "warm_start": first["id"]}).json()
    assert wait_for(client, second["id"])["status"] == "succeeded"
    page = client.get("/ui/collections/warm").text
    row = page.split(f'data-aggregation="{second["id"]}"')[1].split("</tr>")[0]
    assert f'warm from <a href="/ui/aggregations/{first["id"]}">#{first["id"]}</a>' in row
    cold = page.split(f'data-aggregation="{first["id"]}"')[1].split("</tr>")[0]
    assert "warm from" not in cold
