# SPDX-License-Identifier: MIT
# Catalog entries under test (include/heapkit/catalog.h), shared by the host
# suite (tests/CMakeLists.txt) and the bare-metal one (ports/baremetal/tests);
# test_catalog fails if this list and the catalog disagree.
set(HEAPKIT_ENTRIES bump seqfit-first seqfit-next seqfit-best seqfit-worst buddy buddy-lazy buddy-fib buddy-weighted
    tlsf poolset lfpool dmm-wince dmm-winxp dmm-lea dmm-ose dmm-uclinux dmm-net)
