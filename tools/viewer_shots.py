# SPDX-License-Identifier: MIT
"""The screenshots of docs/viewer.md, and the timings it quotes, from real traces.

    .venv/bin/python tools/viewer_shots.py [FIRMWARE.hkfw FIRMWARE.elf] [--out docs/img]
        [--scale TRACE] [--alloc A[,B]]

FIRMWARE.hkfw is the recorder's stream of the firmware-trace example (make firmware-trace
leaves build/firmware-trace/tlsf.hkfw and fw_tlsf.elf; without them, no firmware shots); the
scale figures are measured on --scale (default data/traces/aosp/surfaceflinger.zip) with
--alloc (default tlsf,buddy). Headless Debian chromium through selenium, as the tests drive
it; prints the page size, load and cursor times: 19 places across the trace, and a drag (the
cursor moved one record at a time, 50 times, from the middle).
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
    ap.add_argument("stream", nargs="?")
    ap.add_argument("elf", nargs="?")
    ap.add_argument("--out", default=str(ROOT / "docs" / "img"))
    ap.add_argument("--scale", default=str(ROOT / "data" / "traces" / "aosp" / "surfaceflinger.zip"))
    ap.add_argument("--alloc", default="tlsf,buddy")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="heapkit-shots-"))
    d = browser(str(tmp / "profile"))
    try:
        if a.stream:
            firmware_shots(d, a.stream, a.elf, tmp / "fw.html", out)
        scale(d, a.scale, a.alloc, tmp / "scale.html", out)
    finally:
        d.quit()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def firmware_shots(d, stream: str, elf: str, fw: Path, out: Path) -> None:
    view(stream, fw, "--alloc", "tlsf,freertos-heap4", "--elf", elf, "--checkpoint", "steady")
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


def scale(d, trace: str, alloc: str, sf: Path, out: Path) -> None:
    build_s = view(trace, sf, "--alloc", alloc)
    t0 = time.time()
    d.get(sf.as_uri())
    wall = time.time() - t0
    ready = d.execute_script("return window.heapkitView.ready")
    n = d.execute_script("return window.heapkitView.records")
    times = [d.execute_script("return window.heapkitView.setCursor(arguments[0])", int(n * f / 20))
             for f in range(1, 20)]
    drag = sorted(d.execute_script("return window.heapkitView.setCursor(arguments[0])", n // 2 + k)
                  for k in range(1, 51))
    exact = d.execute_script("return arguments[0].split(',').map((a) => window.heapkitView.exact(a))", alloc)
    d.execute_script("document.getElementById('colorby').value = 'task';"
                     "document.getElementById('colorby').dispatchEvent(new Event('change'))")
    if Path(trace).name == "surfaceflinger.zip":
        shot(d, "app", out / "viewer-surfaceflinger.png")
    times.sort()
    print(f"{Path(trace).name} --alloc {alloc}: {n:,} records; map exact: {exact}; heapkit view {build_s:.1f} s; "
          f"page {sf.stat().st_size:,} bytes; load {wall:.2f} s (page ready {ready:.0f} ms after navigation "
          f"start); cursor to 19 places: median {times[9]:.0f} ms, max {times[-1]:.0f} ms; drag (50 "
          f"records): median {drag[25]:.0f} ms, max {drag[-1]:.0f} ms")


if __name__ == "__main__":
    sys.exit(main())
