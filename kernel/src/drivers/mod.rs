//! Device drivers shared by several boards.

pub(crate) mod pl011;
