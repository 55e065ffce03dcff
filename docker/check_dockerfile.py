#!/usr/bin/env python3
"""Offline checks of the top-level Dockerfile (no Docker engine needed).

Parses the Dockerfile the way the builder does (parser directives, comments,
line continuations, ARG before FROM, JSON or shell form) and checks what can
be checked without building:

- every instruction is a Dockerfile instruction, the first is ARG or FROM;
- each stage names an official image we expect: the build stage
  swift:<6.x>-bookworm (the same major.minor as the local `swift`, when
  there is one), the runtime stage debian:bookworm-slim: both Debian 12, so
  the binary runs on the glibc it was linked against;
- the build stage installs zlib1g-dev and libpq-dev, the runtime stage
  zlib1g and libpq5 (the libraries the binary links);
- COPY --from names an earlier stage; every other COPY source exists in the
  repository and is not excluded by .dockerignore; the build stage copies in
  the folder of every target Package.swift declares (test targets too:
  SwiftPM checks them all, even to build one product);
- the runtime stage: a non-root USER, LARDER_DATA_DIR is a VOLUME,
  LARDER_HOST=0.0.0.0, EXPOSE is LARDER_PORT, the binary is copied to a
  folder on PATH, HEALTHCHECK and ENTRYPOINT run it in exec form; the
  viewer is the one built into the binary: the build stage copies Public/
  in (the EmbedViewer plugin's input), the runtime stage neither copies it
  nor sets LARDER_PUBLIC_DIR (a second copy that could drift).

Prints a JSON summary (stages, apt packages, commands, healthcheck) on
stdout; problems go to stderr and make the exit status 1. Used by
`swift test` (DockerfileTests) and docker/check-offline.sh.

    python3 docker/check_dockerfile.py [--root DIR] [--swift-version 6.3|any]
"""
import argparse
import fnmatch
import json
import os
import re
import shlex
import subprocess
import sys

INSTRUCTIONS = {"FROM", "RUN", "CMD", "LABEL", "MAINTAINER", "EXPOSE", "ENV", "ADD", "COPY",
                "ENTRYPOINT", "VOLUME", "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL",
                "HEALTHCHECK", "SHELL"}
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def parse(text):
    """[(line, KEYWORD, rest)]: directives and comments dropped, continuations joined."""
    lines = text.split("\n")
    escape = "\\"
    i = 0
    # Parser directives: `# name=value` lines before anything else.
    while i < len(lines):
        m = re.match(r"^\s*#\s*([a-zA-Z]+)\s*=\s*(\S+)\s*$", lines[i])
        if not m:
            break
        if m.group(1).lower() == "escape":
            escape = m.group(2)
        i += 1
    instructions = []
    while i < len(lines):
        line = lines[i]
        start = i + 1
        i += 1
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        text_ = line.rstrip()
        while text_.endswith(escape):
            text_ = text_[: -len(escape)]
            # Comment and empty lines inside a continuation are skipped.
            while i < len(lines) and (lines[i].lstrip().startswith("#") or not lines[i].strip()):
                i += 1
            if i >= len(lines):
                break
            text_ += " " + lines[i].strip()
            text_ = text_.rstrip()
            i += 1
        parts = text_.strip().split(None, 1)
        instructions.append((start, parts[0].upper(), parts[1] if len(parts) > 1 else ""))
    return instructions


def exec_form(rest):
    """The JSON array of an exec-form argument, or None for shell form."""
    rest = rest.strip()
    if not rest.startswith("["):
        return None
    try:
        value = json.loads(rest)
    except ValueError:
        return None
    return value if isinstance(value, list) and all(isinstance(v, str) for v in value) else None


def split_flags(rest):
    """(['--from=build', ...], remaining words) for COPY/ADD/FROM/HEALTHCHECK."""
    words = shlex.split(rest)
    flags = []
    while words and words[0].startswith("--"):
        flags.append(words.pop(0))
    return flags, words


def key_values(rest):
    """ENV/ARG/LABEL `a=1 b="x y"` (or the legacy `ENV a 1`)."""
    words = shlex.split(rest)
    if words and "=" not in words[0]:
        return {words[0]: " ".join(words[1:])}
    out = {}
    for word in words:
        name, _, value = word.partition("=")
        out[name] = value
    return out


