# uiwarp: `make demo` and `make check` are the two commands of the README.
BUILD ?= build
JOBS  ?= $(shell nproc)
PREFIX ?= /usr/local
CMAKE_FLAGS ?=

.PHONY: all deps build check demo demo-nfs interop install clean bench bench-sctp bench-compat bench-siw-delay bench-rpcrdma bench-nfs ab

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_FLAGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# Every test: first all but the siw interop scenarios, in parallel; then
# those (label interop: one QEMU guest under emulation at a time, each
# using the whole machine), then the sanitizer build.
check: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -LE interop
	@$(MAKE) --no-print-directory interop
	@$(MAKE) --no-print-directory check-asan

demo: build
	@bash scripts/demo.sh $(BUILD)

# The NFS demonstration (scripts/demo-nfs.sh): a QEMU guest's Linux
# kernel mounts uiwarp-nfsd over RDMA (siw) and copies a file in and out.
# Installs the guest's packages (tests/interop/deps.sh) when missing.
demo-nfs: build
	@bash tests/interop/deps.sh
	@bash scripts/demo-nfs.sh $(BUILD)

interop: build
	@bash tests/interop/deps.sh
	cd $(BUILD) && ctest --output-on-failure -L interop

# The performance report (bench/perf.sh: uiwarp-perf against raw TCP and
# libfabric's tcp provider; writes bench/perf-latest.md and the plots).
# Never part of check; installs its own packages (bench/deps.sh).
bench: build
	@BUILD=$(abspath $(BUILD)) bash bench/perf.sh

# DDP over SCTP (bench/sctp.sh): raw usrsctp (bench/sctpraw.c, built
# as sctpraw) next to uiwarp over SCTP, point by point in the same run;
# writes bench/sctp-latest.md.  Never part of check.  SCTP_QUICK=1: a
# short trial.
bench-sctp: build
	@BUILD=$(abspath $(BUILD)) bash bench/sctp.sh

# The drop-in libibverbs and librdmacm (bench/compat.sh): Debian's
# ib_write_bw -R, ib_send_lat -R, qperf -cm1 and rping through uiwarp-run
# next to uiwarp-perf, uiwarp-ping and qperf over TCP, in the same run;
# writes bench/compat-latest.md.  Never part of check.  COMPAT_QUICK=1:
# a short trial.
bench-compat: build
	@BUILD=$(abspath $(BUILD)) bash bench/compat.sh

# RPC-over-RDMA (bench/rpcrdma.sh): libuiwarp-rpcrdma on uiwarp against
# libtirpc over TCP in the same run, NULL RPCs (uiwarp-rpcping) and the
# store example's GET and PUT from 4 KiB to 16 MiB; writes
# bench/rpcrdma-latest.md and its plots.  Never part of check; installs
# its own packages (bench/deps.sh).  RPC_QUICK=1: a short trial.
bench-rpcrdma: build
	@BUILD=$(abspath $(BUILD)) bash bench/rpcrdma.sh

# The start delay against siw (bench/siw_start_delay.sh): stock rping on
# the drop-in libraries connecting to siw in a QEMU guest, for each
# UIWARP_START_DELAY_MS, and what the delay costs on loopback; writes
# bench/siw-start-delay.md.  Never part of check (it boots a guest:
# one at a time).  CONNS, DELAYS, BUSY: see the script.
bench-siw-delay: build
	@bash tests/interop/deps.sh
	@BUILD=$(abspath $(BUILD)) bash bench/siw_start_delay.sh

# NFS with Linux (bench/nfs.sh), in one boot of the siw guest:
# uiwarp-nfs against the guest's knfsd and the guest's kernel client
# (dd, cp) against uiwarp-nfsd, each over RDMA and over TCP; writes
# bench/nfs-latest.md (MB/s, RDMA/TCP ratios, the share moved by DDP).
# Never part of check (it boots a guest: one at a time).  NFS_QUICK=1:
# a short trial; NFS_ROUNDS, NFS_SIZE: see the script.
bench-nfs: build
	@bash tests/interop/deps.sh
	@BUILD=$(abspath $(BUILD)) bash bench/nfs.sh

