//! roving: a `no_std` multicore scheduler for machines with no operating system.
//!
//! Every hardware core is a worker of a thread pool. This crate is the
//! portable part: it never names a register, an address or a board. What it
//! needs from the machine it gets through one narrow seam, the
//! [`Platform`](platform::Platform) trait, bound at link time with
//! [`set_platform!`]. Three implementations exist:
//!
//! - `roving-kernel` (in this repository) for bare metal: QEMU `virt`
//!   (aarch64) today;
//! - [`platform::host`] behind feature `std`, where OS threads stand in for
//!   cores, so the portable core is tested and benchmarked as ordinary Rust;
//! - yours: a hobby-OS kernel implements [`Platform`](platform::Platform) and
//!   calls [`set_platform!`] once, without forking roving.
//!
//! # Status
//!
//! This is the foundation: the platform seam, the per-core wake-up protocol
//! ([`platform::Doorbell`]) and time ([`time::Instant`]). The scheduler
//! (mailboxes, pools, strands, actors) is built on top in later releases.
#![cfg_attr(not(feature = "std"), no_std)]

pub mod platform;
mod sync;
pub mod time;
