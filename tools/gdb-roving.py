"""roving's GDB extension: pools, cores and strands, read out of a halted
roving program's memory with no help from the program. `make gdb` and
`tools/gdb` load it; in any GDB session, `source tools/gdb-roving.py`.

    roving cores          each core: the strand it runs, or roving's loop, or idle
    roving pools          each pool: its cores, its state, its live strands
    roving strands        every live strand: what it waits for, its fibre,
                          resident or copied out, its priority
    roving bt STRAND      a strand's backtrace: running, suspended on its
                          fibre, or copied off it
    roving mutex ADDRESS  a mutex's holder and its waiters, in order
    roving trace [FILE]   each pool's trace rings (feature trace), in the
                          dump format tools/trace reads

It reads roving's structures by their names in the program's debug
information, so it sees the layout of the build it looks at. What the
names mean is versioned: the program's table ROVING_DEBUG
(src/debug_table.rs) carries the version of the structures, which must be
EXPECTED_VERSION below, and the sizes that are build-time constants.

`roving bt` on a strand that is not running points one core's registers
at the strand's saved ones for GDB's `bt`, and, for a strand whose stack is
copied out, puts the saved image back where it will be restored to; both
are put back as they were before the command ends. The core and memory
are the halted target's: nothing runs meanwhile.
"""

import re
import struct

import gdb

EXPECTED_VERSION = 1

# A strand's `state` byte (src/strand/control.rs, `state`).
BLOCKED_STATES = {1: "blocked", 5: "blocked, shielded from cancels"}
STATE_NAMES = {0: "runnable", 2: "woken", 3: "timed out", 4: "interrupted"}
# Its `flags` word.
FLAG_CANCELLED = 1 << 0
# A wait-queue link with this bit set is an async task's, not a strand's.
TASK_LINK = 1
# `siblings[NEXT]` in a strand's tree node (src/strand/tree.rs).
NEXT = 1
# The trace dump's format (src/trace/dump.rs), and an event's packed
# arguments (src/trace/event.rs, `TraceEvent::encode`).
TRACE_DUMP_VERSION = 2
# A timer slot in no heap, and the heap's chunk (src/timers.rs,
# src/timers/chunked.rs): an entry is a deadline and a target word.
TIMER_NOT_QUEUED = 0xFFFF_FFFF
TIMER_CHUNK = 64
TIMER_ENTRY_BYTES = 16
TRACE_NONE = 0xFF_FFFF
WOKEN = ["signalled", "timed-out", "cancelled"]


class RovingError(gdb.GdbError):
    """A clear refusal: the program is not what the extension can read."""


def global_value(name):
    symbol = gdb.lookup_global_symbol(name) or gdb.lookup_static_symbol(name)
    if symbol is None:
        raise RovingError(
            f"roving: no '{name}' in the program's debug information "
            "(is it a roving program, built with debug information?)"
        )
    return symbol.value()


def field(value, name):
    """`value.name`, or a clear error if roving's layout moved."""
    kind = value.type.strip_typedefs()
    if name not in [f.name for f in kind.fields()]:
        raise RovingError(
            f"roving: {kind} has no field '{name}': the program's structures "
            f"are not those of layout version {EXPECTED_VERSION}"
        )
    return value[name]


def path(value, *names):
    for name in names:
        value = field(value, name)
    return value


def scalar(value):
    """The number inside wrappers of one field (atomics, cells, NonZero)."""
    while True:
        kind = value.type.strip_typedefs()
        if kind.code in (gdb.TYPE_CODE_INT, gdb.TYPE_CODE_PTR, gdb.TYPE_CODE_BOOL, gdb.TYPE_CODE_ENUM):
            return int(value)
        if kind.code != gdb.TYPE_CODE_STRUCT:
            return int(value)
        fields = [f for f in kind.fields() if "PhantomData" not in str(f.type)]
        if len(fields) != 1:
            raise RovingError(f"roving: cannot read a number from {kind}")
        value = value[fields[0]]


