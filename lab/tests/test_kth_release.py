# SPDX-License-Identifier: MIT
"""buddy-kth Figure 2: the kth process under libheapkit_malloc.so with and
without HEAPKIT_RELEASE (heapkit/kth_release.py, `heapkit kth-release`).
Builds libheapkit_malloc.so and hk-kth-process if the build tree lacks them."""

import json

import pytest

from heapkit import cli, kth_release
from heapkit import render, report as rep
from heapkit.seeds import buddy_kth


@pytest.fixture(scope="module")
def small():
    return kth_release.measure(repeats=1, allocs=4000, slots=512)


def test_every_configuration_measured(small):
    names = [c["name"] for c in small["configs"]]
    assert names == [name for name, _, _ in kth_release.CONFIGS]
    for c in small["configs"]:
        s = c["series"]
        assert len(s["op"]) == len(s["mapped"]) == len(s["used"]) == len(s["free"]) >= 2
        assert s["op"][-1] == 4000
        assert c["malloc_p50"] > 0 and c["wall_ms"] > 0


def test_release_gives_regions_back_and_only_with_the_option(small):
    by = {c["name"]: c for c in small["configs"]}
    assert by["buddy-8k"]["region_unmaps"] == 0 and by["buddy"]["region_unmaps"] == 0
    assert by["buddy-8k+release"]["region_unmaps"] > 0
    assert by["buddy-8k+release"]["region_maps"] > by["buddy-8k"]["region_maps"]
    # Same request sequence, same buddy: the same bytes are live whatever the option.
    used = {by[n]["final_used"] for n in ("buddy", "buddy+release", "buddy-8k", "buddy-8k+release")}
    assert len(used) == 1
    for n in ("buddy", "buddy+release", "buddy-8k", "buddy-8k+release"):
        c = by[n]
        assert all(u <= m for u, m in zip(c["series"]["used"], c["series"]["mapped"]))
    assert by["buddy-8k+release"]["final_mapped"] <= by["buddy-8k"]["final_mapped"]


def test_figures_3_and_4_with_the_release(small):
    """Per tenth of the run for every configuration, per size level for LEVEL_CONFIGS: level 7
    (blocks of 2-4 KiB) costs the release more than level 0 does."""
    by = {c["name"]: c for c in small["configs"]}
    for c in small["configs"]:
        assert len(c["windows"]) == 10 and sum(w["calls"] for w in c["windows"]) == 4000
        assert all(w["mean"] > 0 for w in c["windows"])
        assert ("levels" in c) == (c["name"] in kth_release.LEVEL_CONFIGS)
    for name in kth_release.LEVEL_CONFIGS:
        assert [e["level"] for e in by[name]["levels"]] == list(range(kth_release.LEVELS))
    rel = by["buddy-8k+release"]["levels"]
    assert rel[7]["malloc_mean"] > rel[0]["malloc_mean"]


def test_the_process_takes_one_level_or_says_why_not():
    lib, driver = kth_release._paths()
    one = kth_release._run(driver, lib, {"HEAPKIT_REGION_MIN": "8192", "HEAPKIT_REGION_MAX": "8192"},
                           200, 16, 200, 7)
    assert one["level"] == 7 and one["timing"]["malloc"]["count"] == 200
    with pytest.raises(kth_release.HeapkitError, match="not a level 0-7"):
        kth_release._run(driver, lib, None, 200, 16, 200, 8)


def test_cli_table_and_json_the_report_takes(tmp_path, capsys):
    out = tmp_path / "kth.json"
    assert cli.main(["kth-release", "--repeats", "1", "--allocs", "2000", "--slots", "128",
                     "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "buddy-8k+release" in text and "unmaps" in text
    data = rep.load([out])
    assert data["extra"]["kth_release"]["allocs"] == 2000
    sec = buddy_kth.section_kth_release(data["extra"]["kth_release"], render.Figures())
    assert "heapkit kth-release --repeats 1 --allocs 2000 --slots 128" in sec
    assert json.loads(out.read_text())["kind"] == "heapkit-demo"


def test_cli_bad_argument_is_one_line(capsys):
    assert cli.main(["kth-release", "--repeats", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("heapkit: error: ") and "--repeats" in err[0]
