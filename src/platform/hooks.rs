//! What a platform implementation calls back into roving: every hook a
//! kernel needs, gathered here (each is also where it belongs, in the
//! module of the part it serves). `docs/embedding.md` is the checklist
//! that says when each is called; this is the list.
//!
//! | hook | who calls it, and when |
//! |---|---|
//! | [`fail_running`] | the `#[panic_handler]`, first: a panic in a strand fails that strand and switches away from its stack, instead of stopping the core |
//! | `running_task`, `running_work`, `fail_running_task` | the `#[panic_handler]`, next: a panic in an async task's poll, or in a `join` half a core's loop took, fails that work (bare metal only: on the host, it unwinds) |
//! | `catching_handler` | the interrupt dispatcher, around each device handler: a catch point a panic in the handler is thrown back to |
//! | `running_handler`, `fail_running_handler` | the `#[panic_handler]`, after the task hooks: a panic in a device's interrupt handler ends that handler alone (its line is then the dispatcher's to mask) |
//! | [`guard_gaps`], [`region`] | the MMU set-up: the gaps below each fibre stack to leave unmapped, and where the stacks are |
//! | [`guard_hit`] | the fault handler: whether a fault address is a stack overflow, and whose |
//! | [`strand_at`] | the fault handler: whether the code a fault stopped (by its stack pointer) was a strand's, which may then fail alone |
//! | `next_panic_is_fault` | a kernel that contains a fault by panicking with its words on the faulting stack, just before that panic: the failure is `FailureKind::Faulted`, with no source location |
//! | [`on_tick`], [`entry_address`], [`any_pool_preempts`] | the per-core timer interrupt, on a platform that can preempt: whether to preempt the strand it interrupted, where the strand then resumes, and whether any pool has a time slice to ask about |
//! | `use_lazy_vector_state` | an x86_64 bare-metal platform whose #NM handler clears CR0.TS, once before the first preemption: the entry then saves vector state only for strands that used it |
//! | [`interrupt_begins`], [`interrupt_ends`] | the interrupt dispatcher, with feature `trace`: a handler's start and end on the interrupted core's trace |
//!
//! The seam itself (the [`Platform`](super::Platform) trait,
//! [`set_platform!`](crate::set_platform), [`Doorbell`](super::Doorbell))
//! is in [`platform`](super).

#[cfg(not(feature = "std"))]
pub use crate::executor::{RunningWork, fail_running_task, next_panic_is_fault, running_task, running_work};
#[cfg(not(feature = "std"))]
pub use crate::pool::contain::{catching_handler, fail_running_handler, running_handler};
#[cfg(all(target_arch = "x86_64", not(feature = "std")))]
pub use crate::preempt::use_lazy_vector_state;
pub use crate::preempt::{Tick, any_pool_preempts, entry_address, on_tick};
pub use crate::strand::fail_running;
pub use crate::strand::fibre::{FibreRegion, GuardHit, guard_gaps, guard_hit, region, strand_at};
#[cfg(feature = "trace")]
pub use crate::trace::{interrupt_begins, interrupt_ends};