def lock_data(spin_lock):
    """What a roving SpinLock guards."""
    return path(spin_lock, "inner", "data", "value")


def vec_buffer(vector):
    """The address of a Vec's elements (inside RawVec, Unique, NonNull)."""
    buffer = field(vector, "buf")
    while buffer.type.strip_typedefs().code == gdb.TYPE_CODE_STRUCT:
        names = [f.name for f in buffer.type.strip_typedefs().fields()]
        buffer = buffer["inner" if "inner" in names else "ptr" if "ptr" in names else "pointer"]
    return int(buffer)


def enum_names(type_name):
    kind = gdb.lookup_type(type_name).strip_typedefs()
    return {f.enumval: f.name.split("::")[-1] for f in kind.fields()}


def read_words(address, count, width):
    memory = gdb.selected_inferior().read_memory(address, count * width)
    return list(struct.unpack(f"<{count}{'Q' if width == 8 else 'I'}", bytes(memory)))


class Program:
    """What one look at the halted program found: its table and layouts."""

    def __init__(self):
        table = self._table_address()
        if table is None:
            raise RovingError(
                "roving: the program has no ROVING_DEBUG table (src/debug_table.rs): "
                "not a roving kernel, or one older than the extension"
            )
        raw = bytes(gdb.selected_inferior().read_memory(table, 40))
        magic, version, self.word = raw[:8], *struct.unpack("<II", raw[8:16])
        if magic != b"rovingdb":
            raise RovingError("roving: ROVING_DEBUG does not start with its magic; the table is not roving's")
        if version != EXPECTED_VERSION:
            raise RovingError(
                f"roving: the program's structures are layout version {version}, this extension reads "
                f"version {EXPECTED_VERSION}: use the tools/gdb-roving.py of the program's own roving"
            )
        self.fibre_count, self.stack_bytes, self.guard_bytes = struct.unpack("<QQQ", raw[16:40])
        self.slot_bytes = self.stack_bytes + self.guard_bytes
        self.fibres = global_value("roving::strand::fibre::TABLE")
        self.fibre_size = self.fibres[0].type.sizeof
        self.region = int(global_value("roving::strand::fibre::REGION").address)
        self.header_type = gdb.lookup_type("roving::strand::control::Header")
        # A finished strand's `joiner`: a dangling pointer, its alignment.
        self.finished = self.header_type.alignof
        self.reasons = enum_names("roving::strand::id::BlockReason")
        self.priorities = enum_names("roving::strand::id::Priority")
        self.cores = self._cores()

    @staticmethod
    def _table_address():
        # By the symbol table: the table has no type in the debug
        # information, and this works whatever the current language.
        try:
            text = gdb.execute("info address ROVING_DEBUG", to_string=True)
        except gdb.error:
            return None
        found = re.search(r"is at (0x[0-9a-fA-F]+)", text)
        return int(found.group(1), 16) if found else None

    # Fibres.

    def fibre_index(self, fibre_pointer):
        return (fibre_pointer - int(self.fibres.address)) // self.fibre_size

    def fibre_of_stack(self, address):
        """The fibre whose stack holds `address`, if any."""
        offset = address - self.region
        index = offset // self.slot_bytes
        if offset < 0 or index >= self.fibre_count or offset % self.slot_bytes < self.guard_bytes:
            return None
        return index

    def stack_top(self, index):
        return self.region + (index + 1) * self.slot_bytes

    # Cores: each of GDB's threads is one.

    def _cores(self):
        cores = []
        selected = gdb.selected_thread()
        try:
            for thread in sorted(gdb.selected_inferior().threads(), key=lambda t: t.num):
                thread.switch()
                frame = gdb.newest_frame()
                sp = int(gdb.parse_and_eval("$sp"))
                fibre = self.fibre_of_stack(sp)
                running = None
                if fibre is not None:
                    running = scalar(field(self.fibres[fibre], "running")) or None
                cores.append({
                    "thread": thread.num,
                    "handle": thread,
                    "name": thread.name or f"thread {thread.num}",
                    "function": frame.name() or f"{frame.pc():#x}",
                    "pc": frame.pc(),
                    "fibre": fibre,
                    "running": running,
                })
        finally:
            if selected is not None:
                selected.switch()
        return cores

    # Pools.

    def pools(self):
        """(Shared, its cores) for each pool holding a core; none if the
        program never builds a pool (its table of owners is then gone)."""
        name = "roving::pool::core_owners::OWNERS"
        if (gdb.lookup_global_symbol(name) or gdb.lookup_static_symbol(name)) is None:
            return []
        owners = global_value(name)
        count = owners.type.strip_typedefs().range()[1] + 1
        shared_type = gdb.lookup_type("roving::pool::shared::Shared").pointer()
        pools = {}
        for core in range(count):
            owner = scalar(owners[core])
            if owner:
                pools.setdefault(owner, []).append(core)
        return [(gdb.Value(address).cast(shared_type).dereference(), cores) for address, cores in pools.items()]

    def shared(self, address):
        shared_type = gdb.lookup_type("roving::pool::shared::Shared").pointer()
        return gdb.Value(address).cast(shared_type).dereference()

    def entries(self, shared):
        vector = lock_data(path(shared, "strands", "entries"))
        length = scalar(field(vector, "len"))
        return read_words(vec_buffer(vector), length, self.word) if length else []

    # Strands.

    def header(self, address):
        return gdb.Value(address).cast(self.header_type.pointer()).dereference()

    def subtree(self, top):
        """`top` and every strand below it, each before its children."""
        pending = [top]
        while pending:
            address = pending.pop()
            yield address
            header = self.header(address)
            children = []
            child = scalar(field(lock_data(path(header, "tree", "family")), "first"))
            while child:
                children.append(child)
                child = int(path(self.header(child), "tree", "siblings", "value")[NEXT])
            # Linked newest first: the oldest is popped first.
            pending.extend(children)

    def strands(self):
        """(pool, strand address) for every live strand of every pool."""
        found = []
        for shared, _cores in self.pools():
            for entry in self.entries(shared):
                # The registry keeps finished entries until it sweeps.
                if scalar(field(self.header(entry), "joiner")) == self.finished:
                    continue
                for address in self.subtree(entry):
                    found.append((int(shared.address), address))
        return found

    def deadline(self, shared, header):
        """The tick a strand's timed wait ends at, if it has one armed."""
        slot = field(header, "timer")
        index = scalar(slot)
        if index == TIMER_NOT_QUEUED:
            return None
        heap = lock_data(path(shared, "timers", "heap"))
        if index >= scalar(field(heap, "len")):
            return None
        chunks = field(heap, "chunks")
        if index // TIMER_CHUNK >= scalar(field(chunks, "len")):
            return None
        # Each chunk is a Box<[Entry]>: its data pointer, then its length.
        chunk = read_words(vec_buffer(chunks) + (index // TIMER_CHUNK) * 2 * self.word, 1, 8)[0]
        deadline, target = read_words(chunk + (index % TIMER_CHUNK) * TIMER_ENTRY_BYTES, 2, 8)
        return deadline if target == int(slot.address) else None

    def describe(self, address, ids, shared=None):
        """A strand's line: what it does, then where its stack is."""
        header = self.header(address)
        strand = scalar(field(header, "id"))
        state = scalar(field(header, "state"))
        fibre = self.fibre_index(int(field(header, "fibre")))
        resident = scalar(field(self.fibres[fibre], "resident_id")) == strand
        priority = self.priorities.get(scalar(field(header, "priority")), "?")
        core = next((c for c in self.cores if c["running"] == address), None)
        if core is not None:
            doing = f"running on {core['name']}"
        elif state in BLOCKED_STATES:
            doing = self.wait(header, ids)
            deadline = self.deadline(shared, header) if shared is not None else None
            if deadline is not None:
                doing += f" until tick {deadline}"
        elif state == 0 and scalar(field(header, "preempted")):
            doing = "preempted, waiting for its turn"
        else:
            doing = STATE_NAMES.get(state, f"state {state}")
        stack = "resident" if resident else "copied out"
        cancelled = ", cancelled" if scalar(field(header, "flags")) & FLAG_CANCELLED else ""
        return strand, f"strand #{strand}: {doing}; fibre {fibre}, {stack}; priority {priority}{cancelled}"

    def wait(self, header, ids):
        reason = self.reasons.get(scalar(field(header, "reason")), "?")
        target = scalar(field(header, "waits_on"))
        if reason == "Mutex" and target:
            holder = self.mutex_holder(target)
            held = f"strand #{holder}" if holder else "no strand (a task, or code outside the pool)"
            return f"blocked on the mutex at {target:#x}, held by {held}"
        if reason == "Join" and target:
            return f"blocked joining strand #{ids.get(target) or scalar(field(self.header(target), 'id'))}"
        if reason == "Sleeping":
            return "sleeping"
        where = f" on the object at {target:#x}" if target else ""
        return f"blocked ({reason}){where}"

    def mutex(self, address):
        return gdb.Value(address).cast(gdb.lookup_type("roving::strand::lock::Core").pointer()).dereference()

    def mutex_holder(self, address):
        holder = scalar(field(self.mutex(address), "holder"))
        return scalar(field(self.header(holder), "id")) if holder else None

    def mutex_waiters(self, address):
        """The mutex's waiters, in order: strand ids, or None for a task."""
        queue = lock_data(field(self.mutex(address), "waiters"))
        links_type = gdb.lookup_type("roving::strand::wait::queue::WaitLinks").pointer()
        wait_offset = next(f.bitpos // 8 for f in self.header_type.fields() if f.name == "wait")
        waiters = []
        link = scalar(field(queue, "head"))
        while link and len(waiters) < 100_000:
            links = link & ~TASK_LINK
            if link & TASK_LINK:
                waiters.append(None)
            else:
                waiters.append(scalar(field(self.header(links - wait_offset), "id")))
            link = scalar(field(gdb.Value(links).cast(links_type).dereference(), "next"))
        return waiters


def slice_items(boxed):
    """(address, length) of a Box<[T]>."""
    return int(field(boxed, "data_ptr")), scalar(field(boxed, "length"))


def trace_event(word, reasons):
    """A packed trace event as the dump names it (src/trace/dump.rs)."""
    kind, a, b = word >> 56, (word >> 32) & TRACE_NONE, word & 0xFFFF_FFFF
    simple = {0: "task-begin", 1: "task-end", 5: "slept", 15: "join-published", 16: "join-taken-back"}
    counted = {2: "drained", 4: "injected", 8: "strand-in", 10: "stack-saved", 11: "stack-restored",
               12: "actor-turn", 13: "loop-drained", 17: "irq-begins", 18: "irq-ends"}
    if kind in simple:
        return simple[kind]
    if kind in counted:
        return f"{counted[kind]} {b}"
    if kind == 3:
        return f"stole {'-' if a == TRACE_NONE else a} {b}"
    if kind == 6:
        return f"woke {'deep' if a & 1 else 'light'} {b if a & 2 else '-'}"
    if kind == 7:
        return f"wakeup {a} {b}"
    if kind == 19:
        return f"wakeup {a} nudged"
    if kind == 9:
        left = {0: "yielded", 1: "preempted", 2: "finished"}.get(a)
        if left is None and 16 <= a < 272:
            left = f"blocked {reasons.get(a - 16, '?')}"
        return None if left is None else f"strand-out {b} {left}"
    if kind == 14:
        return f"future-completed {'broken' if a else 'ok'}"
    if kind == 20 and a < len(WOKEN):
        return f"strand-woken {b} {WOKEN[a]}"
    return None


def trace_dump(program, shared):
    """The dump of one pool's rings, as `Pool::write_trace` writes it."""
    rings_address, cores = slice_items(field(field(shared, "trace"), "__0"))
    ring_type = gdb.lookup_type("roving::protocol::trace_ring::Ring")
    hz = scalar(global_value("roving::trace::rings::TICK_HZ"))
    lines = [f"roving-trace {TRACE_DUMP_VERSION} cores={cores} tick_hz={hz} complete=no"]
    for core in range(cores):
        ring = gdb.Value(rings_address + core * ring_type.sizeof).cast(ring_type.pointer()).dereference()
        slots, capacity = slice_items(field(ring, "slots"))
        end = scalar(field(ring, "next"))
        events = []
        for index in range(max(0, end - capacity), end):
            sequence, ticks, data = read_words(slots + (index % capacity) * 24, 3, 8)
            if sequence != 2 * (index + 1):
                continue
            name = trace_event(data, program.reasons)
            if name is not None:
                events.append(f"roving-trace e {core} {ticks} {name}")
        lines.append(f"roving-trace core {core} offset=0 lost={end - len(events)}")
        lines.extend(events)
    lines.append("roving-trace end")
    return lines


def strand_table(program):
    strands = program.strands()
    ids = {address: scalar(field(program.header(address), "id")) for _, address in strands}
    return strands, ids


class Roving(gdb.Command):
    """roving's view of the program: roving cores | pools | strands | bt STRAND | mutex ADDRESS."""

    def __init__(self):
        super().__init__("roving", gdb.COMMAND_DATA, gdb.COMPLETE_NONE, True)


def frame_names(limit=48):
    """The selected thread's function names, innermost first."""
    names, frame = [], gdb.newest_frame()
    while frame is not None and len(names) < limit:
        names.append(frame.name() or "")
        try:
            frame = frame.older()
        except gdb.error:
            break
    return names


# What the functions a core stops in say it does (the kernel's idle tiers
# and interrupt entry, kernel/src/arch/*/idle.rs and exception.rs).
IDLE_TIERS = [("sleep_deep", "asleep, deep tier (WFI/HLT)"), ("sleep_light", "asleep, light tier (WFE)"),
              ("monitor_wait", "asleep, light tier (MWAIT)"),
              ("roving::platform::wait_for_event", "idle, about to sleep or just woken")]
HANDLER_FRAMES = ("roving_kernel::interrupts::dispatch", "handle_irq", "handle_vector")
COUNTERS = ["tasks_run", "stolen", "sleeps", "deep_sleeps", "wakeups", "preempted"]


class Cores(gdb.Command):
    """Each core (each of GDB's threads, core N being QEMU's CPU#N): its pool, the strand or task it runs, an interrupt handler, or its idle tier; and its counters."""

    def __init__(self):
        super().__init__("roving cores", gdb.COMMAND_DATA)

    def invoke(self, argument, from_tty):
        program = Program()
        owners = {}
        for shared, cores in program.pools():
            for core in cores:
                owners[core] = shared
        selected = gdb.selected_thread()
        try:
            for index, core in enumerate(program.cores):
                core["handle"].switch()
                print(f"core {index} ({core['name']}): {self.doing(program, index, core, owners.get(index))}")
        finally:
            selected.switch()

    @staticmethod
    def doing(program, index, core, shared):
        names = frame_names()
        handler = any(any(mark in name for mark in HANDLER_FRAMES) for name in names)
        where = f"in {core['function']}"
        if shared is None:
            return f"in no pool, {where}"
        per_core_address, count = slice_items(field(shared, "cores"))
        per_core_type = gdb.lookup_type("roving::pool::per_core::PerCore")
        per_core = gdb.Value(per_core_address + index * per_core_type.sizeof).cast(per_core_type.pointer()).dereference()
        turn = field(field(per_core, "turn"), "__0")
        counters = field(field(per_core, "stats"), "__0")
        counts = ", ".join(f"{name} {scalar(field(counters, name))}" for name in COUNTERS)
        task = scalar(field(turn, "running"))
        pool = f"pool {int(shared.address):#x}"
        if task:
            strand = scalar(field(program.header(task), "id"))
            doing = f"strand #{strand}" + (", interrupted by a handler" if handler else "")
        elif handler:
            doing = "an interrupt handler"
        elif core["running"]:
            doing = "a fork-join job on a fibre"
        else:
            tier = next((words for mark, words in IDLE_TIERS if any(mark in name for name in names)), None)
            doing = tier or "its loop or a task"
        return f"{pool}, {doing}, {where}; {counts}"


class Pools(gdb.Command):
    """Each pool: its cores, its state and its live strands."""

    def __init__(self):
        super().__init__("roving pools", gdb.COMMAND_DATA)

    def invoke(self, argument, from_tty):
        program = Program()
        if not program.pools():
            print("no pool holds a core")
        states = {0: "ready", 1: "running", 2: "quiescing", 3: "stopped", 4: "winding down"}
        for shared, cores in program.pools():
            live = scalar(path(shared, "strands", "live"))
            members = scalar(field(shared, "member_count"))
            state = scalar(field(shared, "state"))
            print(
                f"pool {int(shared.address):#x}: cores {cores} ({members} members), "
                f"state {states.get(state, state)}, {live} live strands, "
                f"{len(program.entries(shared))} entered from outside"
            )


class Strands(gdb.Command):
    """Every live strand: what it does or waits for, its fibre, its stack, its priority."""

    def __init__(self):
        super().__init__("roving strands", gdb.COMMAND_DATA)

    def invoke(self, argument, from_tty):
        program = Program()
        strands, ids = strand_table(program)
        if not strands:
            print("no live strands")
        pool = None
        for shared, address in strands:
            if shared != pool:
                pool = shared
                print(f"pool {shared:#x}:")
            print("  " + program.describe(address, ids, program.shared(shared))[1])


class Mutex(gdb.Command):
    """roving mutex ADDRESS: the holder of the mutex at ADDRESS (as `roving strands` names it) and its waiters, in order."""

    def __init__(self):
        super().__init__("roving mutex", gdb.COMMAND_DATA)

    def invoke(self, argument, from_tty):
        if not argument.strip():
            raise RovingError("usage: roving mutex ADDRESS (the address `roving strands` gives)")
        program = Program()
        address = int(gdb.parse_and_eval(argument))
        mutex = program.mutex(address)
        holder = program.mutex_holder(address)
        locked = scalar(field(mutex, "state")) != 0
        poisoned = " (poisoned)" if scalar(field(mutex, "poisoned")) else ""
        if holder:
            print(f"mutex {address:#x}{poisoned}: held by strand #{holder}")
        elif locked:
            print(f"mutex {address:#x}{poisoned}: locked, by no strand (a task, or code outside the pool)")
        else:
            print(f"mutex {address:#x}{poisoned}: unlocked")
        waiters = program.mutex_waiters(address)
        for place, strand in enumerate(waiters, 1):
            print(f"  waiter {place}: " + (f"strand #{strand}" if strand else "an async task"))
        if not waiters:
            print("  no waiters")


class Backtrace(gdb.Command):
    """roving bt STRAND: the backtrace of strand STRAND (a number, or #number)."""

    def __init__(self):
        super().__init__("roving bt", gdb.COMMAND_STACK)

    def invoke(self, argument, from_tty):
        number = argument.strip().lstrip("#")
        if not number.isdigit():
            raise RovingError("usage: roving bt STRAND (a strand's number, as `roving strands` gives it)")
        program = Program()
        strands, ids = strand_table(program)
        address = next((a for a, strand in ids.items() if strand == int(number)), None)
        if address is None:
            raise RovingError(f"roving: no live strand #{number}")
        core = next((c for c in program.cores if c["running"] == address), None)
        if core is not None:
            print(f"strand #{number} is running on {core['name']}:")
            selected = gdb.selected_thread()
            try:
                core["handle"].switch()
                print(gdb.execute("bt", to_string=True), end="")
            finally:
                selected.switch()
            return
        print(suspended_backtrace(program, program.header(address), int(number)), end="")


def suspended_backtrace(program, header, number):
    """GDB's `bt` of a strand that is not running, from its saved context."""
    fibre = program.fibre_index(int(field(header, "fibre")))
    resident = scalar(field(program.fibres[fibre], "resident_id")) == number
    saved_sp = scalar(path(header, "context", "value", "stack_pointer"))
    inferior = gdb.selected_inferior()
    aarch64 = "aarch64" in inferior.architecture().name()
    names = ["pc", "sp", "x19", "x29", "x30"] if aarch64 else ["pc", "sp", "rbx", "rbp"]
    kept = {name: int(gdb.parse_and_eval(f"${name}")) for name in names}
    put_back = None
    try:
        if not resident:
            save = path(header, "saved", "value")
            length = scalar(field(save, "len"))
            # An Option<NonNull<u8>>: the pointer's word, 0 for None.
            memory = read_words(int(field(save, "memory").address), 1, 8)[0]
            top = program.stack_top(fibre)
            put_back = (top - length, bytes(inferior.read_memory(top - length, length)))
            inferior.write_memory(top - length, bytes(inferior.read_memory(memory, length)))
        # What a switch saved at the strand's stack pointer
        # (src/raw/context/*.rs): where it resumes, and the registers the
        # compiler may keep a frame in; its stack pointer once resumed.
        if aarch64:
            resume, _spare, x19, x29 = read_words(saved_sp, 4, 8)
            values = {"pc": resume, "sp": saved_sp + 32, "x19": x19, "x29": x29, "x30": 0}
        else:
            resume, rbx, rbp = read_words(saved_sp, 3, 8)
            values = {"pc": resume, "sp": saved_sp + 24, "rbx": rbx, "rbp": rbp}
        for name, value in values.items():
            gdb.execute(f"set ${name} = {value:#x}", to_string=True)
        where = "resident on" if resident else "copied off"
        text = f"strand #{number} is suspended, {where} fibre {fibre}:\n"
        text += gdb.execute("bt", to_string=True)
    finally:
        for name, value in kept.items():
            gdb.execute(f"set ${name} = {value:#x}", to_string=True)
        if put_back is not None:
            inferior.write_memory(put_back[0], put_back[1])
        gdb.execute("maintenance flush register-cache", to_string=True)
    return text


class Trace(gdb.Command):
    """roving trace [FILE]: each pool's trace rings (a program built with feature trace), in the dump format tools/trace reads, to FILE or the terminal."""

    def __init__(self):
        super().__init__("roving trace", gdb.COMMAND_DATA, gdb.COMPLETE_FILENAME)

    def invoke(self, argument, from_tty):
        program = Program()
        shared_type = gdb.lookup_type("roving::pool::shared::Shared")
        if "trace" not in [f.name for f in shared_type.fields()]:
            raise RovingError("roving: the program was built without feature trace: it keeps no trace")
        lines = []
        for shared, _cores in program.pools():
            lines.extend(trace_dump(program, shared))
        if not lines:
            raise RovingError("roving: no pool holds a core, so there is no trace to read")
        if argument.strip():
            with open(argument.strip(), "w", encoding="utf-8") as out:
                out.write("\n".join(lines) + "\n")
            events = sum(line.startswith("roving-trace e ") for line in lines)
            print(f"roving: {events} events written to {argument.strip()}")
        else:
            print("\n".join(lines))


Roving()
Cores()
Pools()
Strands()
Mutex()
Backtrace()
Trace()
