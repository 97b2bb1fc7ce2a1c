#!/usr/bin/env python3
"""tools/layers's own test: small crates written here, each with a map,
that the check must pass or fail, and the real tree with one import
turned upside down, which it must refuse.

    python3 tests/tools/layers_test.py
"""

import pathlib
import shutil
import subprocess
import sys
import tempfile
import textwrap

REPO = pathlib.Path(__file__).resolve().parents[2]
TOOL = REPO / "tools" / "layers"

# Three layers, top first: `app` over `core`, `core` over `base`.
MAP = """\
```layers
top: =crate app
middle: core
bottom: base core::leaf
{allow}
```
"""


def crate(root, files, allow=""):
    """Writes `files` (path -> text) under root/src and the map beside it."""
    for path, text in files.items():
        target = root / "src" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text))
    (root / "map.md").write_text(MAP.format(allow=allow))


def check(root, *extra):
    run = subprocess.run(
        [sys.executable, str(TOOL), "--root", str(root / "src"), "--map", str(root / "map.md"), *extra],
        capture_output=True,
        text=True,
    )
    return run.returncode, run.stdout + run.stderr


# A crate whose imports all point down.
GOOD = {
    "lib.rs": """\
        mod app;
        mod base;
        mod core;
        pub use app::Thing;
        pub(crate) use core::leaf;
        """,
    "app.rs": """\
        use crate::core::Engine;
        pub struct Thing(Engine);
        """,
    "core.rs": """\
        pub mod leaf;
        use crate::base::Word;
        pub struct Engine(Word, leaf::Leaf);
        """,
    "core/leaf.rs": "pub struct Leaf;\n",
    "base.rs": """\
        // Comments, strings and tests may name anything: crate::app::Thing.
        pub struct Word(&'static str);
        pub const NAME: Word = Word("crate::app");
        #[cfg(test)]
        mod tests {
            use crate::app::Thing;
        }
        """,
}

failures = []


def expect(label, files, passes, says=(), allow="", extra=()):
    with tempfile.TemporaryDirectory() as directory:
        root = pathlib.Path(directory)
        crate(root, {**GOOD, **files}, allow)
        status, output = check(root, *extra)
    wrong = (status == 0) != passes or any(s not in output for s in says)
    if wrong:
        failures.append(f"{label}: status {status}, output:\n{output}")
    print(f"{'FAIL' if wrong else 'ok  '} {label}")


expect("imports that point down pass", {}, True, ["every import points down"])
expect(
    "a lower layer importing an upper one fails, naming the file and line",
    {"base.rs": "pub struct Word(&'static str);\nuse crate::core::Engine;\n"},
    False,
    ["src/base.rs:2: `base` (bottom) imports `core` (middle), a layer above it"],
)
expect(
    "a path written in code counts as an import",
    {"base.rs": "pub struct Word(&'static str);\nfn f() { let _ = crate::app::Thing::default; }\n"},
    False,
    ["`base` (bottom) imports `app` (top)"],
)
expect(
    "an item re-exported elsewhere is its own module's",
    {"base.rs": "pub struct Word(&'static str);\nfn f(_: crate::Thing) {}\n"},
    False,
    ["`base` (bottom) imports `app` (top)"],
)
expect(
    "an item of the crate root is the root's",
    {
        "lib.rs": GOOD["lib.rs"] + "pub fn helper() {}\n",
        "base.rs": "pub struct Word(&'static str);\nfn f() { crate::helper() }\n",
    },
    False,
    ["`base` (bottom) imports `crate` (top)"],
)
expect(
    "a module re-exported under another name is still itself",
    {"base.rs": "pub struct Word(&'static str);\nuse crate::leaf::Leaf;\n"},
    True,
)
expect(
    "a use tree's head alone is no import",
    {"base.rs": "pub struct Word(&'static str);\nuse crate::core::leaf::{self as _, Leaf};\n"},
    True,
)
expect(
    "`super::` climbs to the parent's siblings",
    {"core/leaf.rs": "pub struct Leaf;\nuse super::super::app::Thing;\n"},
    False,
    ["`core::leaf` (bottom) imports `app` (top)"],
)
expect(
    "a module in no layer fails",
    {"lib.rs": GOOD["lib.rs"] + "mod stray;\n", "stray.rs": "\n"},
    False,
    ["`stray` is in no layer"],
)
expect(
    "an allowed upward import passes",
    {"base.rs": "pub struct Word(&'static str);\nuse crate::core::Engine;\n"},
    True,
    allow="allow base -> core: a reason",
)
expect(
    "an allowance nobody uses fails",
    {},
    False,
    ["allows an import nobody makes"],
    allow="allow base -> core: a reason",
)
expect(
    "a circle through two modules fails, even within a layer",
    {
        "lib.rs": GOOD["lib.rs"] + "mod other;\n",
        "other.rs": "use crate::app::Thing;\n",
        "app.rs": "use crate::core::Engine;\nuse crate::other;\npub struct Thing(Engine);\n",
    },
    False,
    ["a circle of 2 files through app, other"],
)
expect(
    "a child importing its parent is checked like any import",
    {"core/leaf.rs": "pub struct Leaf;\nuse super::Engine;\n"},
    False,
    ["`core::leaf` (bottom) imports `core` (middle)"],
)
expect(
    "a circle within one module passes",
    {
        "core.rs": GOOD["core.rs"] + "pub mod inner;\nuse inner::Part;\n",
        "core/inner.rs": "pub struct Part;\nuse super::Engine;\n",
    },
    True,
)

# The real tree: passes as it is, and fails once a lower layer's file
# names an upper one (the mailbox lists, which every queue is made of,
# naming the pool handle).
with tempfile.TemporaryDirectory() as directory:
    root = pathlib.Path(directory)
    shutil.copytree(REPO / "src", root / "src")
    shutil.copy(REPO / "docs" / "layout.md", root / "map.md")
    status, output = check(root)
    if status != 0:
        failures.append(f"the real tree: status {status}:\n{output}")
    print(f"{'FAIL' if status else 'ok  '} the real tree passes")
    listing = root / "src" / "mailbox" / "list.rs"
    listing.write_text(listing.read_text() + "\n#[allow(unused_imports)]\nuse crate::pool::Pool;\n")
    status, output = check(root)
    says = "`mailbox::list` (tasks) imports `pool::handle` (pool), a layer above it"
    wrong = status == 0 or says not in output
    if wrong:
        failures.append(f"the real tree with an upward import: status {status}:\n{output}")
    print(f"{'FAIL' if wrong else 'ok  '} the real tree with an upward import fails:")
    print(textwrap.indent(output.strip(), "       "))

if failures:
    print("\n".join(failures), file=sys.stderr)
    sys.exit(1)
