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
            addr2line::Loader::new(elf).map_err(|error| format!("cannot read {}: {error}", elf.display()))
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
