# SPDX-License-Identifier: MIT
"""The screenshots of docs/viewer.md, and the timings it quotes, from real traces.

    .venv/bin/python tools/viewer_shots.py FIRMWARE.hkfw FIRMWARE.elf [--out docs/img]

FIRMWARE.hkfw is the recorder's stream of the firmware-trace example (make firmware-trace
leaves build/firmware-trace/tlsf.hkfw and fw_tlsf.elf); the scale figures are measured on
data/traces/aosp/surfaceflinger.zip. Headless Debian chromium through selenium, as the
tests drive it; prints the page sizes, load and cursor times.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

ROOT = Path(__file__).resolve().parents[1]
HEAPKIT = [sys.executable, "-m", "heapkit"]


def browser(profile: str) -> webdriver.Chrome:
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for a in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              f"--user-data-dir={profile}", "--window-size=1280,1500", "--hide-scrollbars"):
        opts.add_argument(a)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)


def view(trace: str, out: Path, *args: str) -> float:
    t0 = time.time()
    subprocess.run([*HEAPKIT, "view", trace, "-o", str(out), *args], check=True)
    return time.time() - t0


def shot(d, element_id: str, path: Path) -> None:
    d.find_element("id", element_id).screenshot(str(path))
    print(f"wrote {path} ({path.stat().st_size:,} bytes)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stream")
    ap.add_argument("elf")
    ap.add_argument("--out", default=str(ROOT / "docs" / "img"))
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="heapkit-shots-"))
    d = browser(str(tmp / "profile"))
    try:
        fw = tmp / "fw.html"
        view(a.stream, fw, "--alloc", "tlsf,freertos-heap4", "--elf", a.elf, "--checkpoint", "steady")
        d.get(fw.as_uri())
        rec = d.execute_script("return window.heapkitView.snapshotRecords('tlsf')")
        d.execute_script("window.heapkitView.setCursor(arguments[0])", rec[len(rec) * 3 // 4])
        d.execute_script("document.getElementById('colorby').value = 'task';"
                         "document.getElementById('colorby').dispatchEvent(new Event('change'))")
        # Hover a used block in the middle of the tlsf map: its tooltip.
        from selenium.webdriver.common.action_chains import ActionChains
        ActionChains(d).move_to_element(d.find_element("id", "map-tlsf")).perform()
        shot(d, "app", out / "viewer-page.png")
        shot(d, "icicle", out / "viewer-icicle.png")
        shot(d, "leaks", out / "viewer-leaks.png")

        sf = tmp / "sf.html"
        build_s = view(str(ROOT / "data" / "traces" / "aosp" / "surfaceflinger.zip"), sf, "--alloc", "tlsf,buddy")
        t0 = time.time()
        d.get(sf.as_uri())
        wall = time.time() - t0
        ready = d.execute_script("return window.heapkitView.ready")
        n = d.execute_script("return JSON.parse(document.getElementById('hk-data').textContent).records")
        times = [d.execute_script("return window.heapkitView.setCursor(arguments[0])", int(n * f / 20))
                 for f in range(1, 20)]
        d.execute_script("document.getElementById('colorby').value = 'task';"
                         "document.getElementById('colorby').dispatchEvent(new Event('change'))")
        shot(d, "app", out / "viewer-surfaceflinger.png")
        times.sort()
        print(f"surfaceflinger.zip: {n:,} records; heapkit view {build_s:.1f} s; page {sf.stat().st_size:,} bytes; "
              f"load {wall:.2f} s (page ready {ready:.0f} ms after navigation start); cursor to 19 places: "
              f"median {times[9]:.0f} ms, max {times[-1]:.0f} ms")
    finally:
        d.quit()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
