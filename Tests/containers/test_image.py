"""The image built from the Dockerfile, run by a real Docker engine: the user
it runs as, its HEALTHCHECK, the README's tour through the published port,
the named volume across a restart, a prompt stop, a read-only root."""

import re
import statistics
import subprocess
import time

from conftest import ROOT, answers, docker, health, host_port, http, inspect, wait_healthy


def readme_tour():
    """The README's tour (`<!-- example: readme-tour -->`) and the output it prints."""
    text = (ROOT / "README.md").read_text()
    script = re.search(r"<!-- example: readme-tour -->\n```sh\n(.*?)```", text, re.S).group(1)
    output = re.search(r"<!-- output: readme-tour -->\n```\n(.*?)```", text, re.S).group(1)
    return script, output


def test_the_image_builds_from_the_dockerfile_as_it_is(image, tmp_path):
    """(The `image` fixture builds it.) The runtime is the binary and the C
    libraries it links (no libpq: the default target is the disk store's):
    at most 40 MB, the binary in it at most 25 MB (the packages' binary,
    packaging/build-binary.sh: no Foundation ICU data)."""
    size = inspect(image)["Size"]
    container = docker("create", image).stdout.strip()
    try:
        docker("cp", f"{container}:/usr/local/bin/larder", str(tmp_path / "larder"))
    finally:
        docker("rm", container)
    binary = (tmp_path / "larder").stat().st_size
    print(f"\nimage size: {size:,} bytes; its larder: {binary:,} bytes")
    assert size <= 40_000_000, size
    assert binary <= 25_000_000, binary
    assert inspect(image)["Config"]["Entrypoint"] == ["larder"]


def test_the_image_runs_as_a_numeric_non_root_user(image, containers):
    config = inspect(image)["Config"]
    assert config["User"] == "10001:10001"
    name = containers.run("-v", f"{containers.volume()}:/data")
    wait_healthy(name)
    # The server's own process, as the host's kernel sees it.
    pid = inspect(name)["State"]["Pid"]
    status = open(f"/proc/{pid}/status").read()
    uids = re.search(r"^Uid:\s+(.*)$", status, re.M).group(1).split()
    assert set(uids) == {"10001"}, status


def test_it_becomes_healthy_within_two_seconds_of_answering(image, containers):
    """Five starts: each time the HEALTHCHECK says `healthy` no later than
    2 s after /healthz first answers through the published port. Prints
    the median start-to-healthy time (docs/docker.md)."""
    starts, lags = [], []
    for _ in range(5):
        started = time.monotonic()
        name = containers.run()
        url = containers.url(name) + "/healthz"
        answered = healthy = None
        while healthy is None and time.monotonic() - started < 30:
            now = time.monotonic()
            if answered is None and answers(url):
                answered = now
            if health(name)[0] == "healthy":
                healthy = now
            time.sleep(0.02)
        assert healthy is not None, docker("logs", name, check=False).stderr
        answered = answered or healthy
        starts.append(healthy - started)
        lags.append(healthy - answered)
        docker("rm", "-f", "-v", name)
    print(f"\nstart to healthy: median {statistics.median(starts):.2f} s of {[round(s, 2) for s in starts]}; "
          f"healthy after first answer: {[round(l, 2) for l in lags]}")
    assert max(lags) <= 2.0, lags


def test_idle_memory(image, containers):
    name = containers.run("-v", f"{containers.volume()}:/data")
    wait_healthy(name)
    time.sleep(3)
    usage = docker("stats", "--no-stream", "--format", "{{.MemUsage}}", name).stdout.strip()
    print(f"\nidle memory (docker stats --no-stream): {usage}")
    value, unit = re.match(r"([\d.]+)\s*([KMG]i?B)", usage).groups()
    mib = float(value) * {"KiB": 1 / 1024, "MiB": 1, "GiB": 1024, "kB": 1 / 1024, "MB": 1, "GB": 1024}[unit]
    assert mib < 64, usage


def test_the_readme_tour_through_the_published_port(image, containers):
    name = containers.run("-v", f"{containers.volume()}:/data")
    wait_healthy(name)
    ip, port = host_port(name)
    # Published on the host's loopback only.
    assert ip == "127.0.0.1"
    script, expected = readme_tour()
    script = script.replace("localhost:8080", f"127.0.0.1:{port}")
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == expected


def test_the_viewer_is_built_in(image, containers):
    name = containers.run()
    wait_healthy(name)
    status, _, body = http("GET", containers.url(name) + "/viewer/")
    assert status == 200
    assert body == (ROOT / "Public/index.html").read_bytes()


def test_data_stays_in_the_named_volume_across_a_restart(image, containers):
    volume = containers.volume()
    name = containers.run("-v", f"{volume}:/data")
    wait_healthy(name)
    url = containers.url(name)
    assert http("PUT", url + "/store/kept/1", b'{"kept":true}', {"Content-Type": "application/json"})[0] == 201
    docker("restart", name)
    wait_healthy(name)
    url = containers.url(name)  # the host port may change
    status, headers, body = http("GET", url + "/store/kept/1")
    assert (status, body) == (200, b'{"kept":true}')
    # And in a new container on the same volume.
    docker("rm", "-f", "-v", name)
    again = containers.run("-v", f"{volume}:/data")
    wait_healthy(again)
    assert http("GET", containers.url(again) + "/store/kept/1")[2] == b'{"kept":true}'


def test_it_stops_within_two_seconds_of_docker_stop(image, containers):
    name = containers.run("-v", f"{containers.volume()}:/data")
    wait_healthy(name)
    assert http("PUT", containers.url(name) + "/store/k", b"v")[0] == 201
    started = time.monotonic()
    docker("stop", name)
    elapsed = time.monotonic() - started
    state = inspect(name)["State"]
    print(f"\ndocker stop: {elapsed:.2f} s, exit code {state['ExitCode']}")
    assert elapsed < 2.0
    assert state["ExitCode"] == 0, docker("logs", name, check=False).stderr


def test_it_runs_with_a_read_only_root(image, containers):
    volume = containers.volume()
    name = containers.run("--read-only", "-v", f"{volume}:/data")
    wait_healthy(name)
    url = containers.url(name)
    assert http("PUT", url + "/store/ro/1", b"written")[0] == 201
    assert http("GET", url + "/store/ro/1")[2] == b"written"
    assert inspect(name)["HostConfig"]["ReadonlyRootfs"] is True
