"""The checks of tests/qemu/gdb-check's session on the `debuggee` kernel
(tests/kernels/src/bin/debuggee.rs), with tools/gdb-roving.py loaded.
gdb-check stops the kernel at `debuggee_ready`, where every strand is
blocked or spinning, then sources this: it checks what `roving strands`,
`roving bt`, `roving mutex`, `roving cores` and `roving pools` say, and
prints a PASS line. Any failed check is a GDB error, which ends the batch
session with status 1. gdb-check then lets the kernel run to its end,
which it reaches only if looking at it changed nothing.
"""

import re

import gdb


def run(command):
    text = gdb.execute(command, to_string=True)
    print(text, end="")
    return text


def check(condition, what, text=""):
    if not condition:
        raise gdb.GdbError(f"gdb-roving-check: FAIL: {what}\n{text}")


check(gdb.selected_frame().name() == "debuggee::debuggee_ready", "stopped at debuggee_ready", "")

strands = run("roving strands")
lines = [line.strip() for line in strands.splitlines() if line.strip().startswith("strand #")]
mutex_waits = [re.match(r"strand #(\d+): blocked on the mutex at (0x[0-9a-f]+), held by strand #1;", l) for l in lines]
mutex_waits = [m for m in mutex_waits if m]
check(len(mutex_waits) == 3, "three strands blocked on the mutex, held by strand #1", strands)
mutex = mutex_waits[0].group(2)
check(all(m.group(2) == mutex for m in mutex_waits), "the three wait on one mutex", strands)
sleeping = [int(d) for l in lines for d in re.findall(r": sleeping until tick (\d+);", l)]
check(len(sleeping) == 2 and min(sleeping) > 0, "two strands sleeping, each until its deadline", strands)
check(any(l.startswith("strand #1: running on ") for l in lines), "the root running on a core", strands)
copied = [re.match(r"strand #(\d+): blocked \(Event\).*copied out", l) for l in lines]
copied = [m.group(1) for m in copied if m]
check(copied, "a strand at the gate copied off its fibre", strands)

backtrace = run(f"roving bt {copied[0]}")
check("copied off fibre" in backtrace, f"strand #{copied[0]}'s backtrace says it is copied off", backtrace)
check("debuggee::wait_at_the_gate" in backtrace, "the copied-out strand's backtrace names where it blocked", backtrace)
check("Backtrace stopped" not in backtrace, "the backtrace ends at the strand's first frame", backtrace)
preempted = [re.match(r"strand #(\d+): preempted, waiting for its turn;", l) for l in lines]
preempted = [m.group(1) for m in preempted if m]
check(preempted, "a spinning strand preempted, waiting for its turn", strands)
backtrace = run(f"roving bt {preempted[0]}")
check("roving::preempt::preempted" in backtrace, "the preempted strand's backtrace goes through the preemption", backtrace)
check("debuggee::spin_until_let_go" in backtrace, "... into the code the tick interrupted", backtrace)
locker = mutex_waits[0].group(1)
backtrace = run(f"roving bt {locker}")
check("debuggee::lock_the_mutex" in backtrace, f"strand #{locker}'s backtrace names lock_the_mutex", backtrace)
backtrace = run("roving bt 1")
check("debuggee::debuggee_ready" in backtrace, "the running root's backtrace", backtrace)

held = run(f"roving mutex {mutex}")
check(f"mutex {mutex}: held by strand #1" in held, "roving mutex names the holder", held)
waiters = re.findall(r"waiter \d+: strand #(\d+)", held)
check(sorted(waiters) == sorted(m.group(1) for m in mutex_waits), "roving mutex lists the three waiters", held)

cores = run("roving cores")
threads = len(gdb.selected_inferior().threads())
check(len(cores.strip().splitlines()) == threads, "a line per core", cores)
check(re.search(r"^core \d+ .*, strand #1, in debuggee::debuggee_ready;", cores, re.M), "the root's core", cores)
pools = run("roving pools")
check(re.search(r"state running, 74 live strands", pools), "one running pool with 74 live strands", pools)

print("gdb-roving-check: PASS")
