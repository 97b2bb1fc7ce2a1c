//! The handle of an async task: a future of its output, which a strand can
//! also join.

use super::TaskError;
use super::cell::{self, AsyncHeader, Head};
use core::fmt;
use core::marker::PhantomData;
use core::pin::Pin;
use core::ptr::NonNull;
use core::task::{Context, Poll};

/// The handle of an async task spawned with
/// [`Pool::spawn_async`](crate::Pool::spawn_async) or
/// [`spawn_async`](super::spawn_async).
///
/// It is a future of the task's output, for async code, and
/// [`TaskHandle::join`] waits for it from a strand. Dropping it detaches
/// the task, which runs on; a failure of a detached task (it panicked)
/// becomes its pool's failure, as a strand's that nobody joins does.
pub struct TaskHandle<T> {
    header: NonNull<AsyncHeader>,
    output: PhantomData<T>,
}

// SAFETY: the handle only reads the output (`T: Send`) once the task is
// done, and touches the header through atomics and its lock.
unsafe impl<T: Send> Send for TaskHandle<T> {}
// SAFETY: `&TaskHandle` only reads atomics (`is_finished`) and cancels.
unsafe impl<T: Send> Sync for TaskHandle<T> {}

// The handle never pins what it points to.
impl<T> Unpin for TaskHandle<T> {}

impl<T> TaskHandle<T> {
    /// The handle of a task made with `T` as its output.
    ///
    /// # Safety
    ///
    /// The task's output type is `T`, and the caller gives the handle's
    /// reference to it.
    pub(super) unsafe fn new(header: NonNull<AsyncHeader>) -> Self {
        Self { header, output: PhantomData }
    }

    fn header(&self) -> &AsyncHeader {
        // SAFETY: the handle's reference keeps the task live.
        unsafe { self.header.as_ref() }
    }

    /// Whether the task has finished: returned, panicked, was cancelled, or
    /// was dropped by its stopping pool.
    pub fn is_finished(&self) -> bool {
        self.header().state.is_done()
    }

    /// Asks the task to stop: its future is dropped at its next await
    /// point (at once if it is waiting for a wake), and the handle then
    /// gives [`TaskError::Cancelled`]. A task that finishes first keeps
    /// its output.
    pub fn cancel(&self) {
        // SAFETY: the handle's reference keeps the task live.
        unsafe { cell::cancel(self.header) }
    }

    /// Blocks the calling strand until the task has finished, and returns
    /// its output. The strand waits; its core runs other work.
    ///
    /// # Errors
    ///
    /// What the task ended with ([`TaskError::Cancelled`],
    /// [`TaskError::Failed`], [`TaskError::Stopped`]), or
    /// [`TaskError::Wait`] if the caller is not a strand or is cancelled
    /// while it waits (the task runs on, detached). A cancel that comes as
    /// the task ends loses to its end: the caller gets what it ended with.
    pub fn join(self) -> Result<T, TaskError> {
        super::block_on_unmoved(self).map_err(TaskError::Wait)?
    }

    /// Takes the output of a finished task.
    fn take_output(&mut self) -> Result<T, TaskError> {
        let head = self.header.cast::<Head<T>>();
        // SAFETY: done (seen with acquire), so the output is stored and is
        // the handle's alone; the task's output type is `T`.
        let output = unsafe { (*(*head.as_ptr()).output.get()).take() };
        output.expect("a TaskHandle polled after it returned its output")
    }
}

impl<T> core::future::Future for TaskHandle<T> {
    type Output = Result<T, TaskError>;

    /// Ready with the task's output once it has finished.
    ///
    /// # Panics
    ///
    /// If polled again after it returned `Ready`.
    fn poll(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Self::Output> {
        if !self.header().state.is_done() {
            let mut join = self.header().join.lock();
            // Checked again under the lock the completing core takes after
            // it sets `DONE`: either it sees this waker or this sees `DONE`.
            if !self.header().state.is_done() {
                if !join.as_ref().is_some_and(|waker| waker.will_wake(context.waker())) {
                    let old = join.replace(context.waker().clone());
                    drop(join);
                    drop(old);
                }
                return Poll::Pending;
            }
        }
        Poll::Ready(self.take_output())
    }
}

impl<T> Drop for TaskHandle<T> {
    /// Detaches the task; if it has finished, drops its output here.
    fn drop(&mut self) {
        if self.header().state.drop_handle() {
            let head = self.header.cast::<Head<T>>();
            // SAFETY: done, so the output is the handle's alone.
            let output = unsafe { (*(*head.as_ptr()).output.get()).take() };
            cell::drop_output_value(self.header(), output);
        }
        // SAFETY: the handle's reference, not used again.
        unsafe { cell::release(self.header) };
    }
}

impl<T> fmt::Debug for TaskHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskHandle").field("finished", &self.is_finished()).finish_non_exhaustive()
    }
}