def substitute(text, variables):
    def repl(m):
        name = m.group(1) or m.group(2)
        return variables.get(name, m.group(0))
    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)", repl, text)


def apt_packages(command):
    """Package names of every `apt-get install` in a shell command."""
    packages = []
    for segment in re.split(r"&&|;|\|\|", command):
        words = shlex.split(segment.replace("\\", " "))
        if "apt-get" in words and "install" in words:
            for word in words[words.index("install") + 1:]:
                if not word.startswith("-"):
                    packages.append(word)
    return packages


def dockerignore_patterns(root):
    path = os.path.join(root, ".dockerignore")
    if not os.path.exists(path):
        return []
    patterns = []
    for line in open(path, encoding="utf-8"):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        pattern = line[1:] if negate else line
        patterns.append((negate, pattern.strip("/")))
    return patterns


def ignored(relative, patterns):
    """Whether .dockerignore leaves `relative` (a file path) out of the context.
    The last matching pattern wins; a pattern matching a parent folder
    matches everything below it, as in the builder."""
    relative = relative.strip("/")
    parts = relative.split("/")
    result = False
    for negate, pattern in patterns:
        for n in range(1, len(parts) + 1):
            candidate = "/".join(parts[:n])
            if pattern.startswith("**/"):
                hit = fnmatch.fnmatch(parts[n - 1], pattern[3:]) or fnmatch.fnmatch(candidate, pattern[3:])
            else:
                hit = fnmatch.fnmatch(candidate, pattern) and candidate.count("/") == pattern.count("/")
            if hit:
                result = not negate
                break
    return result


def files_under(root, relative):
    full = os.path.join(root, relative)
    if os.path.isfile(full):
        return [relative]
    out = []
    for directory, _, files in os.walk(full):
        for name in files:
            out.append(os.path.relpath(os.path.join(directory, name), root))
    return out


def package_target_folders(root):
    """The folder of every target Package.swift declares (`path:` or the default)."""
    text = open(os.path.join(root, "Package.swift"), encoding="utf-8").read()
    folders = []
    for m in re.finditer(r"\.(target|executableTarget|systemLibrary|testTarget|plugin|macro)\(\s*name:\s*\"([^\"]+)\"([^)]*)", text):
        kind, name, rest = m.groups()
        path = re.search(r'path:\s*"([^"]+)"', rest)
        default = {"testTarget": "Tests/", "plugin": "Plugins/"}.get(kind, "Sources/")
        folders.append(path.group(1).rstrip("/") if path else default + name)
    return folders


