"""The tally of one s3-tests run from its JUnit XML (Benchmarks/s3-tests.sh):
prints `NAME: P passed, F failed, E errors, S skipped of T`, and writes every
test that did not pass, with the first line of its reason, to OUT.

    python3 Benchmarks/s3_tests_tally.py NAME RUN.xml OUT.txt
"""
import sys
import xml.etree.ElementTree as ET


def main():
    name, xml_path, out_path = sys.argv[1:4]
    cases = ET.parse(xml_path).getroot().iter("testcase")
    tally = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    lines = []
    for case in cases:
        test = f"{case.get('classname', '').split('.')[-1]}::{case.get('name')}"
        outcome = "passed"
        for child, kind in (("failure", "failed"), ("error", "errors"), ("skipped", "skipped")):
            found = case.find(child)
            if found is not None:
                outcome = kind
                reason = (found.get("message") or found.text or "").strip().splitlines()
                lines.append(f"{kind:8} {test}  {reason[0][:200] if reason else ''}")
                break
        tally[outcome] += 1
    total = sum(tally.values())
    with open(out_path, "w") as out:
        out.write("\n".join(sorted(lines)) + "\n")
    print(f"{name}: {tally['passed']} passed, {tally['failed']} failed, {tally['errors']} errors, "
          f"{tally['skipped']} skipped of {total} ({out_path})")


if __name__ == "__main__":
    main()
