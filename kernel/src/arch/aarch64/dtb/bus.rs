//! Where a device tree node's registers are as the CPU sees them.
//!
//! A node's `reg` is an address on its parent's bus. Each bus between it
//! and the root maps its children's addresses into its own parent's with
//! `ranges`: a list of windows `<child address, parent address, length>`.
//! An empty `ranges` maps them one to one, and a bus without `ranges`
//! does not map them at all, so nothing below it is reachable. The
//! Raspberry Pi's peripherals sit under `/soc` at VideoCore bus addresses
//! (0x7e00_0000 and up), which `/soc`'s `ranges` moves to where the ARM
//! sees them.
//!
//! Runs before the MMU is on: it allocates nothing, and keeps the path
//! from the root to a node on the stack, at most [`DEPTH`] nodes deep.

use crate::board::Region;
use dtoolkit::fdt::{Fdt, FdtNode};
use dtoolkit::standard::{NodeStandard, Status};
use dtoolkit::{Node, Property};

/// How deep a node may sit and still be found (the root is depth 1).
pub(super) const DEPTH: usize = 8;

/// A node and the buses above it, the root first and the node last.
#[derive(Clone)]
pub(super) struct Path {
    nodes: heapless::Vec<FdtNode<'static>, DEPTH>,
}

impl Path {
    /// The node itself.
    pub(super) fn node(&self) -> FdtNode<'static> {
        *self.nodes.last().expect("a path holds its node")
    }

    /// A child of the node, with the buses above it; `None` past
    /// [`DEPTH`].
    pub(super) fn child(&self, child: FdtNode<'static>) -> Option<Path> {
        let mut nodes = self.nodes.clone();
        nodes.push(child).ok()?;
        Some(Path { nodes })
    }

    /// The node's `index`th register, moved through every bus above it to
    /// a CPU address; `None` if it has no such register, or a bus does
    /// not map it.
    pub(super) fn register(&self, index: usize) -> Option<Region> {
        let reg = self.node().reg().ok()??.nth(index)?;
        let (mut address, size) = (reg.address::<u64>().ok()?, reg.size::<u64>().ok()?);
        // The buses: every node between the root and this one.
        for bus in self.nodes[1..self.nodes.len() - 1].iter().rev() {
            address = through(*bus, address, size)?;
        }
        Some(Region { base: usize::try_from(address).ok()?, size: usize::try_from(size).ok()? })
    }
}

/// `address` (and the `size` bytes after it) on `bus`'s children's side,
/// on its parent's side.
fn through(bus: FdtNode<'static>, address: u64, size: u64) -> Option<u64> {
    let ranges = bus.ranges().ok()??;
    let mut windows = ranges.peekable();
    if windows.peek().is_none() {
        return Some(address); // `ranges;`: one to one
    }
    windows.find_map(|window| {
        let child = window.child_bus_address::<u64>().ok()?;
        let length = window.length::<u64>().ok()?;
        let parent = window.parent_bus_address::<u64>().ok()?;
        let offset = address.checked_sub(child)?;
        (offset.checked_add(size)? <= length).then(|| parent + offset)
    })
}

/// The node at `path` (such as `/soc/serial@7e201000`), with the buses
/// above it.
pub(super) fn at(fdt: Fdt<'static>, path: &str) -> Option<Path> {
    let mut nodes = heapless::Vec::new();
    nodes.push(fdt.root()).ok()?;
    for name in path.split('/').filter(|name| !name.is_empty()) {
        let next = nodes.last()?.children().find(|child| child.name() == name)?;
        nodes.push(next).ok()?;
    }
    Some(Path { nodes })
}

/// The first node, depth first, that is enabled and `wanted`.
pub(super) fn find(fdt: Fdt<'static>, wanted: &impl Fn(FdtNode<'static>) -> bool) -> Option<Path> {
    let mut path = Path { nodes: heapless::Vec::new() };
    path.nodes.push(fdt.root()).ok()?;
    search(&mut path, wanted).then_some(path)
}

/// Depth first below `path`'s node; on success `path` ends at the find.
fn search(path: &mut Path, wanted: &impl Fn(FdtNode<'static>) -> bool) -> bool {
    for child in path.node().children() {
        if matches!(child.status(), Ok(Status::Disabled)) {
            continue;
        }
        if path.nodes.push(child).is_err() {
            return false; // too deep to look further
        }
        if wanted(child) || search(path, wanted) {
            return true;
        }
        path.nodes.pop();
    }
    false
}

/// The node an alias (`serial0`) or a path names, as `stdout-path` and
/// `/aliases` do; anything after a `:` (`serial0:115200n8`) is options.
pub(super) fn named(fdt: Fdt<'static>, name: &str) -> Option<Path> {
    let name = name.split(':').next()?;
    if name.starts_with('/') {
        return at(fdt, name);
    }
    let aliases = fdt.find_node("/aliases")?;
    at(fdt, aliases.property(name)?.value_as::<&str>().ok()?)
}
