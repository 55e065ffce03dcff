"""docker-compose.yml run by Compose itself (Debian's docker-compose 1.29,
Compose v1; LARDER_COMPOSE="docker compose" would run them with v2, which
is not installed here, so that was never run): the
default profile's `example` client passes against `larder`, and the
`postgres` profile's two Larders share a write. The services find each
other by name on the project's own network; the ports are published on
127.0.0.1 only."""

import os
import shlex
import subprocess
import uuid

import pytest

from conftest import ROOT, answers, docker, http, inspect, wait_for

COMPOSE = shlex.split(os.environ.get("LARDER_COMPOSE", "docker-compose"))


def compose(project, *args, check=True, timeout=600, env=None):
    result = subprocess.run([*COMPOSE, "--project-name", project, *args], cwd=ROOT, capture_output=True,
                            text=True, timeout=timeout, env={**os.environ, **(env or {})})
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(COMPOSE)} {' '.join(args)} failed ({result.returncode}):\n"
                             f"{result.stdout[-6000:]}\n{result.stderr[-6000:]}")
    return result


@pytest.fixture
def project(image):
    """A project of its own, taken down with its volumes afterwards."""
    name = f"larder-test-{uuid.uuid4().hex[:8]}"
    yield name
    compose(name, "--profile", "postgres", "down", "--volumes", "--remove-orphans", check=False)


def published(project, service):
    ids = docker("ps", "-q", "--filter", f"label=com.docker.compose.project={project}",
                 "--filter", f"label=com.docker.compose.service={service}").stdout.split()
    assert len(ids) == 1, f"{service}: {ids}"
    ports = docker("port", ids[0], "8080").stdout.split()
    return ids[0], ports


def test_the_file_is_read_by_compose_with_and_without_the_profile(project):
    compose(project, "config", "--quiet")
    compose(project, "--profile", "postgres", "config", "--quiet")
    # (v1's `config --services` lists every service, whatever its profile:
    # which ones start is checked by `up` below.)
    services = compose(project, "config", "--services").stdout.split()
    assert sorted(services) == ["example", "larder", "larder-a", "larder-b", "postgres"]


def test_the_default_profile_runs_the_example_client_to_success(project):
    """`docker-compose up`: `larder` becomes healthy, `example` (curl) runs
    examples/compose-smoke.sh against http://larder:8080 with the token and
    the fixtures, and exits 0."""
    result = compose(project, "up", "--exit-code-from", "example", check=False, timeout=300,
                     env={"LARDER_TOKEN": "compose-test-token"})
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-6000:]
    # Only the services without a profile ran.
    ran = docker("ps", "-a", "--format", "{{.Label \"com.docker.compose.service\"}}",
                 "--filter", f"label=com.docker.compose.project={project}").stdout.split()
    assert sorted(ran) == ["example", "larder"], ran
    for line in ["ok: PUT /store/compose-smoke/", "ok: GET without the token: 401",
                 "ok: GET /store/users/ada.json", "checks passed against http://larder:8080"]:
        assert line in out, out[-6000:]


def test_the_larder_service_is_published_on_loopback_only(project):
    compose(project, "up", "-d", "larder", env={"LARDER_TOKEN": "t"})
    container, ports = published(project, "larder")
    assert ports == ["127.0.0.1:8080"], ports
    wait_for(lambda: answers("http://127.0.0.1:8080/healthz"), 30, what="larder answering on 127.0.0.1:8080")
    # The project's own network, not the default bridge.
    networks = docker("inspect", "-f", "{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{end}}", container).stdout.split()
    assert networks == [f"{project}_default"], networks
    # A test sidecar: fault injection is on (the helpers' fault() works against it).
    auth = {"Authorization": "Bearer t"}
    assert http("GET", "http://127.0.0.1:8080/faults", headers=auth)[0] == 200


