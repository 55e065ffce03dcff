"""The pytest plugin: one server per run, started on first use, one namespace per worker.

Nothing happens until a test asks for ``larder`` or ``larder_session``: a run
whose tests never do starts no server and needs no ``larder`` binary.

Where the server comes from, in order:
1. ``LARDER_URL`` (e.g. a docker compose sidecar): used as is, never stopped
   (``LARDER_TOKEN``, when set, goes with every request);
2. otherwise the first test that asks for a fixture starts one ``larder``,
   stopped when the run ends. Under pytest-xdist every worker shares that one
   server: the controller makes a directory for the run and hands its path to
   the workers; the first worker that needs the server starts it under an
   exclusive lock on a file there and leaves its URL and pid beside it, the
   others read the URL, and the controller stops the server (by its pid) and
   removes the directory when the run ends. The server's stdout and stderr go
   to files in that directory, so it holds none of the worker's pipes.

If no server can be started (no binary), each test that asks for a fixture
errors at set-up with what to do; the others run as usual.

Each worker (``gw0``, ``gw1``, ... or ``main`` without xdist) gets the namespace
``<run>-<worker>``, where ``<run>`` is unique per pytest run: workers, and two
runs sharing one sidecar, never see each other's writes. The function fixture
``larder`` resets that namespace to the fixtures before the test, and the
namespace is dropped when the worker ends.
"""

import os
import secrets
import shutil
import tempfile
import time

import pytest

from .client import Larder
from .server import LarderServer, stop_pid_file

_SERVER_URL = "larder_server_url"
_RUN_ID = "larder_run_id"
_SHARED_DIR = "larder_shared_dir"

# Files in the shared directory, beside the server's own (server.py).
_LOCK_FILE = "lock"
_URL_FILE = "url"
_ERROR_FILE = "error"


def pytest_addoption(parser):
    parser.addini("larder_fixtures", "Directory of read-only fixtures for the started server (or LARDER_FIXTURES)")
    parser.addini("larder_binary", "Path of the larder binary (or LARDER_BIN; default: larder on PATH)")
    parser.addini("larder_args", "Extra arguments for the started server", type="args", default=[])


def _fixtures(config):
    value = os.environ.get("LARDER_FIXTURES") or config.getini("larder_fixtures")
    if not value:
        return None
    return value if os.path.isabs(value) else os.path.join(str(config.rootpath), value)


def _start(config, state_dir=None):
    return LarderServer(binary=config.getini("larder_binary") or None, fixtures=_fixtures(config),
                        extra_args=config.getini("larder_args"), state_dir=state_dir)


def _read(path):
    try:
        with open(path, encoding="utf-8") as file:
            return file.read().strip()
    except FileNotFoundError:
        return ""


def _write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as file:
        file.write(text + "\n")
    os.replace(tmp, path)


def _start_shared(config, shared_dir):
    """The URL of the run's one server, started by whichever worker gets here first.

    The exclusive lock makes the others wait until it has either written the
    URL or the reason it could not start the server (then they fail with the
    same reason, rather than each trying again)."""
    import fcntl

    with open(os.path.join(shared_dir, _LOCK_FILE), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            url = _read(os.path.join(shared_dir, _URL_FILE))
            if url:
                return url
            error = _read(os.path.join(shared_dir, _ERROR_FILE))
            if error:
                raise RuntimeError(error)
            try:
                # Not stopped by this worker: it serves every worker until the controller stops it.
                server = _start(config, state_dir=shared_dir)
            except RuntimeError as err:
                _write(os.path.join(shared_dir, _ERROR_FILE), str(err))
                raise
            _write(os.path.join(shared_dir, _URL_FILE), server.url)
            return server.url
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


class _Session:
    """The run's server and this process's namespace, made on first use."""

    def __init__(self, config):
        self.config = config
        self.server = None
        self.shared_dir = None
        self.error = None
        workerinput = getattr(config, "workerinput", None)
        if workerinput is not None:
            self.run_id = workerinput[_RUN_ID]
            self.base = workerinput.get(_SERVER_URL) or os.environ.get("LARDER_URL") or None
            self.shared_dir = workerinput.get(_SHARED_DIR)
            self.worker = workerinput.get("workerid", "gw")
        else:
            self.run_id = getattr(config, "_larder_run_id", None) or secrets.token_hex(4)
            self.base = os.environ.get("LARDER_URL") or None
            self.worker = "main"
        self.namespace = None

    def larder(self):
        if self.namespace is None:
            if self.error is not None:
                pytest.fail(self.error, pytrace=False)
            if self.base is None:
                try:
                    if self.shared_dir is not None:
                        self.base = _start_shared(self.config, self.shared_dir)
                    else:
                        self.server = _start(self.config)
                        self.base = self.server.url
                except RuntimeError as err:
                    self.error = f"pytest-larder could not start a server: {err}"
                if self.error is not None:
                    pytest.fail(self.error, pytrace=False)
            self.namespace = Larder(f"{self.base.rstrip('/')}/ns/pytest-{self.run_id}-{self.worker}",
                                    token=os.environ.get("LARDER_TOKEN") or None)
        return self.namespace

    def close(self):
        if self.namespace is not None:
            try:
                self.namespace.drop()
            except OSError:
                pass
        if self.server is not None:
            self.server.stop()


def pytest_configure(config):
    if getattr(config, "workerinput", None) is None:
        config._larder_run_id = secrets.token_hex(4)
        config._larder_shared_dir = None
    config._larder_session = _Session(config)


def pytest_unconfigure(config):
    session = getattr(config, "_larder_session", None)
    if session is not None:
        session.close()
    shared_dir = getattr(config, "_larder_shared_dir", None)
    if shared_dir is not None:
        config._larder_shared_dir = None
        _stop_shared(shared_dir)


def _stop_shared(shared_dir):
    """In the xdist controller, once the workers are gone: stops the server one
    of them started, if any, and removes the shared directory."""
    try:
        import fcntl
    except ImportError:
        fcntl = None
    lock = None
    try:
        if fcntl is not None and os.path.exists(os.path.join(shared_dir, _LOCK_FILE)):
            # A worker still starting the server (it should be gone by now) writes
            # the pid before the URL; wait a little for it, never for ever.
            lock = open(os.path.join(shared_dir, _LOCK_FILE), "a")
            deadline = time.monotonic() + 10
            while True:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.05)
        stop_pid_file(shared_dir)
    finally:
        if lock is not None:
            lock.close()
        shutil.rmtree(shared_dir, ignore_errors=True)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """pytest-xdist, in the controller: every worker gets the run id, and either
    ``LARDER_URL`` or the directory through which the workers share one server.
    Nothing is started here."""
    config = node.config
    node.workerinput[_RUN_ID] = config._larder_run_id
    url = os.environ.get("LARDER_URL")
    if url:
        node.workerinput[_SERVER_URL] = url
        return
    if config._larder_shared_dir is None:
        config._larder_shared_dir = tempfile.mkdtemp(prefix="pytest-larder-")
    node.workerinput[_SHARED_DIR] = config._larder_shared_dir


@pytest.fixture(scope="session")
def larder_session(request):
    """This worker's namespace, not reset: for session-scoped set-up of your own."""
    return request.config._larder_session.larder()


@pytest.fixture
def larder(larder_session):
    """This worker's namespace, reset to exactly the fixtures before the test;
    its clock is put back on the system clock after it."""
    larder_session.reset()
    yield larder_session
    larder_session.clock.reset()
