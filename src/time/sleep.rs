//! [`sleep`]: an async task waits for a deadline on its pool's timer heap,
//! the one that wakes sleeping strands.

use super::Instant;
use crate::pool::handle::Pool;
use crate::timers::TimerNode;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;

/// Waits for `duration` without blocking: the async form of
/// [`strand::sleep`](crate::strand::sleep), for a task. A duration too
/// long for the tick counter never ends.
///
/// ```
/// use roving::{Pool, executor, platform::host::Machine, time};
/// use core::time::Duration;
///
/// Machine::new(2).unwrap().run(|| {
///     Pool::new().unwrap().run(|| {
///         let started = time::Instant::now();
///         let task = executor::spawn_async(async {
///             time::sleep(Duration::from_millis(5)).await;
///         });
///         task.unwrap().join().unwrap();
///         assert!(started.elapsed() >= Duration::from_millis(5));
///     }).unwrap();
/// }).unwrap();
/// ```
pub fn sleep(duration: Duration) -> Sleep {
    sleep_until(super::deadline_after(duration))
}

/// Waits until `deadline` without blocking: the async form of
/// [`strand::sleep_until`](crate::strand::sleep_until).
pub fn sleep_until(deadline: Instant) -> Sleep {
    Sleep { deadline, node: TimerNode::new(), armed: None }
}

/// The future of [`sleep`] and [`sleep_until`].
///
/// # Panics
///
/// When polled before its deadline on a thread or core that works for no
/// pool (another executor's, or outside code): there is no timer heap to
/// wait on. Poll it in a task, or in a strand through
/// [`block_on`](crate::executor::block_on).
///
/// If the pool's timer heap has no memory to grow, the sleep does not
/// fail: it asks to be polled again, and checks the clock each time its
/// core comes round to it, until the deadline or until it gets an entry.
#[must_use = "futures do nothing unless awaited"]
pub struct Sleep {
    deadline: Instant,
    /// Its entry in a timer heap, while armed.
    node: TimerNode,
    /// The pool whose heap holds the entry.
    armed: Option<Pool>,
}

impl Sleep {
    /// When it ends.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Whether its deadline has passed.
    pub fn is_elapsed(&self) -> bool {
        Instant::now() >= self.deadline
    }

    fn disarm(&mut self) {
        if let Some(pool) = self.armed.take() {
            // SAFETY: inserted into this pool's heap when armed.
            unsafe { pool.pool_ref().timers().remove_task(&self.node) };
        }
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<()> {
        // SAFETY: the node is structurally pinned: never moved out.
        let this = unsafe { self.get_unchecked_mut() };
        if let Some(pool) = &this.armed {
            // SAFETY: inserted into this pool's heap when armed.
            if unsafe { pool.pool_ref().timers().poll_task(&this.node, context.waker()) } {
                this.armed = None;
                return Poll::Ready(());
            }
            if this.is_elapsed() {
                // Due, and the expiry has not come round yet.
                this.disarm();
                return Poll::Ready(());
            }
            return Poll::Pending;
        }
        if this.is_elapsed() {
            return Poll::Ready(());
        }
        let pool = Pool::current()
            .expect("roving::time::Sleep polled outside a pool's cores: await it in a task, or block_on it in a strand");
        // SAFETY: the node is in no heap, pinned, and taken out in `drop`.
        let node = unsafe { Pin::new_unchecked(&this.node) };
        // SAFETY: as above.
        if unsafe { pool.pool_ref().timers().insert_task(this.deadline, node, context.waker()) }.is_err() {
            // No memory for an entry: look at the clock next time round.
            context.waker().wake_by_ref();
            return Poll::Pending;
        }
        this.armed = Some(pool);
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        self.disarm();
    }
}

impl core::fmt::Debug for Sleep {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline)
            .field("armed", &self.armed.is_some())
            .finish()
    }
}
