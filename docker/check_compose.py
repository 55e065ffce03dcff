#!/usr/bin/env python3
"""docker-compose.yml against the Compose Specification's JSON schema.

Compose v2 (`docker compose`) reads the file by the Compose Specification;
no v2 runs on the development machines or in CI (Debian has only v1, which
Tests/containers runs the file with for real), so the file is held to the
specification's own JSON schema instead: docker/compose-spec.json, a copy
of compose-spec/compose-spec's schema (Apache-2.0). ${VAR}, ${VAR:-default},
${VAR-default} and $$ are interpolated first, as Compose does, from the
environment.

Prints the interpolated file as JSON on stdout; problems go to stderr and
make the exit status 1. Needs PyYAML and jsonschema.

    python3 docker/check_compose.py [--file docker-compose.yml] [--schema docker/compose-spec.json]
"""
import argparse
import json
import os
import re
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
