#!/usr/bin/env python3
"""Where a full test run's time goes, from the file `LARDER_TEST_TIMES` wrote
(Tests/LarderTestSupport/TestTimes.swift: one line per test case,
`lane seconds own-CPU children's-CPU start test-id`, and `note` lines).

    LARDER_TEST_TIMES=/tmp/times.tsv swift test --skip-build
    python3 Benchmarks/test-times.py /tmp/times.tsv [--top N]

Prints the totals per lane, the tests that took the most CPU and the most
idle time (time minus CPU: waiting on a delay, a child's sleep, a browser),
and how many blocking bodies ran at once over the run. CPU is a test's own
only when it ran alone: `LARDER_TEST_BLOCKING_WIDTH=1`, async suites skipped.
"""
import argparse
import collections


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file")
    ap.add_argument("--top", type=int, default=15)
    a = ap.parse_args()
    per = collections.defaultdict(lambda: [0.0, 0.0])   # test (cases summed) -> [seconds, cpu]
    lanes = collections.defaultdict(lambda: [0.0, 0.0])
    spans, notes = [], 0
    with open(a.file) as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if fields[0] == "note":
                notes += 1
                continue
            lane, seconds, own, children, start, test = fields
            seconds, cpu, start = float(seconds), float(own) + float(children), float(start)
            test = test.rsplit("/", 1)[0]   # without the source location
            per[test][0] += seconds
            per[test][1] += cpu
            lanes[lane][0] += seconds
            lanes[lane][1] += cpu
            if lane == "blocking":
                spans.append((start, start + seconds))
    for lane, (seconds, cpu) in sorted(lanes.items()):
        print(f"{lane}: {seconds:.0f} s of bodies, {cpu:.0f} s of CPU")
    print(f"notes (the turns' limit moving): {notes}")
    print(f"\nmost CPU (time, CPU):")
    for test, (seconds, cpu) in sorted(per.items(), key=lambda kv: -kv[1][1])[:a.top]:
        print(f"{seconds:7.1f} {cpu:7.1f}  {test}")
    print(f"\nmost idle (time minus CPU, time):")
    for test, (seconds, cpu) in sorted(per.items(), key=lambda kv: -(kv[1][0] - kv[1][1]))[:a.top]:
        print(f"{seconds - cpu:7.1f} {seconds:7.1f}  {test}")
    if spans:
        end = max(e for _, e in spans)
        print("\nblocking bodies at once, per 20 s of the run:")
        for b in range(0, int(end) + 1, 20):
            busy = sum(max(0.0, min(e, b + 20) - max(s, b)) for s, e in spans)
            print(f"{b:5d} s  {busy / 20:.1f}")


if __name__ == "__main__":
    main()
