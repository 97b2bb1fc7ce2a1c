# roving. The README's two commands:
#   make run     boot the demo on QEMU virt (CORES=1..512, default 4)
#   make test    everything CI checks
# Both first install what is missing (tools/setup; run as root on Debian 12).
# Other boards: make run BOARD=raspi3b (or raspi4b, x86-pc); make image
# BOARD=... writes what the board boots from (a Raspberry Pi's kernel8.img).
# Other programs: make run APP=shell (the interactive shell), or any
# example in examples/src/bin. make run LOG=defmt: the console carries
# defmt frames, decoded on the host (installs defmt-print). make gdb (same
# settings): the program halted under GDB (installs gdb-multiarch).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := run

# python3 as the interpreter itself: a version manager's shim (pyenv's, on
# the machines CI uses) is a shell script that took 0.4 s a start, and
# every QEMU run starts Python (tools/qemu-run); the suite makes 420.
# Resolved to the file itself: a make that make runs finds this link first
# on its PATH, and must not link it to itself.
python_bin := $(CURDIR)/target/python-bin
python_real := $(shell python3 -c 'import os, sys; print(os.path.realpath(sys.executable))' 2>/dev/null)
ifneq ($(python_real),)
$(shell mkdir -p $(python_bin) && { [ "$$(readlink $(python_bin)/python3)" = "$(python_real)" ] || ln -sfn $(python_real) $(python_bin)/python3; })
export PATH := $(python_bin):$(PATH)
endif

