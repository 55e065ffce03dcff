#!/usr/bin/env python3
"""Every module a target imports is declared in Package.swift.

SwiftPM builds a target that imports an undeclared sibling module as long as
something else happened to build it first, so a missing dependency hides
until a build order changes. This reads `swift package dump-package` and
each target's Swift files, and fails on an import the target does not list.

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
