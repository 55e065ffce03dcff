"""The Testcontainers recipe of docs/docker.md, for Python, run as written
there: the generic DockerContainer starts the image, waits on /healthz over
HTTP, a value is stored and read back, the container stops.

Ryuk (Testcontainers' reaper, an image of its own from Docker Hub) is off:
no registry answers in CI, and the `with` block removes the container."""

import os

import pytest

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
# These machines have a /.dockerenv, from which Testcontainers guesses that it
# runs inside a container and reaches ports through the bridge's gateway;
# the engine runs on this host, its ports on 127.0.0.1.
os.environ.setdefault("TESTCONTAINERS_CONNECTION_MODE", "docker_host")
testcontainers = pytest.importorskip("testcontainers", reason="pip install testcontainers")

from conftest import IMAGE, http  # noqa: E402

# --- docs/docker.md: "Testcontainers", Python (kept in step by hand) ---------
from testcontainers.core.container import DockerContainer  # noqa: E402
from testcontainers.core.wait_strategies import HttpWaitStrategy  # noqa: E402


def larder_container(image="larder:latest"):
    larder = DockerContainer(image).waiting_for(
        HttpWaitStrategy(8080, "/healthz").for_status_code(200).with_startup_timeout(30))
    # Published on the host's loopback only, on a free port (with_bind_ports
    # takes no address; docker-py's (address, port) form does).
    larder.ports["8080/tcp"] = ("127.0.0.1", None)
    return larder
# ------------------------------------------------------------------------------


def test_testcontainers_starts_the_image_and_a_value_goes_in_and_out(image):
    with larder_container(IMAGE) as larder:
        host = f"http://{larder.get_container_host_ip()}:{larder.get_exposed_port(8080)}"
        # One namespace per worker (pytest-xdist's worker id, or "main").
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        base = f"{host}/ns/{worker}"
        key = f"{base}/store/greeting"
        assert http("PUT", key, b"hello", {"Content-Type": "text/plain"})[0] == 201
        status, headers, body = http("GET", key)
        assert (status, body) == (200, b"hello")
        # Only in this worker's namespace.
        assert http("GET", f"{host}/store/greeting")[0] == 404
        assert http("GET", f"{host}/ns/other/store/greeting")[0] == 404
        container_id = larder.get_wrapped_container().id
        larder.get_wrapped_container().reload()
        bindings = larder.get_wrapped_container().attrs["NetworkSettings"]["Ports"]["8080/tcp"]
        assert [b["HostIp"] for b in bindings] == ["127.0.0.1"], bindings
    # Stopped and removed.
    from conftest import docker
    assert docker("inspect", container_id, check=False).returncode != 0


def test_the_python_snippet_of_docs_docker_md_runs_as_printed(image):
    """The page's Python snippet, as printed, in a process of its own whose
    environment has no TESTCONTAINERS_* setting: complete as it stands
    (the reaper off, the connection mode, faults on in the sidecar)."""
    import re
    import subprocess
    import sys

    from conftest import ROOT
    page = (ROOT / "docs" / "docker.md").read_text()
    snippet = re.search(r"Python \(`pip install testcontainers`\).*?```python\n(.*?)```", page, re.S).group(1)
    assert '"larder:latest"' in snippet
    env = {k: v for k, v in os.environ.items() if not k.startswith("TESTCONTAINERS_")}
    result = subprocess.run([sys.executable, "-c", snippet.replace('"larder:latest"', repr(IMAGE))],
                            capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
