#!/usr/bin/env python3
"""Every module a target imports is declared in Package.swift.

SwiftPM builds a target that imports an undeclared sibling module as long as
something else happened to build it first, so a missing dependency hides
until a build order changes. This reads `swift package dump-package` and
each target's Swift files, and fails on an import the target does not list.

The binary stays small: no target the `larder` executable links imports
Foundation itself (FoundationEssentials, Dispatch and Glibc only), since one
`import Foundation` there links Foundation's ICU data, two thirds of a 65 MB
binary (issue 36; docs/install.md).

It also keeps the faces apart: the Larder API (LarderApp) and S3 (LarderS3)
stand on one routing core (LarderRouting) and never import each other;
only the composition root (LarderServer) and what is above it see both.
"""
import glob, json, re, subprocess, sys

SYSTEM = {"Foundation", "FoundationEssentials", "FoundationNetworking", "Glibc", "Musl", "Darwin",
          "Dispatch", "Synchronization", "Testing", "XCTest", "PackagePlugin"}
pkg = json.loads(subprocess.run(["swift", "package", "dump-package"], check=True,
                                capture_output=True, text=True).stdout)
problems = []
for target in pkg["targets"]:
    if target["type"] in ("system", "plugin"):
        continue
    name = target["name"]
    path = target.get("path") or (("Tests/" if target["type"] == "test" else "Sources/") + name)
    declared = set()
    for dependency in target["dependencies"]:
        for value in dependency.values():
            declared.add(value[0] if isinstance(value, list) else value)
    for file in sorted(glob.glob(path + "/**/*.swift", recursive=True)):
        for line in open(file, encoding="utf-8"):
            # Capitalised module names only: Python scripts inside Swift strings import `json`, `sys`.
            m = re.match(r"(?:@\w+ )*(?:public |package |internal )?import ([A-Z]\w*)\s*$", line)
            if m and m.group(1) not in declared | SYSTEM | {name}:
                problems.append(f"{file}: imports {m.group(1)}, which target {name} does not declare")
by_name = {t["name"]: t for t in pkg["targets"]}
def closure(name, seen):
    if name in seen or name not in by_name:
        return seen
    seen.add(name)
    for dependency in by_name[name]["dependencies"]:
        for value in dependency.values():
            if isinstance(value, list) and len(value) > 1 and value[1]:
                continue  # a product of another package
            closure(value[0] if isinstance(value, list) else value, seen)
    return seen
for name in sorted(closure("larder", set())):
    target = by_name[name]
    if target["type"] in ("system", "plugin"):
        continue
    path = target.get("path") or "Sources/" + name
    for file in sorted(glob.glob(path + "/**/*.swift", recursive=True)):
        for line in open(file, encoding="utf-8"):
            if re.match(r"(?:@\w+ )*(?:public |package |internal )?import (Foundation|FoundationNetworking)\s*$", line):
                problems.append(f"{file}: imports {line.split()[-1]}, but {name} is linked into the larder binary: "
                                "import FoundationEssentials (Foundation brings its ICU data, tens of MB)")
FACES = {"LarderApp", "LarderS3"}
for target in pkg["targets"]:
    if target["name"] in FACES:
        for dependency in target["dependencies"]:
            for value in dependency.values():
                other = value[0] if isinstance(value, list) else value
                if other in FACES:
                    problems.append(f"Package.swift: face {target['name']} depends on face {other}; compose them in LarderServer")
print("\n".join(problems) or f"imports: every import is declared ({len(pkg['targets'])} targets)")
sys.exit(1 if problems else 0)
