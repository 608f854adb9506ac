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
#                  core is freestanding; prints the cross-compiled size table.
#   make build     configure and build with gcc (build/gcc)
#   make venv      the lab's Python environment (.venv, the heapkit package)
#   make demo      the main job: every workload and real trace against every
#                  allocator and peer, the summary table and build/demo/report.html
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
#   make target-icount-test  the instruction counter's tests on Cortex-M3 and RV32 (QEMU);
#                  `heapkit bench --target cortex-m3|rv32` gives the counts themselves
#   make deps      install the missing Debian packages only
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

APT_PACKAGES := cmake make gcc libc6-dev libcmocka-dev clang libclang-rt-14-dev binutils \
                gcc-arm-none-eabi gcc-riscv64-unknown-elf sqlite3 python3 git time \
                libmimalloc2.0 libjemalloc2 libpcap-dev python3-dpkt \
                qemu-system-arm qemu-system-misc libnewlib-arm-none-eabi picolibc-riscv64-unknown-elf
VENV := .venv
PYTHON ?= python3

export ASAN_OPTIONS ?= detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS ?= print_stacktrace=1:halt_on_error=1

TIMING := $(BUILD)/timing.txt
# $(call timed,label,commands): run commands and log how long they took
timed = start=$$(date +%s); $(2); echo "$(1): $$(( $$(date +%s) - start )) s" >> $(TIMING)

.PHONY: demo explore test build venv lab-test deps gcc-test asan-test clang-test fuzz-build fuzz-smoke fuzz freestanding sizes clean \
        freertos-build freertos-test freertos-bench malloc-test malloc-bench \
        timing-start timing-report target-test target-icount-test corruption

test: timing-start deps venv gcc-test malloc-test lab-test asan-test clang-test freertos-test target-test target-icount-test fuzz-smoke freestanding sizes timing-report

timing-start:
	@mkdir -p $(BUILD)
	@: > $(TIMING)
	@date +%s > $(BUILD)/.test-start

timing-report:
	@echo
	@echo "== make test: time per phase"
	@cat $(TIMING)
	@echo "total: $$(( $$(date +%s) - $$(cat $(BUILD)/.test-start) )) s"

deps:
	@missing=""; \
	for p in $(APT_PACKAGES); do \
	  [ "$$(dpkg-query -W -f='$${Status}' "$$p" 2>/dev/null)" = "install ok installed" ] || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "== installing:$$missing"; \
	  apt-get update; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; \
	else \
	  echo "== packages: all present"; \
	fi

venv: $(VENV)/.installed

$(VENV)/.installed: lab/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e 'lab[test]'
	@touch $@

demo: build
	$(VENV)/bin/heapkit demo -o $(BUILD)/demo

explore: build
	$(VENV)/bin/heapkit explore --app drr easyport url-switch -o $(BUILD)/explore --jobs $(JOBS)

lab-test: venv
	@echo "== lab: pytest (the Python package, importers, workloads, engine, peers, capture)"
	@$(call timed,lab pytest,$(MAKE) --no-print-directory build && $(VENV)/bin/python -m pytest lab/tests -q -m "not target")

build: deps venv
	@mkdir -p $(BUILD)
	cmake -S . -B $(BUILD)/gcc -DCMAKE_C_COMPILER=gcc -DHEAPKIT_PROPERTY_OPS=$(PROPERTY_OPS)
	cmake --build $(BUILD)/gcc -j $(JOBS)

gcc-test:
	@echo "== gcc build and tests ($(PROPERTY_OPS) property operations per allocator)"
	@$(call timed,gcc build + ctest,$(MAKE) --no-print-directory build && \
	  ctest --test-dir $(BUILD)/gcc -j $(JOBS) --output-on-failure)

asan-test:
	@echo "== ASan+UBSan build and tests ($(SAN_PROPERTY_OPS) property operations per allocator)"
	@$(call timed,asan+ubsan build + ctest,\
	  cmake -S . -B $(BUILD)/asan -DCMAKE_C_COMPILER=gcc -DHEAPKIT_SANITIZE=ON \
	    -DHEAPKIT_PROPERTY_OPS=$(SAN_PROPERTY_OPS) && \
	  cmake --build $(BUILD)/asan -j $(JOBS) && \
	  ctest --test-dir $(BUILD)/asan -j $(JOBS) --output-on-failure)

clang-test:
	@echo "== clang build, HK_ALIGN=16, warnings as errors ($(CLANG_PROPERTY_OPS) property operations)"
	@$(call timed,clang HK_ALIGN=16 build + ctest,\
	  cmake -S . -B $(BUILD)/clang -DCMAKE_C_COMPILER=clang -DHEAPKIT_ALIGN=16 \
	    -DHEAPKIT_PROPERTY_OPS=$(CLANG_PROPERTY_OPS) && \
	  cmake --build $(BUILD)/clang -j $(JOBS) && \
	  ctest --test-dir $(BUILD)/clang -j $(JOBS) --output-on-failure)

fuzz-build: deps
	cmake -S . -B $(BUILD)/fuzz -DCMAKE_C_COMPILER=clang -DHEAPKIT_FUZZ=ON
	cmake --build $(BUILD)/fuzz -j $(JOBS) --target fuzzers

fuzz-smoke:
	@echo "== fuzzers, $(FUZZ_SMOKE_SECONDS) s each"
	@$(call timed,fuzz build + smoke runs,$(MAKE) --no-print-directory fuzz-build && \
	  tests/fuzz/run_fuzzers.sh $(BUILD)/fuzz $(FUZZ_SMOKE_SECONDS) $(JOBS))

fuzz: fuzz-build
	tests/fuzz/run_fuzzers.sh $(BUILD)/fuzz $(FUZZ_SECONDS) $(JOBS)

freertos-build: deps
	cmake -S . -B $(BUILD)/freertos -DCMAKE_C_COMPILER=gcc -DHEAPKIT_LAB=OFF -DHEAPKIT_FREERTOS_TESTS=ON
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

sizes: deps
	@echo "== cross-compiled sizes"
	@$(call timed,cross sizes,tools/cross_sizes.sh $(BUILD)/sizes)

clean:
	rm -rf $(BUILD)
