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
3. Profiles: a service depends only on services that run whenever it does
   (no profile, or one of its own); no two services that run together
   publish the same host address and port (every profile with the services
   that have none).
4. Services whose LARDER_STORE is a postgres:// URL (the `postgres`
   profile): the URL's host is a service running a postgres image, with a
   pg_isready health check and a named volume for its data, which it
   waits for with `condition: service_healthy`; the URL's user, password
   and database are the ones that service's POSTGRES_* environment creates;
   such a service needs no volume at the image's data folder. A profile
   with a postgres-backed Larder has at least two, all built the same way
   (one build context, one Dockerfile, one image name) on one database.

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
from urllib.parse import unquote, urlsplit

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
            if data_dir and data_dir not in mounted and not postgres_url(service):
                problems.append(f"services.{name}.volumes: nothing is mounted at the image's data folder {data_dir}")
    problems += check_profiles(services)
    problems += check_postgres(services)
    return doc, problems


def profiles_of(service):
    return set(service.get("profiles") or [])


def check_profiles(services):
    problems = []
    for name, service in services.items():
        depends_on = service.get("depends_on") or {}
        for dependency in (depends_on if isinstance(depends_on, (dict, list)) else []):
            if dependency not in services:
                continue
            mine, theirs = profiles_of(service), profiles_of(services[dependency])
            # With no profile a service always runs; with profiles, when one of them is on.
            if theirs and (not mine or not mine <= theirs):
                problems.append(f"services.{name}.depends_on: {dependency} runs only with the profile(s) {sorted(theirs)}, "
                                f"{name} {'always' if not mine else 'with ' + str(sorted(mine))}")
    every = sorted(set().union(*(profiles_of(s) for s in services.values()))) if services else []
    for profile in [None] + every:
        running = [n for n, s in services.items() if not profiles_of(s) or profile in profiles_of(s)]
        taken = {}
        for name in running:
            for port in services[name].get("ports", []):
                published = host_port(port)
                if published is None:
                    continue
                if published in taken and taken[published] != name:
                    where = f" (profile {profile})" if profile else ""
                    problems.append(f"services.{name}.ports: host port {published[0]}:{published[1]} is also published by "
                                    f"{taken[published]}{where}")
                taken.setdefault(published, name)
    return problems


def host_port(port):
    """(host ip, host port) a `ports:` entry publishes, or None (no fixed host port)."""
    if isinstance(port, dict):
        published = port.get("published")
        return (port.get("host_ip", "0.0.0.0"), str(published)) if published not in (None, "") else None
    text = str(port).split("/")[0]
    parts = text.rsplit(":", 2) if text.count(":") >= 2 else text.split(":")
    if len(parts) == 3:
        return (parts[0].strip("[]") or "0.0.0.0", parts[1]) if parts[1] else None
    if len(parts) == 2:
        return ("0.0.0.0", parts[0])
    return None


def environment_of(service):
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) if "=" in item else (item, None) for item in env)
    return {k: ("" if v is None else str(v)) for k, v in env.items()}


def postgres_url(service):
    store = environment_of(service).get("LARDER_STORE", "")
    return store if store.startswith(("postgres://", "postgresql://")) else None


def check_postgres(services):
    problems = []
    backed = {name: postgres_url(s) for name, s in services.items() if postgres_url(s)}
    for name, url in backed.items():
        service = services[name]
        where = f"services.{name}"
        try:
            parts = urlsplit(url)
            port = parts.port or 5432
        except ValueError as error:
            problems.append(f"{where}: LARDER_STORE {url} is not a URL ({error})")
            continue
        host = parts.hostname
        database = unquote(parts.path.lstrip("/"))
        if not service.get("build"):
            problems.append(f"{where}: LARDER_STORE is set but the service is not built from the Dockerfile")
        if host not in services:
            problems.append(f"{where}: LARDER_STORE names the host {host}, which is no service here")
            continue
        target = services[host]
        if not str(target.get("image", "")).split("/")[-1].startswith("postgres:"):
            problems.append(f"{where}: LARDER_STORE names {host}, which does not run a postgres image")
            continue
        depends_on = service.get("depends_on") or {}
        condition = depends_on.get(host, {}).get("condition") if isinstance(depends_on, dict) else None
        if condition != "service_healthy":
            problems.append(f"{where}.depends_on: does not wait for {host} with condition: service_healthy")
        if port != 5432:
            problems.append(f"{where}: LARDER_STORE names port {port}; {host} listens on 5432")
        pg_env = environment_of(target)
        user = pg_env.get("POSTGRES_USER") or "postgres"
        expected = {"user": user, "password": pg_env.get("POSTGRES_PASSWORD", ""),
                    "database": pg_env.get("POSTGRES_DB") or user}
        given = {"user": unquote(parts.username or ""), "password": unquote(parts.password or ""), "database": database}
        for field in ("user", "password", "database"):
            if given[field] != expected[field]:
                shown = "(not shown)" if field == "password" else f"{given[field]!r}, {host} creates {expected[field]!r}"
                problems.append(f"{where}: the {field} in LARDER_STORE is not the one {host}'s POSTGRES_* environment sets {shown}")
        if profiles_of(service) != profiles_of(target):
            problems.append(f"{where}: profiles {sorted(profiles_of(service))} differ from {host}'s {sorted(profiles_of(target))}")
    databases = {}
    for name, url in backed.items():
        databases.setdefault(frozenset(profiles_of(services[name])), []).append(name)
    for profiles, names in databases.items():
        label = f"profile {sorted(profiles)}" if profiles else "the services without a profile"
        if len(names) < 2:
            problems.append(f"{label}: one Larder ({names[0]}) on postgres; the recipe is several on one database")
        builds = {json.dumps([services[n].get("build"), services[n].get("image")], sort_keys=True) for n in names}
        if len(builds) > 1:
            problems.append(f"{label}: {', '.join(sorted(names))} are not built the same way (build and image differ)")
        stores = {(urlsplit(backed[n]).hostname, urlsplit(backed[n]).path) for n in names}
        if len(stores) > 1:
            problems.append(f"{label}: {', '.join(sorted(names))} are not on one database ({sorted(stores)})")
    for name, service in services.items():
        if not str(service.get("image", "")).split("/")[-1].startswith("postgres:"):
            continue
        if not any(backed[n] and urlsplit(backed[n]).hostname == name for n in backed):
            continue
        test = (service.get("healthcheck") or {}).get("test") or []
        if "pg_isready" not in (" ".join(test) if isinstance(test, list) else str(test)):
            problems.append(f"services.{name}.healthcheck: no pg_isready health check")
        if not environment_of(service).get("POSTGRES_PASSWORD"):
            problems.append(f"services.{name}.environment: no POSTGRES_PASSWORD (the image refuses to start)")
        mounted = [str(v).split(":")[1] if isinstance(v, str) and ":" in v else (v.get("target") if isinstance(v, dict) else None)
                   for v in service.get("volumes", [])]
        if "/var/lib/postgresql/data" not in mounted:
            problems.append(f"services.{name}.volumes: nothing is mounted at /var/lib/postgresql/data (the database would die with the container)")
    return problems


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
