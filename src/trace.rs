//! Tracing: what each core did and when, recorded into a ring per core.
//!
//! This is the storage: [`ring`], a lock-free ring of events per core that
//! overwrites the oldest and counts what it lost. The trace points and the
//! `trace` feature that turns them on are built on it.

pub mod ring;
