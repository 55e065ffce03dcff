#!/usr/bin/env python3
"""Offline checks of docker-compose.yml (no Docker engine needed).

1. Interpolates ${VAR}, ${VAR:-default}, ${VAR-default} and $$ as Compose
   does (from the environment), then validates the result against the
   Compose Specification's JSON schema, docker/compose-spec.json (a copy of
   compose-spec/compose-spec's schema, Apache-2.0).
2. Checks what the schema cannot: every `depends_on: condition:
   service_healthy` names a service with a health check; bind-mount sources
   exist; `build:` contexts hold a Dockerfile; a service built from the
   Dockerfile checks health with the Dockerfile's own HEALTHCHECK command and
   publishes the port the image EXPOSEs; named volumes are declared.

Prints the interpolated file as JSON on stdout (for the tests); problems go
to stderr and make the exit status 1. Needs PyYAML and jsonschema.

    python3 docker/check_compose.py [--file docker-compose.yml] [--schema docker/compose-spec.json]
"""
import argparse
import json
import os
import re
import subprocess
import sys

try:
    import jsonschema
    import yaml
except ImportError as error:  # the tests turn this into a clear failure
    print(f"check_compose: {error}: python3 -m pip install pyyaml jsonschema", file=sys.stderr)
    sys.exit(2)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def interpolate(value, env, problems, where="$"):
    """Compose's variable substitution on every string of the document."""
    if isinstance(value, dict):
        return {k: interpolate(v, env, problems, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env, problems, f"{where}[{i}]") for i, v in enumerate(value)]
    if not isinstance(value, str):
        return value

    def repl(m):
        if m.group(0) == "$$":
            return "$"
        name = m.group("braced") or m.group("plain")
        op, arg = m.group("op"), m.group("arg")
        current = env.get(name)
        if op == ":-":
            return current if current else arg
        if op == "-":
            return current if current is not None else arg
        if op in (":?", "?"):
            if (op == ":?" and not current) or current is None:
                problems.append(f"{where}: ${{{name}}} is required: {arg}")
            return current or ""
        if op in (":+", "+"):
            return arg if (current if op == ":+" else current is not None) else ""
        if current is None:
            problems.append(f"{where}: ${name} is not set and has no default (Compose would use an empty string)")
            return ""
        return current

    pattern = r"\$\$|\$\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?+])(?P<arg>[^}]*))?\}|\$(?P<plain>[A-Za-z_][A-Za-z0-9_]*)"
    return re.sub(pattern, repl, value)


def dockerfile_summary(context):
    script = os.path.join(HERE, "check_dockerfile.py")
    result = subprocess.run([sys.executable, script, "--root", context, "--swift-version", "any"],
                            capture_output=True, text=True)
    try:
        return json.loads(result.stdout)
    except ValueError:
        return None


def check(path, schema_path, env):
    problems = []
    raw = yaml.safe_load(open(path, encoding="utf-8"))
    doc = interpolate(raw, env, problems)
    schema = json.load(open(schema_path, encoding="utf-8"))
    # The schema names draft-07 as "https://json-schema.org/draft-07/schema",
    # a spelling jsonschema does not map to Draft7Validator by itself.
    declared = schema.get("$schema", "")
    validator_class = (jsonschema.Draft7Validator if "draft-07" in declared
                       else jsonschema.validators.validator_for(schema))
    validator_class.check_schema(schema)
    for error in sorted(validator_class(schema).iter_errors(doc), key=lambda e: list(e.absolute_path)):
        location = "/".join(str(p) for p in error.absolute_path) or "(top)"
        problems.append(f"schema: {location}: {error.message}")
    if problems:
        return doc, problems

    base = os.path.dirname(os.path.abspath(path))
    services = doc.get("services", {})
    declared_volumes = set((doc.get("volumes") or {}).keys())
    for name, service in services.items():
        for dependency, spec in (service.get("depends_on") or {}).items() if isinstance(service.get("depends_on"), dict) else []:
            if dependency not in services:
                problems.append(f"services.{name}.depends_on: no service {dependency}")
            elif spec.get("condition") == "service_healthy":
                target = services[dependency]
                if not target.get("healthcheck") and not target.get("build"):
                    problems.append(f"services.{name}: waits for {dependency} to be healthy, which has no health check")
        for volume in service.get("volumes", []):
            source = volume.split(":")[0] if isinstance(volume, str) else volume.get("source", "")
            if source.startswith((".", "/")):
                if not os.path.exists(os.path.join(base, source)):
                    problems.append(f"services.{name}.volumes: the bind-mount source {source} does not exist")
            elif source and source not in declared_volumes:
                problems.append(f"services.{name}.volumes: the named volume {source} is not declared under volumes:")
        build = service.get("build")
        if build is not None:
            context = build if isinstance(build, str) else build.get("context", ".")
            dockerfile = "Dockerfile" if isinstance(build, str) else build.get("dockerfile", "Dockerfile")
            context_path = os.path.join(base, context)
            if not os.path.isfile(os.path.join(context_path, dockerfile)):
                problems.append(f"services.{name}.build: no {dockerfile} in {context}")
                continue
            summary = dockerfile_summary(context_path)
            if not summary:
                problems.append(f"services.{name}.build: the Dockerfile could not be read")
                continue
            health = (summary.get("healthcheck") or {}).get("exec") or []
            test = (service.get("healthcheck") or {}).get("test")
            if test and (not isinstance(test, list) or test[0] != "CMD" or test[1:] != health):
                problems.append(f"services.{name}.healthcheck: {test} is not the image's HEALTHCHECK {health}")
            port = summary["stages"][-1]["env"].get("LARDER_PORT", "8080")
            targets = [str(p).split(":")[-1].split("/")[0] if not isinstance(p, dict) else str(p.get("target"))
                       for p in service.get("ports", [])]
            if targets and port not in targets:
                problems.append(f"services.{name}.ports: {service.get('ports')} publishes no container port {port}")
            data_dir = summary["stages"][-1]["env"].get("LARDER_DATA_DIR")
            mounted = [str(v).split(":")[1] if isinstance(v, str) else v.get("target") for v in service.get("volumes", [])]
            if data_dir and data_dir not in mounted:
                problems.append(f"services.{name}.volumes: nothing is mounted at the image's data folder {data_dir}")
    return doc, problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--file", default=os.path.join(ROOT, "docker-compose.yml"))
    parser.add_argument("--schema", default=os.path.join(HERE, "compose-spec.json"))
    args = parser.parse_args()
    doc, problems = check(args.file, args.schema, dict(os.environ))
    json.dump(doc, sys.stdout, indent=1)
    print()
    for problem in problems:
        print("compose: " + problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
