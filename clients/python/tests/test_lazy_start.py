"""The plugin starts nothing until a test asks for ``larder`` (or
``larder_session``): a run that never does needs no binary, and under
pytest-xdist the first worker that does starts the one server every worker
shares, which the controller stops when the run ends."""

import os
import shutil
import textwrap

import pytest


def _path_without_larder():
    return os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep)
                           if d and not os.access(os.path.join(d, "larder"), os.X_OK))


@pytest.fixture
def no_binary(monkeypatch):
    """No way to a server: no LARDER_BIN, no LARDER_URL, no larder on PATH."""
    for name in ("LARDER_BIN", "LARDER_URL", "LARDER_TOKEN", "LARDER_FIXTURES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATH", _path_without_larder())


@pytest.fixture
def tmpdir_env(pytester, monkeypatch):
    """A TMPDIR of the run's own, to see what it leaves behind."""
    tmp = pytester.path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    return tmp


@pytest.fixture
def starts(pytester, monkeypatch):
    """LARDER_BIN as a wrapper that records the pid of every server started
    (``exec`` keeps it); returns the file of pids."""
    real = os.environ.get("LARDER_BIN") or shutil.which("larder")
    assert real, "these tests need the larder binary: LARDER_BIN or larder on PATH"
    log = pytester.path / "starts.log"
    wrapper = pytester.path / "larder-wrapper"
    wrapper.write_text(f'#!/bin/sh\necho $$ >> "{log}"\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.delenv("LARDER_URL", raising=False)
    monkeypatch.setenv("LARDER_BIN", str(wrapper))
    return log


def _pids(log):
    return [int(line) for line in log.read_text().split()] if log.exists() else []


def _running(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] not in ("Z", "X")
    except OSError:
        return True


NO_FIXTURE_TESTS = textwrap.dedent("""
    import pytest

    @pytest.mark.parametrize("n", range(6))
    def test_plain(n):
        assert n * 2 == n + n
""")


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["no-xdist", "xdist"])
def test_a_run_that_never_uses_the_fixtures_needs_no_binary(pytester, no_binary, tmpdir_env, xdist):
    pytester.makepyfile(NO_FIXTURE_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *xdist)
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=6)
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert [p.name for p in tmpdir_env.iterdir() if p.name.startswith(("pytest-larder-", "larder-ephemeral-"))] == []


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["no-xdist", "xdist"])
def test_a_run_that_never_uses_the_fixtures_starts_no_server(pytester, starts, xdist):
    pytester.makepyfile(NO_FIXTURE_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *xdist)
    assert result.ret == 0
    result.assert_outcomes(passed=6)
    assert _pids(starts) == []


def test_xdist_workers_start_one_server_on_first_use_and_the_run_stops_it(pytester, starts, tmpdir_env):
    seen = pytester.path / "seen"
    seen.mkdir()
    pytester.makepyfile(textwrap.dedent(f"""
        import os, pytest

        def test_no_server_needed():
            pass

        @pytest.mark.parametrize("n", range(4))
        def test_uses_the_server(larder, n):
            larder.put_json("k", n)
            assert larder.get_json("k") == n
            worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
            with open(os.path.join({str(seen)!r}, str(n)), "w") as out:
                out.write(larder.url.rsplit("/ns/", 1)[0] + " " + worker)
    """))
    result = pytester.runpytest_subprocess("-n", "4", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=5)

    reports = [(seen / str(n)).read_text().split() for n in range(4)]
    assert len({base for base, _ in reports}) == 1, reports
    assert all(worker.startswith("gw") for _, worker in reports), reports
    (pid,) = _pids(starts)
    assert not _running(pid)
    # Stopped gracefully (SIGTERM: the server removed its data directory), and
    # the shared directory is gone.
    assert [p.name for p in tmpdir_env.iterdir() if p.name.startswith(("pytest-larder-", "larder-ephemeral-"))] == []


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["no-xdist", "xdist"])
def test_using_the_fixture_without_a_binary_is_a_setup_error(pytester, no_binary, xdist):
    pytester.makepyfile(textwrap.dedent("""
        def test_needs_larder(larder):
            pass

        def test_needs_the_session(larder_session):
            pass

        def test_needs_nothing():
            pass
    """))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *xdist)
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == 1, output
    result.assert_outcomes(passed=1, errors=2)
    assert "INTERNALERROR" not in output
    assert "LARDER_BIN" in output and "LARDER_URL" in output