def local_swift_version():
    try:
        text = subprocess.run(["swift", "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"Swift version (\d+)\.(\d+)", text)
    return f"{m.group(1)}.{m.group(2)}" if m else None


def check(root, swift_version):
    problems = []
    dockerfile = os.path.join(root, "Dockerfile")
    instructions = parse(open(dockerfile, encoding="utf-8").read())
    patterns = dockerignore_patterns(root)
    global_args = {}
    stages = []
    for line, keyword, rest in instructions:
        where = f"Dockerfile:{line}"
        if keyword not in INSTRUCTIONS:
            problems.append(f"{where}: unknown instruction {keyword}")
            continue
        if not stages and keyword not in ("ARG", "FROM"):
            problems.append(f"{where}: {keyword} before the first FROM")
            continue
        if keyword == "ARG" and not stages:
            global_args.update(key_values(rest))
            continue
        if keyword == "FROM":
            flags, words = split_flags(rest)
            image = substitute(words[0], global_args) if words else ""
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            if "$" in image or not image:
                problems.append(f"{where}: FROM {words[0] if words else ''} does not resolve to an image")
            stages.append({"line": line, "image": image, "name": name, "env": {}, "runs": [], "steps": [],
                           "apt": [], "copies": [], "volumes": [], "expose": [], "user": None,
                           "healthcheck": None, "entrypoint": None, "cmd": None, "workdir": None})
            continue
        stage = stages[-1]
        if keyword == "RUN":
            command = rest if exec_form(rest) is None else " ".join(exec_form(rest))
            stage["runs"].append(command)
            stage["steps"].append({"run": command})
            stage["apt"] += apt_packages(command)
        elif keyword == "ENV":
            stage["env"].update(key_values(rest))
        elif keyword in ("COPY", "ADD"):
            flags, words = split_flags(rest)
            form = exec_form(rest)
            if form:
                words = form
            if len(words) < 2:
                problems.append(f"{where}: {keyword} needs a source and a destination")
                continue
            source_stage = next((f.split("=", 1)[1] for f in flags if f.startswith("--from=")), None)
            copy = {"line": line, "from": source_stage, "sources": words[:-1], "dest": words[-1]}
            stage["copies"].append(copy)
            stage["steps"].append({"copy": copy})
            if source_stage is not None:
                earlier = [s["name"] for s in stages[:-1]]
                if source_stage not in earlier:
                    problems.append(f"{where}: COPY --from={source_stage} names no earlier stage ({earlier})")
                continue
            for source in words[:-1]:
                if not os.path.exists(os.path.join(root, source)):
                    problems.append(f"{where}: {keyword} source {source} does not exist in the repository")
                    continue
                shut_out = [f for f in files_under(root, source) if ignored(f, patterns)]
                kept = [f for f in files_under(root, source) if not ignored(f, patterns)]
                if not kept:
                    problems.append(f"{where}: {keyword} source {source} is excluded by .dockerignore")
                elif shut_out and source.rstrip("/") in ("Sources", "Public", "Package.swift", "Package.resolved"):
                    real = [f for f in shut_out if not f.endswith((".swp", ".DS_Store"))]
                    if real:
                        problems.append(f"{where}: .dockerignore leaves out {real[:3]} of {source}")
        elif keyword == "VOLUME":
            form = exec_form(rest)
            stage["volumes"] += form if form else rest.split()
        elif keyword == "EXPOSE":
            stage["expose"] += [p.split("/")[0] for p in rest.split()]
        elif keyword == "USER":
            stage["user"] = rest.strip()
        elif keyword == "WORKDIR":
            stage["workdir"] = rest.strip()
        elif keyword == "HEALTHCHECK":
            m = re.match(r"^((?:--\S+\s+)*)(CMD|NONE)\b\s*(.*)$", rest.strip(), re.IGNORECASE)
            if not m:
                problems.append(f"{where}: HEALTHCHECK is neither CMD nor NONE")
                continue
            command = m.group(3) if m.group(2).upper() == "CMD" else None
            form = exec_form(command) if command else None
            stage["healthcheck"] = {"flags": m.group(1).split(), "exec": form, "shell": None if form else command}
        elif keyword == "ENTRYPOINT":
            stage["entrypoint"] = exec_form(rest)
            if stage["entrypoint"] is None:
                problems.append(f"{where}: ENTRYPOINT in shell form (signals would not reach the server)")
        elif keyword == "CMD":
            stage["cmd"] = exec_form(rest)

    if len(stages) < 2:
        problems.append("Dockerfile: expected a build stage and a runtime stage")
        return stages, problems
    build, runtime = stages[0], stages[-1]

    m = re.fullmatch(r"swift:(\d+)\.(\d+)(?:\.\d+)?-(bookworm)", build["image"])
    if not m:
        problems.append(f"build stage: {build['image']} is not an official swift:<6.x>-bookworm image")
    else:
        if m.group(1) != "6":
            problems.append(f"build stage: {build['image']} is not Swift 6")
        if swift_version and f"{m.group(1)}.{m.group(2)}" != swift_version:
            problems.append(f"build stage: {build['image']} is Swift {m.group(1)}.{m.group(2)}, the tests run Swift {swift_version}")
    if runtime["image"] != "debian:bookworm-slim":
        problems.append(f"runtime stage: {runtime['image']} is not debian:bookworm-slim")
    if "zlib1g-dev" not in build["apt"]:
        problems.append("build stage: zlib1g-dev is not installed (CZlib needs it)")
    if "libpq-dev" not in build["apt"]:
        problems.append("build stage: libpq-dev is not installed (the postgres store links libpq; pkg-config libpq)")
    if not any("--static-swift-stdlib" in r and "swift build" in r for r in build["runs"]):
        problems.append("build stage: no `swift build ... --static-swift-stdlib`")
    # SwiftPM checks every target's folder, test targets too, even for one product.
    build_sources = [src.rstrip("/") for c in build["copies"] if c["from"] is None for src in c["sources"]]
    for folder in package_target_folders(root):
        covered = any(folder == src or folder.startswith(src + "/") for src in build_sources)
        kept = [f for f in files_under(root, folder) if not ignored(f, patterns)] if os.path.isdir(os.path.join(root, folder)) else []
        if not covered or not kept:
            problems.append(f"build stage: the target folder {folder} (Package.swift) is not copied in"
                            + (" (.dockerignore leaves it out)" if covered else ""))
    if "zlib1g" not in runtime["apt"]:
        problems.append("runtime stage: zlib1g is not installed (the binary links libz)")
    if "libpq5" not in runtime["apt"]:
        problems.append("runtime stage: libpq5 is not installed (the binary links libpq.so.5)")

    env = runtime["env"]
    user = runtime["user"]
    if not user or user.split(":")[0] in ("root", "0"):
        problems.append(f"runtime stage: USER is {user!r}, not a non-root user")
    else:
        name_or_uid = user.split(":")[0]
        made = (rf"useradd\b[^&;]*--uid[ =]{name_or_uid}\b" if name_or_uid.isdigit()
                else rf"useradd\b[^&;]*\s{re.escape(name_or_uid)}\s*(&&|;|$)")
        if not any(re.search(made, r) for r in runtime["runs"]):
            problems.append(f"runtime stage: USER {user} is not created with useradd")
    if env.get("LARDER_HOST") != "0.0.0.0":
        problems.append("runtime stage: LARDER_HOST is not 0.0.0.0 (the server would be unreachable from outside)")
    data = env.get("LARDER_DATA_DIR")
    if not data or data not in runtime["volumes"]:
        problems.append(f"runtime stage: LARDER_DATA_DIR={data} is not a VOLUME ({runtime['volumes']})")
    port = env.get("LARDER_PORT", "8080")
    if port not in runtime["expose"]:
        problems.append(f"runtime stage: EXPOSE {runtime['expose']} does not include LARDER_PORT {port}")
    # The viewer: built into the binary from the build stage's Public/.
    if not any(src.rstrip("/") == "Public" for src in build_sources):
        problems.append("build stage: Public/ is not copied in (the EmbedViewer plugin builds the viewer into the binary)")
    if "LARDER_PUBLIC_DIR" in env:
        problems.append(f"runtime stage: LARDER_PUBLIC_DIR={env['LARDER_PUBLIC_DIR']} is set; the viewer built into the binary is the one to serve")
    if any(src.rstrip("/") == "Public" or src.startswith("Public/") for c in runtime["copies"] if c["from"] is None for src in c["sources"]):
        problems.append("runtime stage: Public/ is copied in; the viewer is built into the binary")
    binary = next((c["dest"] for c in runtime["copies"] if c["from"] == build["name"]), None)
    path = env.get("PATH", DEFAULT_PATH).split(":")
    if not binary or os.path.dirname(binary) not in path:
        problems.append(f"runtime stage: the binary ({binary}) is not copied into a folder on PATH")
    name = os.path.basename(binary or "larder")
    health = runtime["healthcheck"]
    if not health or not health["exec"]:
        problems.append("runtime stage: no HEALTHCHECK in exec form")
    elif health["exec"][0] not in (name, binary):
        problems.append(f"runtime stage: HEALTHCHECK runs {health['exec'][0]}, not the server's binary")
    if not runtime["entrypoint"] or runtime["entrypoint"][0] not in (name, binary):
        problems.append("runtime stage: ENTRYPOINT does not run the server's binary")
    return stages, problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--swift-version", help="major.minor the build image must have (default: the local swift's; 'any' skips the check)")
    args = parser.parse_args()
    swift_version = None if args.swift_version == "any" else (args.swift_version or local_swift_version())
    stages, problems = check(args.root, swift_version)
    summary = {
        "swiftVersion": swift_version,
        "stages": [{"image": s["image"], "name": s["name"], "apt": s["apt"], "runs": s["runs"],
                    "steps": s["steps"], "env": s["env"], "user": s["user"], "copies": s["copies"]} for s in stages],
        "healthcheck": stages[-1]["healthcheck"] if stages else None,
        "entrypoint": stages[-1]["entrypoint"] if stages else None,
        "cmd": stages[-1]["cmd"] if stages else None,
        "problems": problems,
    }
    json.dump(summary, sys.stdout, indent=1)
    print()
    for problem in problems:
        print("dockerfile: " + problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
