//! Function, file and line of code addresses, from the ELF's debug
//! information (or its symbol table, where that has none).

use std::path::PathBuf;

/// The ELF's debug information, loaded when the first frame needs it.
pub struct Names {
    elf: PathBuf,
    loaded: Option<Result<addr2line::Loader, String>>,
    /// The working directory, stripped from file names to keep them short.
    here: String,
}

impl Names {
    pub fn new(elf: PathBuf) -> Self {
        let here = std::env::current_dir().map(|d| format!("{}/", d.display())).unwrap_or_default();
        Self { elf, loaded: None, here }
    }

    /// What to append to a frame line for `address`: ` FUNCTION at
    /// FILE:LINE:COLUMN`, then a line for each function it is inlined into.
    /// A return address (not `exact`) is looked up one byte before itself,
    /// in the call that returns there: the next instruction may belong to
    /// another line or even another function.
    pub fn describe(&mut self, address: u64, exact: bool) -> String {
        let elf = &self.elf;
        let loaded = self.loaded.get_or_insert_with(|| {
            let readable = without_link_relocations(elf);
            let path = readable.as_ref().map_or(elf.as_path(), |copy| copy.path());
            addr2line::Loader::new(path).map_err(|error| format!("cannot read {}: {error}", elf.display()))
        });
        let loader = match loaded {
            Ok(loader) => loader,
            Err(why) => return format!(" (no name: {why})"),
        };
        let probe = if exact { address } else { address.saturating_sub(1) };
        let mut names = Vec::new();
        if let Ok(mut frames) = loader.find_frames(probe) {
            while let Ok(Some(frame)) = frames.next() {
                let function = frame
                    .function
                    .as_ref()
                    .and_then(|name| name.demangle().ok())
                    .map_or_else(|| "??".to_owned(), |name| name.into_owned());
                let place = frame.location.map(|at| place(&self.here, &at)).unwrap_or_default();
                names.push(format!("{function}{place}"));
            }
        }
        if names.iter().all(|name| name.starts_with("??")) {
            names.clear();
            if let Some(symbol) = loader.find_symbol(probe) {
                names.push(addr2line::demangle_auto(symbol.into(), None).into_owned());
            }
        }
        let mut text = String::new();
        for (i, name) in names.iter().enumerate() {
            if i == 0 {
                text.push(' ');
            } else {
                text.push_str("\n           inlined into ");
            }
            text.push_str(name);
        }
        if text.is_empty() {
            text.push_str(" ??");
        }
        text
    }
}

/// ` at FILE:LINE:COLUMN`, the file relative to `here` if it is inside it.
fn place(here: &str, at: &addr2line::Location<'_>) -> String {
    let Some(file) = at.file else { return String::new() };
    let file = file.strip_prefix(here).unwrap_or(file);
    match (at.line, at.column) {
        (Some(line), Some(column)) => format!(" at {file}:{line}:{column}"),
        (Some(line), None) => format!(" at {file}:{line}"),
        _ => format!(" at {file}"),
    }
}

/// A copy of `elf` without the relocations a link kept for its debug
/// sections (the PC kernels link with --emit-relocs, for tools/pc-relocs),
/// if it has any: the debug information is linked already, and the
/// loader would try to apply them again, and complain. Those relocating a
/// section that is not loaded become `SHT_NULL`; nothing else changes.
fn without_link_relocations(elf: &std::path::Path) -> Option<TempCopy> {
    let mut data = std::fs::read(elf).ok()?;
    let word = |data: &[u8], at: usize, len: usize| -> Option<usize> {
        let bytes = data.get(at..at + len)?;
        Some(bytes.iter().rev().fold(0, |value, &byte| value << 8 | byte as usize))
    };
    // A 64-bit little-endian executable (ELFCLASS64, ELFDATA2LSB, ET_EXEC).
    if data.get(..6)? != b"\x7fELF\x02\x01" || word(&data, 0x10, 2)? != 2 {
        return None;
    }
    let (headers, header_size, count) = (word(&data, 0x28, 8)?, word(&data, 0x3a, 2)?, word(&data, 0x3c, 2)?);
    let mut nulled = 0;
    for index in 0..count {
        const SHT_RELA: usize = 4;
        const SHF_ALLOC: usize = 2;
        let header = headers + index * header_size;
        if word(&data, header + 4, 4)? != SHT_RELA {
            continue;
        }
        let target = word(&data, header + 0x2c, 4)?; // sh_info: the section relocated
        if word(&data, headers + target * header_size + 8, 8)? & SHF_ALLOC == 0 {
            data.get_mut(header + 4..header + 8)?.copy_from_slice(&0u32.to_le_bytes()); // SHT_NULL
            nulled += 1;
        }
    }
    if nulled == 0 {
        return None;
    }
    let copy = TempCopy(std::env::temp_dir().join(format!("roving-symbolize-{}.elf", std::process::id())));
    std::fs::write(copy.path(), &data).ok()?;
    Some(copy)
}

/// A file removed when dropped.
struct TempCopy(PathBuf);

impl TempCopy {
    fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempCopy {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
