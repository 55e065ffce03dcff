"""Shared pieces of the container tests: a real Docker engine, the image
built from the repository's Dockerfile as it is, and helpers to start and
read containers. Run by `.ci/containers` (which makes sure an engine answers
and the base images exist), or by hand:

    python3 -m pytest Tests/containers

With no engine answering, every test here is skipped (and says why).
"""

import json
import os
import subprocess
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The tag docker-compose.yml gives the image, so `docker-compose up` uses this build.
IMAGE = os.environ.get("LARDER_IMAGE", "larder:latest")


def docker(*args, check=True, timeout=600, **kwargs):
    """`docker ARGS`: the completed process (text), raising on failure when check."""
    result = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, **kwargs)
    if check and result.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result


def engine_answers():
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def inspect(name):
    return json.loads(docker("inspect", name).stdout)[0]


def health(name):
    state = inspect(name)["State"]
    return (state.get("Health") or {}).get("Status"), state


def host_port(name, port=8080):
    """The published (host ip, host port) of the container's `port`/tcp."""
    bindings = inspect(name)["NetworkSettings"]["Ports"][f"{port}/tcp"]
    assert bindings, f"{name}: {port}/tcp is not published"
    return bindings[0]["HostIp"], int(bindings[0]["HostPort"])


def http(method, url, body=None, headers=None, timeout=5):
    """(status, headers, body bytes); an HTTP error status is an answer too."""
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def wait_for(predicate, timeout, interval=0.05, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"{what} not reached within {timeout} s")


def answers(url):
    try:
        return http("GET", url, timeout=1)[0] == 200
    except OSError:
        return False


def wait_healthy(name, timeout=60):
    def check():
        status, state = health(name)
        if not state["Running"]:
            logs = docker("logs", name, check=False)
            raise AssertionError(f"{name} stopped ({state['ExitCode']}):\n{logs.stdout}{logs.stderr}")
        return status == "healthy"
    wait_for(check, timeout, interval=0.05, what=f"{name} healthy")


class Containers:
    """Containers and volumes a test made, removed when it ends."""

    def __init__(self):
        self.names, self.volumes = [], []

    def volume(self):
        name = f"larder-test-{uuid.uuid4().hex[:8]}"
        docker("volume", "create", name)
        self.volumes.append(name)
        return name

    def run(self, *args, image=IMAGE, command=()):
        """`docker run -d` of the image, its port 8080 on a free port of 127.0.0.1."""
        name = f"larder-test-{uuid.uuid4().hex[:8]}"
        docker("run", "-d", "--name", name, "-p", "127.0.0.1::8080", *args, image, *command)
        self.names.append(name)
        return name

    def url(self, name):
        ip, port = host_port(name)
        return f"http://{ip}:{port}"

    def remove(self):
        for name in self.names:
            docker("rm", "-f", "-v", name, check=False)
        for volume in self.volumes:
            docker("volume", "rm", "-f", volume, check=False)


@pytest.fixture(scope="session")
def engine():
    if not engine_answers():
        pytest.skip("no Docker engine answers (`docker info` fails): .ci/containers starts one")
    return True


@pytest.fixture(scope="session")
def image(engine):
    """The image, built from the Dockerfile as it is (the legacy builder of
    Docker 20.10, as CI's engine has; its layer cache makes a second build a
    matter of seconds)."""
    started = time.monotonic()
    result = docker("build", "-t", IMAGE, str(ROOT), check=False, timeout=3600,
                    env={**os.environ, "DOCKER_BUILDKIT": os.environ.get("DOCKER_BUILDKIT", "0")})
    assert result.returncode == 0, f"docker build failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    print(f"docker build: {time.monotonic() - started:.1f} s")
    return IMAGE


@pytest.fixture
def containers(image):
    made = Containers()
    yield made
    made.remove()
