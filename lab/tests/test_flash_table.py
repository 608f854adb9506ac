# SPDX-License-Identifier: MIT
"""tools/flash_table.py: its parsing, table, breakdown and README handling on stand-in
figures, and one real measurement on Cortex-M3 (skipped without arm-none-eabi-gcc).
`make flash-table` runs the whole tool against the README."""

from __future__ import annotations

import dataclasses
import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def tool(monkeypatch):
    spec = importlib.util.spec_from_file_location("flash_table", ROOT / "tools" / "flash_table.py")
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, mod)   # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def _sizes(tool, progs):
    """Distinct figures for every cell, tlsf's level-1 goal met exactly and its level-0 goal missed by one."""
    sizes = {}
    for i, p in enumerate(progs):
        for level in (tool.LEVELS if (p.dropin is not None) else (None,)):
            for j, t in enumerate(tool.TARGETS):
                for k, opt in enumerate(tool.OPTS):
                    sizes[(p.name, level, t.key, opt)] = 1000 * i + 100 * (level or 0) + 10 * j + k
    for t in tool.TARGETS:
        for opt in tool.OPTS:
            sizes[("baseline", None, t.key, opt)] = 24
    sizes[("tlsf", 1, "cortex-m3", "-Os")] = 1600
    sizes[("tlsf", 0, "cortex-m3", "-Os")] = 1101
    return sizes


def test_flash_bytes_is_text_plus_data(tool):
    out = ("   text\t   data\t    bss\t    dec\t    hex\tfilename\n"
           "    504\t    100\t  65568\t  66172\t  1027c\tlibc.elf\n")
    assert tool.flash_bytes(out) == 604
    with pytest.raises(tool.FlashError):
        tool.flash_bytes("size: libc.elf: file format not recognized\n")


def test_table(tool):
    progs = tool.programs()
    text = tool.table(progs, _sizes(tool, progs))
    lines = text.splitlines()
    assert lines[0] == ("| allocator | level | Cortex-M3 -Os | Cortex-M3 -O2 | RV32 -Os | RV32 -O2 "
                        "| lean target (Cortex-M3 -Os) |")
    assert "| **tlsf** | 1 | 1,600 | 101 | 110 | 111 | ≤ 1,600: met |" in lines
    assert "| **tlsf** | 0 | 1,101 | 1 | 10 | 11 | ≤ 1,100: missed |" in lines
    assert "| **tlsf** | 2 | 200 | 201 | 210 | 211 |  |" in lines
    o1heap = next(i for i, p in enumerate(progs) if p.name == "o1heap")
    assert f"| o1heap (peer) | – | {1000 * o1heap:,} |" in text
    assert "| newlib-nano / picolibc malloc (peer) | – |" in text
    rows = [l for l in lines if l.startswith("| ") and "allocator" not in l]
    assert len(rows) == 3 * sum((p.dropin is not None) for p in progs) + sum(not (p.dropin is not None) for p in progs)
    assert "beyond a bare main (Cortex-M3 24 / 24, RV32 24 / 24 bytes at -Os / -O2)" in " ".join(text.split())


def test_pool_program_follows_the_header(tool):
    today = tool.pool_program("hk_pool_t *hk_pool_create(hk_heap_t *backing, size_t block_size, size_t n);\n"
                              "/* hk_pool_init(): not yet */\n")
    assert "hk_pool_create" in tool.source(today) and today.note
    landed = tool.pool_program("hk_pool_t *hk_pool_init(void *arena, size_t size, size_t block_size,\n"
                               "                        hk_status_t *status);\n")
    assert "hk_pool_init(arena, sizeof arena, 100, &status)" in tool.source(landed)
    assert "bump" not in tool.source(landed) and not landed.note