def test_the_pytest_plugin_uses_the_compose_sidecar_through_larder_url(project, tmp_path):
    """The pytest plugin (clients/python) against the compose `larder`
    service: LARDER_URL and LARDER_TOKEN, a namespace of its own that starts
    from the mounted fixtures, nothing left behind."""
    compose(project, "up", "-d", "larder", env={"LARDER_TOKEN": "plugin-token"})
    wait_for(lambda: answers("http://127.0.0.1:8080/healthz"), 30, what="larder answering on 127.0.0.1:8080")
    (tmp_path / "test_sidecar.py").write_text(
        "def test_writes(larder):\n"
        "    assert larder.get_json('users/ada.json') is not None\n"
        "    larder.put_json('k', 1)\n"
        "    assert larder.get_json('k') == 1\n"
        "def test_reset_between_tests(larder):\n"
        "    assert larder.get('k') is None\n"
        "    assert larder.url.startswith('http://127.0.0.1:8080/ns/pytest-')\n")
    env = {**os.environ, "LARDER_URL": "http://127.0.0.1:8080", "LARDER_TOKEN": "plugin-token",
           "PYTHONPATH": str(ROOT / "clients" / "python" / "src"),
           # Only the plugin named by -p: a pip install of clients/python
           # (.ci/test-helpers) leaves its egg-info in src/, whose entry
           # point would register it a second time.
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    result = subprocess.run(["python3", "-m", "pytest", "-q", "-p", "pytest_larder.plugin", "-p", "no:cacheprovider",
                             str(tmp_path / "test_sidecar.py")], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "2 passed" in result.stdout
    # The plugin dropped its namespace at the end.
    status, _, body = http("GET", "http://127.0.0.1:8080/ns/", headers={"Authorization": "Bearer plugin-token"})
    assert status == 200 and b"pytest-" not in body, body


def test_the_postgres_profile_shares_a_write_between_two_larders(project):
    env = {"LARDER_TOKEN": "pg-test-token", "POSTGRES_PASSWORD": "pg-test-password"}
    compose(project, "--profile", "postgres", "up", "-d", "postgres", "larder-a", "larder-b", timeout=300, env=env)
    for service, port in [("larder-a", 8081), ("larder-b", 8082)]:
        _, ports = published(project, service)
        assert ports == [f"127.0.0.1:{port}"], ports
        wait_for(lambda: answers(f"http://127.0.0.1:{port}/healthz"), 60, interval=0.2, what=f"{service} answering")
    auth = {"Authorization": "Bearer pg-test-token"}
    status, _, body = http("PUT", "http://127.0.0.1:8081/store/shared/1", b'{"via":"a"}',
                           {**auth, "Content-Type": "application/json"})
    assert status == 201, body
    status, _, body = http("GET", "http://127.0.0.1:8082/store/shared/1", headers=auth)
    assert (status, body) == (200, b'{"via":"a"}')
    # And the other way round, with compare-and-swap on the version b read.
    status, headers, _ = http("GET", "http://127.0.0.1:8082/store/shared/1", headers=auth)
    status, _, _ = http("PUT", "http://127.0.0.1:8082/store/shared/1", b'{"via":"b"}',
                        {**auth, "If-Match": headers["ETag"], "Content-Type": "application/json"})
    assert status == 204
    assert http("GET", "http://127.0.0.1:8081/store/shared/1", headers=auth)[2] == b'{"via":"b"}'
    # Both run the Dockerfile's `postgres` target: the default image and libpq.
    print(f"\nlarder:postgres image size: {inspect('larder:postgres')['Size']:,} bytes")


def up(*args, env=None):
    """docker/up.sh, the README's container line."""
    return subprocess.run(["bash", str(ROOT / "docker" / "up.sh"), *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env={**os.environ, **(env or {})})


def test_up_runs_compose_v1_where_only_v1_is_installed(image):
    """Compose v1 (docker-compose) here, no v2 plugin: up.sh picks v1, after
    its checks found the port free and the base images there."""
    assert docker("compose", "version", check=False).returncode != 0, "Compose v2 is installed: this test is for v1"
    result = up("--print")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "docker-compose up --build"
    result = up("--print", "--profile", "postgres", "-d", "postgres")
    assert result.stdout.strip() == "docker-compose --profile postgres up --build -d postgres", result.stderr


def test_up_reports_a_taken_port_before_building(image):
    """A port already taken (a `swift run larder` left on 8080, say) is
    reported at once, naming the port and the way out, with nothing built."""
    import socket
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        result = up("--print", env={"LARDER_HOST_PORT": str(port)})
    assert result.returncode == 1
    assert f"127.0.0.1:{port} is taken" in result.stderr and "LARDER_HOST_PORT" in result.stderr, result.stderr
    assert result.stdout == ""


def test_up_prefers_compose_v2_where_it_is_installed(image, tmp_path):
    """With the Compose plugin (v2) installed, up.sh runs `docker compose`:
    here a `docker` in front of the real one answers `compose version` as
    the plugin would (v2 is not installed on this machine)."""
    import shutil
    real = shutil.which("docker")
    shim = tmp_path / "docker"
    shim.write_text(f'#!/bin/sh\n[ "$1 $2" = "compose version" ] && {{ echo "Docker Compose version v2.29.0"; exit 0; }}\n'
                    f'exec {real} "$@"\n')
    shim.chmod(0o755)
    result = up("--print", env={"PATH": f"{tmp_path}:{os.environ['PATH']}"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "docker compose up --build"
