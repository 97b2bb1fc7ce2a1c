#!/usr/bin/env python3
"""tools/trace's own test: a dump read back, its Perfetto JSON checked
against the trace-event format, its SVG parsed as XML with two panels of
one lane per core, and its summary's figures checked.

    python3 tests/tools/trace_test.py [DUMP ...]

With no argument it checks a small dump written here; each DUMP (such as
the one `tests/trace.rs` writes when ROVING_TRACE_OUT is set) is checked
the same way, with the figures it can know.
"""

import importlib.machinery
import importlib.util
import json
import pathlib
import sys
import xml.etree.ElementTree as ElementTree

TOOL = pathlib.Path(__file__).resolve().parents[2] / "tools" / "trace"
loader = importlib.machinery.SourceFileLoader("trace_tool", str(TOOL))
spec = importlib.util.spec_from_loader("trace_tool", loader)
trace = importlib.util.module_from_spec(spec)
loader.exec_module(trace)

# Two cores at 1 MHz (a tick is a microsecond), inside a console log.
SAMPLE = """\
boot: some line before
[core 0] roving_trace: roving-trace 2 cores=2 tick_hz=1000000 complete=yes
[core 0] roving_trace: roving-trace core 0 offset=0 lost=0
[core 0] roving_trace: roving-trace e 0 100 task-begin
[core 0] roving_trace: roving-trace e 0 101 stack-restored 512
[core 0] roving_trace: roving-trace e 0 102 strand-in 7
[core 0] roving_trace: roving-trace e 0 105 irq-begins 33
[core 0] roving_trace: roving-trace e 0 107 irq-ends 33
[core 0] roving_trace: roving-trace e 0 110 wakeup 1 5
[core 0] roving_trace: roving-trace e 0 111 wakeup 1 nudged
[core 0] roving_trace: roving-trace e 0 112 strand-woken 9 signalled
[core 0] roving_trace: roving-trace e 0 120 strand-in 8
[core 0] roving_trace: roving-trace e 0 121 strand-out 7 blocked Mutex
[core 0] roving_trace: roving-trace e 0 140 strand-out 8 finished
[core 0] roving_trace: roving-trace e 0 150 task-end
[core 0] roving_trace: roving-trace e 0 160 slept
[core 0] roving_trace: roving-trace e 0 300 woke light -
[core 0] roving_trace: roving-trace core 1 offset=0 lost=4
[core 0] roving_trace: roving-trace e 1 50 slept
[core 0] roving_trace: roving-trace e 1 130 woke deep 5
[core 0] roving_trace: roving-trace e 1 131 drained 2
[core 0] roving_trace: roving-trace e 1 132 task-begin
[core 0] roving_trace: roving-trace e 1 140 strand-in 9
[core 0] roving_trace: roving-trace e 1 150 strand-out 9 finished
[core 0] roving_trace: roving-trace e 1 200 task-end
[core 0] roving_trace: roving-trace end
a line after
"""

REQUIRED = {"X": {"name", "ph", "pid", "tid", "ts", "dur"}, "i": {"name", "ph", "pid", "tid", "ts", "s"},
            "M": {"name", "ph", "pid", "args"}, "s": {"name", "ph", "pid", "tid", "ts", "id"},
            "f": {"name", "ph", "pid", "tid", "ts", "id", "bp"}}


def check_perfetto(dump):
    """The JSON parses back, and every event is a well-formed trace event."""
    document = json.loads(json.dumps(trace.perfetto(dump)))
    events = document["traceEvents"]
    for event in events:
        missing = REQUIRED[event["ph"]] - event.keys()
        assert not missing, f"{event} lacks {missing}"
        if event["ph"] == "X":
            assert event["dur"] >= 0, event
    names = {event["tid"]: event["args"]["name"] for event in events if event["name"] == "thread_name"}
    expected = {core.index: f"core {core.index}" for core in dump.cores}
    expected.update({1000 + core.index: f"core {core.index}: strands" for core in dump.cores})
    assert names == expected, names
    starts = {event["id"] for event in events if event["ph"] == "s"}
    finishes = {event["id"] for event in events if event["ph"] == "f"}
    assert finishes <= starts, "an arrow ends that never started"
    return events


def check_svg(dump):
    """The SVG is well-formed XML with one lane per core."""
    root = ElementTree.fromstring(trace.svg(dump))
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    groups = lambda parent, kind: [g for g in parent.iter("{http://www.w3.org/2000/svg}g") if g.get("class") == kind]
    panels = groups(root, "panel")
    assert len(panels) == 2, "the whole run, and a stretch in detail"
    for panel in panels:
        lanes = [int(g.get("data-core")) for g in groups(panel, "lane")]
        assert lanes == list(range(len(dump.cores))), f"one lane per core, not {lanes}"
    return root


