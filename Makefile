# roving. The README's two commands:
#   make run     boot the demo on QEMU virt (CORES=1..16, default 4)
#   make test    everything CI checks
# Both first install what is missing (tools/setup; run as root on Debian 12).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := run

CORES ?= 4
HOST := --target host-tuple
LOOM_PREEMPTIONS ?= 3

.PHONY: run test setup check-cores lint setup-check host-test loom no-std custom-platform qemu-test idle-check bench clean

## run: boot the demo on QEMU virt with $(CORES) cores
run: check-cores setup
	ROVING_CORES=$(CORES) cargo run --quiet

## test: lint, host tests, loom models, no_std builds, the custom-platform
## check, the QEMU suite at 1/2/4/8 cores, and the idle-CPU check
test: setup lint setup-check host-test loom no-std custom-platform qemu-test idle-check
	@echo "make test: everything passed"

setup:
	@tools/setup

check-cores:
	@tools/qemu-run --check-cores "$(CORES)"

lint:
	cargo fmt --all --check
	cargo clippy --quiet -p roving --features std $(HOST) --all-targets -- -D warnings
	cargo clippy --quiet --workspace --exclude roving-custom-platform --exclude roving-bench -- -D warnings
	cargo clippy --quiet -p roving-custom-platform $(HOST) -- -D warnings
	cargo clippy --quiet -p roving-bench $(HOST) --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" cargo doc --quiet --no-deps -p roving --features std $(HOST)
	RUSTDOCFLAGS="-D warnings" cargo doc --quiet --no-deps -p roving-kernel -p roving-board-qemu-virt

## setup-check: tools/setup derives the backports source from either apt format
setup-check:
	tests/setup/check

## host-test: the portable core on the host, OS threads as cores
host-test:
	cargo test --quiet -p roving --features std $(HOST)

## loom: model-check the lock-free protocols
loom:
	RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=$(LOOM_PREEMPTIONS) CARGO_TARGET_DIR=target/loom \
		cargo test --quiet -p roving --release $(HOST) --test loom_actor --test loom_doorbell --test loom_event_loop --test loom_inbox --test loom_join --test loom_mailbox --test loom_sleep --test loom_watch

## no-std: the portable core builds for both bare-metal targets
no-std:
	cargo build --quiet -p roving --target aarch64-unknown-none
	cargo build --quiet -p roving --target x86_64-unknown-none

## custom-platform: an embedder's own Platform links and works
custom-platform:
	cargo run --quiet -p roving-custom-platform $(HOST)

qemu-test:
	tests/qemu/suite

## bench: roving against a raw atomic floor, crossbeam-channel, std, rayon,
## tokio and corosensei (not part of `make test`; results in BENCHMARKS.md)
bench: setup
	cargo bench --quiet -p roving-bench $(HOST)

idle-check:
	tests/qemu/idle-cpu

clean:
	cargo clean