def test_breakdown_adds_up(tool):
    base = tool.parse_nm("00008000 00000018 T main\n0000a380 00000004 B sink\n")
    prog = tool.parse_nm(
        "00008000 00000034 T main\n"
        "00008040 00000100 T free\n"
        "00008040 00000100 T cfree\n"        # an alias: one line
        "00008140 00000008 r table\n"
        "00008150 00000030 T __riscv_save_12\n"   # runs on into save_8: counted up to it
        "00008158 00000028 T __riscv_save_8\n"
        "20000000 00000064 d impure_data\n"
        "0000a380 00000004 B sink\n"
        "0000a390 00010000 b arena\n")
    delta = (0x34 - 0x18) + 0x100 + 8 + 8 + 0x28 + 0x64 + 6
    lines = tool.breakdown(prog, base, delta)
    assert lines[0] == (0x100, "cfree (also free)")
    assert (8, "__riscv_save_12") in lines and (0x28, "__riscv_save_8") in lines
    assert (0x64, "impure_data") in lines and (8, "table") in lines
    assert lines[-2] == (0x1C, "main's growth over the baseline's main")
    assert lines[-1][0] == 6
    assert sum(n for n, _ in lines) == delta
    assert not any("arena" in w or "sink" in w for _, w in lines)


@pytest.fixture()
def readme(tool, monkeypatch, tmp_path):
    path = tmp_path / "README.md"
    path.write_text("# x\n\n<!-- flash_table: sizes -->\nold\n<!-- /flash_table -->\n\ntext\n")
    progs = tool.programs()
    monkeypatch.setattr(tool, "README", path)
    monkeypatch.setattr(tool, "check_tools", lambda targets: None)
    monkeypatch.setattr(tool, "peer_sources", lambda root: {})
    monkeypatch.setattr(tool, "measure", lambda progs_, build, jobs: (_sizes(tool, progs), {}))
    return path


def test_check_then_write(tool, readme, capsys):
    assert tool.main(["--check"]) == 1
    out = capsys.readouterr()
    assert "-old" in out.out and "+| **tlsf** | 1 | 1,600 |" in out.out and "--write" in out.err
    assert "old" in readme.read_text()
    assert tool.main(["--write"]) == 0
    text = readme.read_text()
    assert text.startswith("# x\n\n<!-- flash_table: sizes -->\n| allocator |")
    assert text.endswith("<!-- /flash_table -->\n\ntext\n")
    assert tool.main(["--check"]) == 0


def test_readme_without_the_block(tool, readme, capsys):
    readme.write_text("# x\n")
    assert tool.main(["--check"]) == 2
    assert "flash_table: sizes" in capsys.readouterr().err


def test_missing_toolchain_is_one_line(tool, monkeypatch, capsys, tmp_path):
    gone = dataclasses.replace(tool.TARGETS[0], cc="no-such-arm-gcc")
    monkeypatch.setattr(tool, "TARGETS", (gone, *tool.TARGETS[1:]))
    assert tool.main(["--build", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no-such-arm-gcc not found" in err


needs_arm = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="needs arm-none-eabi-gcc")


@needs_arm
def test_real_tlsf_on_cortex_m3(tool, tmp_path):
    t = next(x for x in tool.TARGETS if x.key == "cortex-m3")
    tlsf = next(p for p in tool.programs() if p.name == "tlsf")
    sizes, elfs = tool.measure([tlsf], tool.Build(tmp_path), 2, (t,), ("-Os",), (1,))
    base = sizes[("baseline", None, "cortex-m3", "-Os")]
    delta = sizes[("tlsf", 1, "cortex-m3", "-Os")]
    assert 0 < base < 100, "a bare main is a few instructions"
    assert delta > 500, "init, malloc and free of a TLSF are more than a few hundred bytes"
    nm = tool.run([t.nm, "-S", str(elfs[("tlsf", 1, "cortex-m3", "-Os")])], "nm")
    base_nm = tool.run([t.nm, "-S", str(elfs[("baseline", None, "cortex-m3", "-Os")])], "nm")
    lines = tool.breakdown(tool.parse_nm(nm), tool.parse_nm(base_nm), delta)
    names = {w for _, w in lines}
    assert {"hk_tlsf_init", "hk_tlsf_malloc", "hk_tlsf_free"} <= names
    assert sum(n for n, _ in lines) == delta and lines[-1][0] >= 0


@needs_arm
def test_failed_compile_is_reported(tool, tmp_path):
    t = next(x for x in tool.TARGETS if x.key == "cortex-m3")
    broken = tool.Program("broken", malloc="hk_no_such_call(heap, 100")
    with pytest.raises(tool.FlashError, match=r"compiling broken\.c for Cortex-M3 -Os failed: .*error"):
        tool.measure([broken], tool.Build(tmp_path), 1, (t,), ("-Os",))