CORES ?= 4
BOARD ?= virt
TRACE_EVENTS ?= 65536
# What make trace types on the program's serial console.
TRACE_INPUT ?= /dev/null
APP ?= demo
LOG ?= text
LOGS := text defmt
log_flags_text :=
log_flags_defmt := --features defmt
APPS := $(basename $(notdir $(wildcard examples/src/bin/*.rs)))
# How cargo builds for a board comes from boards/boards.list.
board_flags = --target $(shell tools/boards get $(BOARD) target) $(shell tools/boards get $(BOARD) flags)
HOST := --target host-tuple
# Past a default build's 64 cores, make run builds the program for 512, in
# a target directory of its own (as tests/qemu/many-cores does), so the
# default build is not rebuilt each time.
many_cores_env = $(if $(shell test "$(CORES)" -gt 64 2>/dev/null && echo y),CARGO_TARGET_DIR=target/many-cores ROVING_MAX_CORES=512)
LOOM_PREEMPTIONS ?= 3
# Miri needs nightly; pinned so a fresh machine checks with what CI used.
MIRI_TOOLCHAIN := nightly-2026-10-30
MIRI_TESTS := --lib --test host_platform
# cargo-miri cannot build its sysroot for the `host-tuple` alias.
MIRI_HOST := --target $(shell rustc -vV | sed -n 's/^host: //p')
# make test's stress runs (the plain one and ThreadSanitizer's); make soak
# runs them for SOAK_SECS.
STRESS_SECS ?= 15
MIRI_SEEDS ?=
SOAK_SECS ?= 1800

.PHONY: census run gdb gdb-check trace trace-check trace-kernel image load test setup check-board check-cores check-app check-log lint setup-check host-test loom miri stress spreading soak tsan no-std custom-platform embed publish-check qemu-test idle-check many-cores demo-check sim bench bench-trace bench-metal bench-metal-smoke bench-icount bench-scaling scaling-smoke clean

## run: boot $(APP) (the demo by default) on QEMU (BOARD=virt by
## default) with $(CORES) cores; the terminal is its serial console
run: check-board check-cores check-app check-log setup
	@[[ $(LOG) != defmt ]] || tools/setup --defmt
	DEFMT_LOG=trace ROVING_LOG=$(LOG) ROVING_CORES=$(CORES) $(many_cores_env) cargo run --quiet $(board_flags) $(log_flags_$(LOG)) --bin $(APP)

## gdb: boot $(APP) on $(BOARD) like make run, but halted at its first
## instruction, and debug it in GDB (gdb-multiarch), connected, each core a
## thread; its console goes to target/gdb/ (docs/debugging.md)
gdb: check-board check-cores check-app setup
	tools/setup --gdb
	$(many_cores_env) cargo build --quiet $(board_flags) --bin $(APP)
	ROVING_CORES=$(CORES) tools/gdb $(if $(many_cores_env),target/many-cores,target)/$(shell tools/boards get $(BOARD) target)/debug/$(APP)

## gdb-check: a scripted GDB session on every board (tests/qemu/gdb-check)
gdb-check: setup
	tools/setup --gdb
	tests/qemu/gdb-check

## trace: boot $(APP) (the demo by default) like make run, with every pool
## traced (TRACE_EVENTS per core, the newest kept); its console log,
## Perfetto JSON (open at ui.perfetto.dev), SVG timeline and summary go to
## target/trace/$(BOARD)/$(APP).*
trace: check-board check-cores check-app setup
	mkdir -p target/trace/$(BOARD)
	ROVING_TRACE_EVENTS=$(TRACE_EVENTS) ROVING_CORES=$(CORES) cargo run --quiet $(board_flags) --features trace --bin $(APP) <$(TRACE_INPUT) \
		>target/trace/$(BOARD)/$(APP).log 2>&1 || { tail -20 target/trace/$(BOARD)/$(APP).log; exit 1; }
	tools/trace target/trace/$(BOARD)/$(APP).log --check --summary --json target/trace/$(BOARD)/$(APP).json \
		--svg target/trace/$(BOARD)/$(APP).svg
	@echo "trace: target/trace/$(BOARD)/$(APP).json (open at ui.perfetto.dev) and .svg"

## trace-check: make trace at 4 cores on virt and x86-pc; its dump must
## parse, and every wake must end a sleep. Then the shell on virt, asked
## for its trace mid-run: that dump too. Then the trace_cost test kernel,
## traced, at 4 cores on virt and x86-pc: each core's trace must count
## exactly what its counters count, and its dump pass the same checks
trace-check:
	$(MAKE) --no-print-directory trace BOARD=virt CORES=4
	$(MAKE) --no-print-directory trace BOARD=x86-pc CORES=4
	$(MAKE) --no-print-directory trace BOARD=virt CORES=4 APP=shell TRACE_INPUT=tests/tools/shell-trace.txt
	tools/trace target/trace/virt/shell.log --dump 1 --check
	$(MAKE) --no-print-directory trace-kernel BOARD=virt
	$(MAKE) --no-print-directory trace-kernel BOARD=x86-pc

trace-kernel: check-board
	mkdir -p target/trace/$(BOARD)
	cargo build --quiet -p roving-test-kernels $(board_flags) --features trace --bin trace_cost
	ROVING_CORES=4 ROVING_APPEND="roving.cores=4" ROVING_TIMEOUT=120 \
		tools/qemu-run target/$(shell tools/boards get $(BOARD) target)/debug/trace_cost </dev/null \
		>target/trace/$(BOARD)/trace_cost.log 2>&1 || { tail -20 target/trace/$(BOARD)/trace_cost.log; exit 1; }
	grep -a "agree with their counters\|TEST trace_cost: PASS" target/trace/$(BOARD)/trace_cost.log
	tools/trace target/trace/$(BOARD)/trace_cost.log --check --summary

## image: what BOARD boots from, in target/image/$(BOARD)/; with LOADER=1
## (a Pi) the serial chainloader instead, for make load
image: check-board setup
	[[ $(BOARD) != x86-pc ]] || tools/setup --pc-disk
	tools/image $(BOARD) $(if $(filter 1,$(LOADER)),--loader)

## load: build $(APP) for BOARD (a Pi) and send it over PORT (a serial
## device, e.g. /dev/ttyUSB0) to the chainloader of make image LOADER=1,
## then stay as its console until Ctrl-C (docs/real-hardware.md); a
## release build unless PROFILE=dev
PROFILE ?= release
load: check-board check-app setup
	@[[ -n "$(PORT)" ]] || { echo "make load needs PORT=<the serial device>, e.g. PORT=/dev/ttyUSB0" >&2; exit 2; }
	@[[ $$(tools/boards get $(BOARD) image) == kernel8.img ]] || { echo "make load is for the Raspberry Pis (BOARD=raspi3b or raspi4b), not $(BOARD)" >&2; exit 2; }
	@[[ $(PROFILE) == release || $(PROFILE) == dev ]] || { echo "make load takes PROFILE=release or PROFILE=dev, not $(PROFILE)" >&2; exit 2; }
	cargo build --quiet --profile $(PROFILE) -p roving-examples --bin $(APP) $(board_flags)
	tools/load --port $(PORT) target/$$(tools/boards get $(BOARD) target)/$(if $(filter dev,$(PROFILE)),debug,release)/$(APP)

## test: lint, host tests, loom models, Miri, the oversubscribed stress
## test and spreading rounds, no_std builds, the custom-platform check,
## the from-scratch embedding kernel, the crates' publish dry run, the QEMU
## suite at 1/2/4/8 cores, a scripted GDB session on every board, the
## scaling smoke, the bare-metal baseline smoke, the demo at 64 cores, a
## traced demo on virt and the PC, and the idle-CPU check
test: setup lint setup-check host-test loom miri stress spreading census no-std custom-platform embed publish-check qemu-test gdb-check scaling-smoke bench-metal-smoke demo-check trace-check idle-check
	@echo "make test: everything passed"

# make test builds everything from scratch on CI, where incremental
# compilation's caches only cost time (about 6% of a board's kernels).
test: export CARGO_INCREMENTAL := 0
# make test packages the crates without building each package (five
# minutes on CI's two CPUs); make soak builds them.
test: PUBLISH_VERIFY := --no-verify

setup:
	@tools/setup

check-board:
	@tools/boards check "$(BOARD)"

check-cores:
	@tools/qemu-run --check-cores "$(CORES)"

check-log:
	@case " $(LOGS) " in *" $(LOG) "*) ;; *) echo "LOG must be one of: $(LOGS) (not '$(LOG)')" >&2; exit 2 ;; esac

check-app:
	@case " $(APPS) " in *" $(APP) "*) ;; *) echo "APP must be one of: $(APPS) (not '$(APP)')" >&2; exit 2 ;; esac

lint:
	cargo fmt --all --check
	# The core's layers only point down (docs/layout.md), and the check
	# itself refuses an upward import (tests/tools/layers_test.py).
	tools/layers
	python3 tests/tools/layers_test.py
	cargo clippy --quiet -p roving --features std $(HOST) --all-targets -- -D warnings
	# Only the library and tests/trace.rs have code under feature trace.
	cargo clippy --quiet -p roving --features std,trace $(HOST) --lib --test trace -- -D warnings
	cargo clippy --quiet -p roving --features std,census $(HOST) --lib --test census -- -D warnings
	cargo clippy --quiet --workspace --exclude roving-custom-platform --exclude roving-bench --exclude roving-symbolize -- -D warnings
	cargo clippy --quiet -p roving-examples -p roving-test-kernels --no-default-features --features raspi3b -- -D warnings
	cargo clippy --quiet -p roving-loader --features raspi3b -- -D warnings
	cargo clippy --quiet -p roving-loader --features raspi4b -- -D warnings
	cargo clippy --quiet -p roving-examples -p roving-test-kernels -p roving-board-x86-pc --target x86_64-unknown-none -- -D warnings
	cargo clippy --quiet -p roving-examples -p roving-test-kernels --features defmt -- -D warnings
	cargo clippy --quiet -p roving-examples -p roving-test-kernels --features trace -- -D warnings
	cargo clippy --quiet -p roving-examples -p roving-test-kernels --features trace --target x86_64-unknown-none -- -D warnings
	cargo clippy --quiet -p roving-custom-platform $(HOST) -- -D warnings
	cargo clippy --quiet -p roving-bench $(HOST) --all-targets -- -D warnings
	cargo clippy --quiet -p roving-symbolize $(HOST) --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" cargo doc --quiet --no-deps -p roving --features std,trace $(HOST)
	RUSTDOCFLAGS="-D warnings" cargo doc --quiet --no-deps -p roving-kernel -p roving-board-qemu-virt -p roving-board-raspi3b -p roving-board-raspi4b
	RUSTDOCFLAGS="-D warnings" cargo doc --quiet --no-deps -p roving-kernel -p roving-board-x86-pc --target x86_64-unknown-none

## setup-check: tools/setup derives the backports source from either apt format
setup-check:
	tests/setup/check

## host-test: the portable core on the host, OS threads as cores, and
## the host examples (a driver for embedded-hal on a mock device)
host-test:
	ROVING_STRESS_SECS=5 cargo test --quiet -p roving --features std $(HOST)
	# Every pool on the forwarding mesh, a ring of one link per core, so
	# most messages are forwarded (docs/mesh.md).
	ROVING_MAILBOXES=ring ROVING_STRESS_SECS=5 cargo test --quiet -p roving --features std $(HOST) --tests
	# The trace points (feature trace) against the counters; then
	# tools/trace on the sample dump and on that run's.
	ROVING_TRACE_OUT=target/trace/host.trace cargo test --quiet -p roving --features std,trace $(HOST) --test trace
	python3 tests/tools/trace_test.py target/trace/host.trace
	cargo run --quiet -p roving --example hal_driver --features std $(HOST)
	# The runner's backtrace unwinder and namer (tools/symbolize).
	cargo test --quiet -p roving-symbolize $(HOST)

## miri: the host tests that do not switch stacks, under Stacked Borrows
## and Tree Borrows, then with each scheduling seed of $(MIRI_SEEDS) (none
## in make test; make soak runs three)
# Miri interprets on one thread: the two models run at once, each in its
# own target directory (the flags rebuild the crate).
miri:
	tests/tools/together \
		'cargo +$(MIRI_TOOLCHAIN) miri test --quiet -p roving --features std $(MIRI_HOST) $(MIRI_TESTS)' \
		'MIRIFLAGS="-Zmiri-tree-borrows" CARGO_TARGET_DIR=target/miri-tree-borrows cargo +$(MIRI_TOOLCHAIN) miri test --quiet -p roving --features std $(MIRI_HOST) $(MIRI_TESTS)'
	for seed in $(MIRI_SEEDS); do \
		MIRIFLAGS="-Zmiri-seed=$$seed" cargo +$(MIRI_TOOLCHAIN) miri test --quiet -p roving --features std $(MIRI_HOST) $(MIRI_TESTS) || exit 1; \
	done

## stress: strands on an oversubscribed host, with random delays injected
## at the protocols' steps (feature chaos), for $(STRESS_SECS) s
stress:
	ROVING_STRESS_SECS=$(STRESS_SECS) cargo test --quiet --release -p roving --features std,chaos $(HOST) --test stress

## spreading: a hundred bursts each of closures, async tasks and strands
## made on one core reach the idle cores under every kind of mailboxes,
## with the host oversubscribed (tests/spreading.rs)
spreading:
	cargo test --quiet -p roving --features std $(HOST) --test spreading -- --ignored

## census: cache lines moved between cores per operation, at 2, 4, 16
## and 64 host cores (feature census, tests/census.rs); fails a row past
## its bound
census:
	cargo test --quiet -p roving --features std,census $(HOST) --test census -- --nocapture

## sim: the mesh simulator (not in make test): the real mesh code at 2 to
## 1024 simulated cores (hops, batching, memory, nothing lost) and 64 OS
## threads as cores; redraws docs/mesh.svg
sim:
	cargo test --quiet --release -p roving --features std $(HOST) --lib simulate_the_mesh -- --ignored --nocapture

## soak: long stress (not in make test): the host stress for $(SOAK_SECS) s,
## ThreadSanitizer, Miri with three scheduling seeds, the QEMU stress
## kernels on every board for $(SOAK_SECS) s, the many-core runs, then
## publish-check with every package built
soak: setup
	ROVING_STRESS_SECS=$(SOAK_SECS) cargo test --quiet --release -p roving --features std,chaos $(HOST) --test stress -- --nocapture
	$(MAKE) --no-print-directory tsan STRESS_SECS=$(SOAK_SECS)
	ROVING_MAILBOXES=ring $(MAKE) --no-print-directory tsan STRESS_SECS=60
	$(MAKE) --no-print-directory miri MIRI_SEEDS="1 2 3"
	tests/qemu/soak $(SOAK_SECS)
	tests/qemu/many-cores
	$(MAKE) --no-print-directory publish-check

## many-cores: the test kernels built for 512 cores, at 128, 256 and 512
## on QEMU virt and the PC (not in make test: about N minutes)
many-cores: setup
	tests/qemu/many-cores
	tests/qemu/demo-check 256 512

## demo-check: make run at 64 cores on virt and the PC finishes in time
## and says what it does (tests/qemu/demo-check)
demo-check: setup
	tests/qemu/demo-check 64

## tsan: every host test under ThreadSanitizer (nightly, std rebuilt with
## it), the stress test for $(STRESS_SECS) s. With --cfg roving_tsan every
## context switch tells TSan which fibre runs next (src/raw/context/sanitizer.rs);
## a control block is then a word bigger, so ROVING_STRAND_BYTES grows by
## one to keep the room for closures. handle_segv=0: tests/overflow.rs checks
## that a stray fault ends the process by SIGSEGV, which TSan would catch.
## (-A deprecated: nightly renamed fetch_update, which stable still has.)
tsan: setup
	RUSTFLAGS="-Zsanitizer=thread --cfg roving_tsan -A deprecated" CARGO_TARGET_DIR=target/tsan ROVING_STRAND_BYTES=264 \
		ROVING_STRESS_SECS=$(STRESS_SECS) TSAN_OPTIONS="halt_on_error=1 handle_segv=0" \
		cargo +$(MIRI_TOOLCHAIN) test -Zbuild-std --quiet -p roving --features std $(MIRI_HOST) --tests

## loom: model-check the lock-free protocols
# The core-hints model takes as long as all the others together (65 s
# against 73 s on one CPU), and each model mostly runs one thread: built
# once, then the two halves at once (tests/tools/together).
LOOM_LONG := --test loom_core_hints
LOOM_REST := --test loom_actor --test loom_doorbell --test loom_event_loop --test loom_inbox --test loom_join --test loom_lifo --test loom_mailbox --test loom_mesh --test loom_routes --test loom_signal --test loom_sleep --test loom_task --test loom_trace_ring --test loom_own_side --test loom_urgent --test loom_watch
LOOM_TEST := RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=$(LOOM_PREEMPTIONS) CARGO_TARGET_DIR=target/loom \
	cargo test --quiet -p roving --release $(HOST)
loom:
	$(LOOM_TEST) --no-run $(LOOM_LONG) $(LOOM_REST)
	tests/tools/together '$(LOOM_TEST) $(LOOM_LONG)' '$(LOOM_TEST) $(LOOM_REST)'

## no-std: the portable core builds for both bare-metal targets
no-std:
	cargo build --quiet -p roving --target aarch64-unknown-none
	cargo build --quiet -p roving --target x86_64-unknown-none
	cargo build --quiet -p roving --features trace --target aarch64-unknown-none

## custom-platform: an embedder's own Platform links and works
custom-platform:
	cargo run --quiet -p roving-custom-platform $(HOST)

## embed: examples/embed, a kernel written from scratch on the Platform
## trait alone (docs/embedding.md), passes its checks on QEMU virt at 4
## cores, entered at EL1 and at EL2
embed:
	cargo build --quiet -p roving-embed-example
	ROVING_CORES=4 ROVING_TIMEOUT=120 tools/qemu-run target/aarch64-unknown-none/debug/embed
	ROVING_CORES=4 ROVING_TIMEOUT=120 ROVING_MACHINE=virtualization=on tools/qemu-run target/aarch64-unknown-none/debug/embed

## publish-check: roving, roving-kernel and every board crate pass
## `cargo publish --dry-run` together (each packaged, then built from its
## package for both bare-metal targets; under make test, packaged only);
## nothing is uploaded
PUBLISHED := roving roving-kernel roving-board-qemu-virt roving-board-raspi3b roving-board-raspi4b roving-board-x86-pc
publish-check:
	# cargo unpacks each packaged crate for verifying once per checkout path
	# and version, and would build against an unpacking an earlier check of
	# this path left: remove those first.
	rm -rf "$${CARGO_HOME:-$$HOME/.cargo}"/registry/src/-*/roving*-0.*
	cargo publish --quiet --dry-run $(PUBLISH_VERIFY) --allow-dirty --target aarch64-unknown-none --target x86_64-unknown-none \
		$(addprefix -p ,$(PUBLISHED)) 2>&1 | { grep -v "ignoring test\|ignoring example\|profile package spec\|aborting upload" || true; }

qemu-test:
	tools/setup --defmt --pi-trees --pc-disk --gdb
	tests/qemu/suite

## bench: roving against a raw atomic floor, crossbeam-channel, std, rayon,
## tokio and corosensei, then bench-metal and bench-scaling (not part of `make test`; results
## in BENCHMARKS.md)
bench: setup
	cargo bench --quiet -p roving-bench $(HOST)
	cargo bench --quiet -p roving-bench $(HOST) --features trace --bench trace
	benches/bare-metal
	benches/scaling

## bench-trace: what tracing costs, the trace bench without and with
## feature trace
bench-trace: setup
	cargo bench --quiet -p roving-bench $(HOST) --bench trace
	cargo bench --quiet -p roving-bench $(HOST) --features trace --bench trace

## bench-metal: the bare-metal figures alone, counted in instructions under
## QEMU's -icount on virt and the PC: the latency table (Zephyr's rows and
## roving's own), interrupts, wake plus poll, and time slices; each row
## compared with benches/bare-metal.baseline (a move of more than 2
## instructions fails; benches/bare-metal --update-baseline rewrites it)
bench-metal: setup
	benches/bare-metal

## bench-metal-smoke: the latency table and wake plus poll on virt and the
## PC, against the baseline (part of make test)
bench-metal-smoke: setup
	benches/bare-metal --smoke

## bench-scaling: instructions per operation at 1 to 256 cores under
## -icount, virt and the PC (benches/scaling; a few minutes)
bench-scaling: setup
	benches/scaling

## scaling-smoke: the scaling table at 1, 2 and 4 cores on virt, so that
## its kernel and script keep working (part of make test)
scaling-smoke: setup
	benches/scaling --smoke

## bench-icount: instructions per operation on the host, one core, under
## valgrind (benches/host-icount; deterministic, unlike wall time)
bench-icount: setup
	benches/host-icount

idle-check:
	tests/qemu/idle-cpu

clean:
	cargo clean