# A/B report (bench/ab.sh): AB_BEFORE (default 036d53f, the engine before
# its rework) against AB_AFTER (default HEAD), each built apart in
# build-ab/, measured in the same run; writes bench/ab-latest.md.  Never
# part of check.  AB_QUICK=1: a short trial.
ab: deps
	@bash bench/ab.sh

install: build
	cmake --install $(BUILD)
	-ldconfig

clean:
	rm -rf $(BUILD)

# libFuzzer targets of tests/fuzz/ (clang), FUZZ_SECONDS each; build in
# build-fuzz/, runs and findings in build-fuzz/run/.
FUZZ_SECONDS ?= 60
.PHONY: fuzz
fuzz: deps
	@bash scripts/fuzz.sh $(FUZZ_SECONDS)

# Sanitizer builds, each in its own directory.  check-asan (part of `make
# check`): unit, loopback and conformance tests, the drop-in libraries'
# C tests (label compat-c), RPC-over-RDMA's (rpcrdma-c) and the NFS
# programs' (nfs, which run uiwarp-nfs and uiwarp-nfsd built the same
# way) under ASan+UBSan; use_sigaltstack=0 because
# ASan's own alternate signal stack trips over a thread ended by
# pthread_cancel (test_ibv_local cancels one, as rping does).  tsan (not
# part of check): the unit, loopback, conformance and fault-proxy tests
# under ThreadSanitizer; any report not in tests/tsan.supp (each entry
# explained there and in docs/sanitizers.md) makes the test, and so make
# tsan, fail (exitcode 66).
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
.PHONY: check-asan tsan valgrind

$(ASAN_BUILD)/CMakeCache.txt:
	cmake -S . -B $(ASAN_BUILD) -DUIW_SANITIZE=address,undefined $(CMAKE_FLAGS)

check-asan: deps $(ASAN_BUILD)/CMakeCache.txt
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && \
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:use_sigaltstack=0 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	ctest --output-on-failure -j $(JOBS) -L 'unit|loopback|conformance|compat-c|rpcrdma-c|nfs'

$(TSAN_BUILD)/CMakeCache.txt:
	cmake -S . -B $(TSAN_BUILD) -DUIW_SANITIZE=thread $(CMAKE_FLAGS)

tsan: deps $(TSAN_BUILD)/CMakeCache.txt
	cmake --build $(TSAN_BUILD) -j $(JOBS)
	cd $(TSAN_BUILD) && \
	TSAN_OPTIONS="suppressions=$(CURDIR)/tests/tsan.supp exitcode=66 halt_on_error=0 second_deadlock_stack=1 history_size=7" \
	ctest --output-on-failure -j $(JOBS) -L 'unit|loopback|conformance|faultproxy|compat-c|rpcrdma-c'

# valgrind (memcheck): the 256-QP soak and every other loopback test of
# the normal build; any memory error or definite or indirect leak fails.
# The same script is a ctest entry (label valgrind) of `make check`.
# VALGRIND_SOAK_PAIRS connections for the soak (two QPs each, 1-128).
VALGRIND_SOAK_PAIRS ?= 128
valgrind: build
	UIW_SOAK_PAIRS=$(VALGRIND_SOAK_PAIRS) \
	bash tests/valgrind/test_valgrind.sh $(BUILD) $(CURDIR)

# The architecture picture (docs/architecture.md): docs/architecture.svg
# drawn from docs/architecture.dot by Graphviz, installed through
# scripts/apt-ensure.sh when dot is missing.  Not part of check.
.PHONY: docs
docs: docs/architecture.svg

docs/architecture.svg: docs/architecture.dot
	@command -v dot >/dev/null 2>&1 || bash scripts/apt-ensure.sh "make docs" graphviz
	dot -Tsvg $< -o $@