def test_sample():
    dump = trace.parse(SAMPLE)
    assert dump.tick_hz == 1_000_000 and len(dump.cores) == 2
    assert [len(core.events) for core in dump.cores] == [14, 7] and dump.cores[1].lost == 4
    assert [(t.core, t.strand, t.start, t.end, t.why) for t in trace.turns(dump)] == [
        (0, "7", 102, 120, "blocked Mutex"), (0, "8", 120, 140, "finished"), (1, "9", 140, 150, "finished")]
    # Strand 7's turn woke strand 9, whose next turn began on core 1.
    assert [(w.core, w.at, w.strand, w.by, w.waker, w.began_core, w.began_at) for w in trace.strand_wakes(dump)] == [
        (0, 112, "9", "signalled", "strand 7", 1, 140)]
    spans, wakes = trace.timeline(dump)
    assert sorted((s.core, s.start, s.end, s.kind) for s in spans) == [
        (0, 100, 150, "task"), (0, 105, 107, "irq"), (0, 160, 300, "light"), (1, 50, 130, "deep"), (1, 132, 200, "task")]
    # The claim pairs the wake-up with the sleep it ended; the nudge ends none.
    assert [(w.waker, w.woken, w.at, w.woke_at, w.claim) for w in wakes] == [(0, 1, 110, 130, 5), (0, 1, 111, None, None)]
    events = check_perfetto(dump)
    assert sum(1 for event in events if event["ph"] == "f") == 2, "a core's wake-up, and a strand's"
    assert [event["args"]["core"] for event in events if event["name"] == "nudge"] == [1]
    irq = next(event for event in events if event["ph"] == "X" and event["cat"] == "irq")
    assert (irq["name"], irq["ts"], irq["dur"]) == ("irq 33", 55.0, 2.0), irq
    task = next(event for event in events if event["ph"] == "X" and event["tid"] == 0 and event["cat"] == "task")
    assert (task["ts"], task["dur"]) == (50.0, 50.0), task  # 100 ticks after the first event at 50
    root = check_svg(dump)
    assert len([e for e in root.iter() if e.get("class") == "wake"]) == 1
    assert len([e for e in root.iter() if e.get("class") == "strand-wake"]) == 1
    text = trace.summary(dump)
    assert "core 0: tasks  20.0%, interrupts  0.8%, light sleep  56.0%, deep sleep   0.0%, 2 strand turns, 512 stack bytes copied, 1 interrupts" in text, text
    assert "wake-ups: 2 (1 nudges, which end no sleep), 1 ended a sleep; latency mean 20.0 µs" in text, text
    assert ("strand wakes: 1 (1 signalled); wake to turn mean 28.0 µs, worst 28.0 µs (strand 9, woken by strand 7 "
            "at 62 µs, ran on core 1)") in text, text


def test_check():
    assert trace.check(trace.parse(SAMPLE)) == []
    broken = SAMPLE.replace("roving-trace e 1 50 slept", "roving-trace e 1 50 task-end")
    problems = trace.check(trace.parse(broken.replace("lost=4", "lost=0")))
    assert problems == ["core 1 at tick 50: a task ended that never began", "core 1 at tick 130: woke without a sleep"], problems
    # With events lost, the ring may start mid-sleep or mid-task.
    assert trace.check(trace.parse(broken)) == []
    asleep = SAMPLE.replace("roving-trace e 0 300 woke light", "roving-trace e 0 300 drained 1")
    assert trace.check(trace.parse(asleep)) == ["core 0: still asleep when the trace ends"]
    unended = SAMPLE.replace("roving-trace e 0 140 strand-out 8 finished", "roving-trace e 0 140 drained 1")
    assert trace.check(trace.parse(unended)) == ["core 0: the turns of strands 8 never ended"]
    # Mid-run, a strand may still run and a core sleep.
    assert trace.check(trace.parse(unended.replace("complete=yes", "complete=no"))) == []
    assert trace.check(trace.parse(asleep.replace("complete=yes", "complete=no"))) == []
    unended_irq = SAMPLE.replace("roving-trace e 0 107 irq-ends 33", "roving-trace e 0 107 irq-ends 34")
    assert trace.check(trace.parse(unended_irq)) == [
        "core 0 at tick 107: the handler of line 34 ended, not the innermost begun",
        "core 0: the handlers of lines 33 never ended"]
    stray = SAMPLE.replace("strand-out 8 finished", "strand-out 9 finished")
    assert trace.check(trace.parse(stray)) == [
        "core 0 at tick 140: strand 9's turn ended that never began here", "core 0: the turns of strands 8 never ended"]
    twice = SAMPLE.replace("wakeup 1 nudged", "wakeup 1 5")
    assert trace.check(trace.parse(twice)) == ["core 0 at tick 111: claim 5 on core 1 was also made by core 0"]
    heard_twice = SAMPLE.replace("e 0 300 woke light -", "e 0 300 woke light 3").replace("e 0 160 slept", "e 0 160 slept\n"
        "roving-trace e 0 170 woke light 3\nroving-trace e 0 180 slept")
    assert trace.check(trace.parse(heard_twice)) == ["core 0 at tick 300: a second sleep ended by claim 3"], trace.check(trace.parse(heard_twice))
    # A woken strand whose turn never began: only a whole run that lost
    # nothing can say so.
    unbegun = SAMPLE.replace("strand-woken 9", "strand-woken 10")
    assert trace.check(trace.parse(unbegun)) == []
    assert trace.check(trace.parse(unbegun.replace("lost=4", "lost=0"))) == [
        "core 0 at tick 112: strand 10 was woken, and no turn of it began after"]


def test_errors():
    for bad, says in [("nothing here\n", "no complete"), ("roving-trace 9 cores=1 tick_hz=1\nroving-trace end\n", "format 9"),
                      ("roving-trace 2 cores=1 tick_hz=1\nroving-trace e 5 1 slept\n", "line 2")]:
        try:
            trace.parse(bad)
        except trace.DumpError as error:
            assert says in str(error), error
        else:
            raise AssertionError(f"accepted {bad!r}")


def test_dump(path):
    dump = trace.parse(pathlib.Path(path).read_text(encoding="utf-8"))
    check_perfetto(dump)
    check_svg(dump)
    trace.summary(dump)
    assert trace.check(dump) == [], trace.check(dump)[:5]
    events = sum(len(core.events) for core in dump.cores)
    assert events > 0, f"{path}: an empty trace"
    print(f"trace_test: {path}: {len(dump.cores)} cores, {events} events: JSON, SVG and summary check out")


if __name__ == "__main__":
    test_sample()
    test_errors()
    test_check()
    print("trace_test: the sample dump and the malformed ones check out")
    for path in sys.argv[1:]:
        test_dump(path)
