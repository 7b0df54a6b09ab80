"""First-visit transfer size and load time of dashboard pages in a real browser.

    .venv/bin/python bench/bench_page_load.py BASE_URL RUNS PAGE... [--mbit M]

Against a running server (e.g. `crowdqrels serve` on a database with RF10 and a few fits), for
each PAGE (a path such as `/ui/` or `/ui/collections/rf10`): first the wire size of the page and
of every script and style it links, asked with `Accept-Encoding: gzip`, with their
Cache-Control; then RUNS visits, each in a fresh Chromium profile (nothing cached), timed from
the browser's Navigation Timing (DOMContentLoaded, load, bytes transferred) and until every
chart is drawn. `--mbit M` emulates a link of M Mbit/s each way with 20 ms latency (Chrome
DevTools). Chromium and chromedriver: Debian's (`scripts/install-browser.sh`).

To compare two versions, serve each on its own port over a copy of the same database and
alternate single visits between them (RUNS = 1 in a loop), so both see the same machine load.
"""

from __future__ import annotations

import argparse
import re
import statistics
import time

import httpx
from selenium import webdriver
from selenium.webdriver.chrome.service import Service


def browser(mbit: float) -> webdriver.Chrome:
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1280,900", "--no-proxy-server"):
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))
    if mbit:
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd("Network.emulateNetworkConditions", {
            "offline": False, "latency": 20, "downloadThroughput": mbit * 125_000,
            "uploadThroughput": mbit * 125_000})
    return driver


def wire_sizes(base: str, page: str) -> None:
    with httpx.Client(base_url=base, timeout=120) as client:
        response = client.get(page, headers={"accept-encoding": "gzip"})
        print(f"{page}: HTML {response.num_bytes_downloaded:,} B on the wire, "
              f"cache-control={response.headers.get('cache-control')!r}")
        for asset in re.findall(r'(?:src|href)="(/ui/static/[^"]+)"', response.text):
            r = client.get(asset, headers={"accept-encoding": "gzip"})
            print(f"   {asset}: {r.num_bytes_downloaded:,} B on the wire ({len(r.content):,} B "
                  f"decoded), encoding={r.headers.get('content-encoding')}, "
                  f"cache-control={r.headers.get('cache-control')!r}")


def first_visits(base: str, page: str, runs: int, mbit: float) -> None:
    loads, dcls, sizes, drawn = [], [], [], []
    for _ in range(runs):
        driver = browser(mbit)
        try:
            start = time.monotonic()
            driver.get(base + page)
            for _ in range(400):  # until loaded and every chart drawn (app.js marks them)
                if driver.execute_script("return document.readyState") == "complete" and not \
                        driver.execute_script("return document.querySelectorAll("
                                              "'.chart[data-figure]:not([data-rendered])').length"):
                    break
                time.sleep(0.02)
            drawn.append(time.monotonic() - start)
            dcl, load, size = driver.execute_script(
                "const n = performance.getEntriesByType('navigation')[0];"
                "const r = performance.getEntriesByType('resource');"
                "return [n.domContentLoadedEventEnd - n.startTime, n.loadEventEnd - n.startTime,"
                " n.transferSize + r.reduce((s, x) => s + x.transferSize, 0)]")
            dcls.append(dcl)
            loads.append(load)
            sizes.append(size)
        finally:
            driver.quit()
    print(f"{page}: first visit, {runs} fresh profiles: transferred "
          f"{statistics.median(sizes) / 1e6:.2f} MB, DOMContentLoaded "
          f"{statistics.median(dcls) / 1000:.2f} s, load {statistics.median(loads) / 1000:.2f} s "
          f"(loads {[round(x / 1000, 2) for x in loads]}), charts drawn "
          f"{statistics.median(drawn):.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("base")
    parser.add_argument("runs", type=int)
    parser.add_argument("pages", nargs="+")
    parser.add_argument("--mbit", type=float, default=0.0)
    args = parser.parse_args()
    for page in args.pages:
        wire_sizes(args.base, page)
    for page in args.pages:
        first_visits(args.base, page, args.runs, args.mbit)


if __name__ == "__main__":
    main()
