"""The pytest plugin: one server per run, one namespace per worker.

Where the server comes from, in order:
1. ``LARDER_URL`` (e.g. a docker compose sidecar): used as is, never stopped
   (``LARDER_TOKEN``, when set, goes with every request);
2. under pytest-xdist, the controller starts one ``larder`` before the workers
   and hands them its URL, so every worker shares that one server;
3. otherwise the first test that asks for ``larder`` starts one for the session.

Each worker (``gw0``, ``gw1``, ... or ``main`` without xdist) gets the namespace
``<run>-<worker>``, where ``<run>`` is unique per pytest run: workers, and two
runs sharing one sidecar, never see each other's writes. The function fixture
``larder`` resets that namespace to the fixtures before the test, and the
namespace is dropped when the worker ends.
"""

import os
import secrets

import pytest

from .client import Larder
from .server import LarderServer

_SERVER_URL = "larder_server_url"
_RUN_ID = "larder_run_id"


def pytest_addoption(parser):
    parser.addini("larder_fixtures", "Directory of read-only fixtures for the started server (or LARDER_FIXTURES)")
    parser.addini("larder_binary", "Path of the larder binary (or LARDER_BIN; default: larder on PATH)")
    parser.addini("larder_args", "Extra arguments for the started server", type="args", default=[])


def _fixtures(config):
    value = os.environ.get("LARDER_FIXTURES") or config.getini("larder_fixtures")
    if not value:
        return None
    return value if os.path.isabs(value) else os.path.join(str(config.rootpath), value)


def _start(config):
    return LarderServer(binary=config.getini("larder_binary") or None, fixtures=_fixtures(config),
                        extra_args=config.getini("larder_args"))


class _Session:
    """The run's server and this process's namespace, made on first use."""

    def __init__(self, config):
        self.config = config
        self.server = None
        workerinput = getattr(config, "workerinput", None)
        if workerinput is not None:
            self.run_id = workerinput[_RUN_ID]
            self.base = workerinput.get(_SERVER_URL)
            self.worker = workerinput.get("workerid", "gw")
        else:
            self.run_id = getattr(config, "_larder_run_id", None) or secrets.token_hex(4)
            self.base = os.environ.get("LARDER_URL") or None
            self.worker = "main"
        self.namespace = None

    def larder(self):
        if self.namespace is None:
            if self.base is None:
                self.server = _start(self.config)
                self.base = self.server.url
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
        config._larder_controller_server = None
    config._larder_session = _Session(config)


def pytest_unconfigure(config):
    session = getattr(config, "_larder_session", None)
    if session is not None:
        session.close()
    server = getattr(config, "_larder_controller_server", None)
    if server is not None:
        server.stop()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """pytest-xdist, in the controller: every worker gets the run id and the one server's URL."""
    config = node.config
    node.workerinput[_RUN_ID] = config._larder_run_id
    url = os.environ.get("LARDER_URL")
    if not url:
        if config._larder_controller_server is None:
            config._larder_controller_server = _start(config)
        url = config._larder_controller_server.url
    node.workerinput[_SERVER_URL] = url


@pytest.fixture(scope="session")
def larder_session(request):
    """This worker's namespace, not reset: for session-scoped set-up of your own."""
    return request.config._larder_session.larder()


@pytest.fixture
def larder(larder_session):
    """This worker's namespace, reset to exactly the fixtures before the test."""
    larder_session.reset()
    return larder_session
