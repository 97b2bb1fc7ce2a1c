//! Atomics that report each access to the line census (`crate::census`),
//! with the same methods as `core`'s: what `crate::atomics` gives the rest
//! of roving when feature `census` is on.

use crate::census;
use core::panic::Location;
use core::sync::atomic::{self as plain, Ordering};

/// Compare-exchanges named `$op`, over values `$v`, counted as writes
/// (a failed one takes the line for writing too).
macro_rules! counted_cas {
    ($v:ty, $($op:ident),*) => {
        $(
            #[track_caller]
            pub(crate) fn $op(&self, current: $v, new: $v, success: Ordering, failure: Ordering) -> Result<$v, $v> {
                self.counted(true).$op(current, new, success, failure)
            }
        )*
    };
}

/// The methods every counted atomic has, over a `core` atomic of value `$v`.
macro_rules! counted_common {
    ($name:ident, $v:ty) => {
        /// A `core` atomic whose accesses the census counts.
        #[repr(transparent)]
        #[derive(Default)]
        pub(crate) struct $name(plain::$name);

        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                self.0.fmt(f)
            }
        }

        #[allow(dead_code)] // the subset of `core`'s methods roving uses
        impl $name {
            pub(crate) const fn new(value: $v) -> Self {
                Self(plain::$name::new(value))
            }

            #[track_caller]
            fn counted(&self, write: bool) -> &plain::$name {
                census::access(core::ptr::from_ref(self) as usize, write, Location::caller());
                &self.0
            }

            #[track_caller]
            pub(crate) fn load(&self, order: Ordering) -> $v {
                self.counted(false).load(order)
            }

            #[track_caller]
            pub(crate) fn store(&self, value: $v, order: Ordering) {
                self.counted(true).store(value, order)
            }

            #[track_caller]
            pub(crate) fn swap(&self, value: $v, order: Ordering) -> $v {
                self.counted(true).swap(value, order)
            }

            counted_cas!($v, compare_exchange, compare_exchange_weak);

            #[track_caller]
            pub(crate) fn fetch_update(
                &self,
                set: Ordering,
                fetch: Ordering,
                f: impl FnMut($v) -> Option<$v>,
            ) -> Result<$v, $v> {
                self.counted(true).fetch_update(set, fetch, f)
            }

            pub(crate) fn get_mut(&mut self) -> &mut $v {
                self.0.get_mut()
            }

            pub(crate) fn into_inner(self) -> $v {
                self.0.into_inner()
            }

            pub(crate) const fn as_ptr(&self) -> *mut $v {
                self.0.as_ptr()
            }
        }
    };
}

/// Read-modify-write methods named `$op`, with the value type `$v`.
macro_rules! counted_ops {
    ($name:ident, $v:ty, $($op:ident),*) => {
        #[allow(dead_code)]
        impl $name {
            $(
                #[track_caller]
                pub(crate) fn $op(&self, value: $v, order: Ordering) -> $v {
                    self.counted(true).$op(value, order)
                }
            )*
        }
    };
}

counted_common!(AtomicBool, bool);
counted_ops!(AtomicBool, bool, fetch_and, fetch_or);
counted_common!(AtomicU8, u8);
counted_ops!(AtomicU8, u8, fetch_add, fetch_sub, fetch_and, fetch_or, fetch_max);
counted_common!(AtomicU32, u32);
counted_ops!(AtomicU32, u32, fetch_add, fetch_sub, fetch_and, fetch_or, fetch_max);
counted_common!(AtomicU64, u64);
counted_ops!(AtomicU64, u64, fetch_add, fetch_sub, fetch_and, fetch_or, fetch_max);
counted_common!(AtomicUsize, usize);
counted_ops!(AtomicUsize, usize, fetch_add, fetch_sub, fetch_and, fetch_or, fetch_max);

/// `core`'s `AtomicPtr`, counted.
#[repr(transparent)]
pub(crate) struct AtomicPtr<T>(plain::AtomicPtr<T>);

impl<T> Default for AtomicPtr<T> {
    fn default() -> Self {
        Self(plain::AtomicPtr::default())
    }
}

impl<T> core::fmt::Debug for AtomicPtr<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.0.fmt(f)
    }
}

#[allow(dead_code)]
impl<T> AtomicPtr<T> {
    pub(crate) const fn new(value: *mut T) -> Self {
        Self(plain::AtomicPtr::new(value))
    }

    #[track_caller]
    fn counted(&self, write: bool) -> &plain::AtomicPtr<T> {
        census::access(core::ptr::from_ref(self) as usize, write, Location::caller());
        &self.0
    }

    #[track_caller]
    pub(crate) fn load(&self, order: Ordering) -> *mut T {
        self.counted(false).load(order)
    }

    #[track_caller]
    pub(crate) fn store(&self, value: *mut T, order: Ordering) {
        self.counted(true).store(value, order)
    }

    #[track_caller]
    pub(crate) fn swap(&self, value: *mut T, order: Ordering) -> *mut T {
        self.counted(true).swap(value, order)
    }

    counted_cas!(*mut T, compare_exchange, compare_exchange_weak);

    pub(crate) fn get_mut(&mut self) -> &mut *mut T {
        self.0.get_mut()
    }

    pub(crate) fn into_inner(self) -> *mut T {
        self.0.into_inner()
    }
}
