"""Starting and stopping a ``larder`` process for a test run."""

import os
import shutil
import signal
import subprocess
import sysconfig
import threading
import time
import urllib.request


def find_binary():
    """``larder`` on PATH, else the one the ``larder`` wheel installed beside
    this Python (a venv's ``bin/``, on PATH only while it is activated)."""
    found = shutil.which("larder")
    if found:
        return found
    beside = os.path.join(sysconfig.get_path("scripts"), "larder")
    return beside if os.access(beside, os.X_OK) else None


#: What a test run needs when no server can be started.
NO_BINARY = "no larder binary: put it on PATH, set LARDER_BIN, or set LARDER_URL to a running server"

# The files of a server started with ``state_dir``.
OUT_FILE = "server.out"
ERR_FILE = "server.err"
PID_FILE = "server.pid"


class LarderServer:
    """A ``larder --ephemeral --port 0 --no-fsync`` child process.

    Its data lives in a temporary directory the server removes when it
    exits. ``url`` is the server's base URL, read from the first line the
    server prints.

    With ``state_dir``, the server may outlive the process that starts it
    (under pytest-xdist, the worker that needs it first starts it for every
    worker, and the controller stops it): its stdout and stderr go to
    ``server.out`` and ``server.err`` in that directory instead of pipes to
    this process, its stdin is ``/dev/null``, and its pid is written to
    ``server.pid`` as soon as it runs, for :func:`stop_pid_file`.
    """

    def __init__(self, binary=None, fixtures=None, allow_faults=True, extra_args=(), start_timeout=30,
                 state_dir=None):
        binary = binary or os.environ.get("LARDER_BIN") or find_binary()
        if not binary:
            raise RuntimeError(NO_BINARY)
        args = [binary, "--ephemeral", "--port", "0", "--host", "127.0.0.1", "--no-fsync"]
        if fixtures:
            args += ["--fixtures", str(fixtures)]
        if allow_faults:
            args.append("--allow-faults")
        args += list(extra_args)
        self.state_dir = state_dir
        self._stderr = []
        try:
            if state_dir is None:
                self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                                stderr=subprocess.PIPE, text=True)
            else:
                with open(os.path.join(state_dir, OUT_FILE), "wb") as out, \
                        open(os.path.join(state_dir, ERR_FILE), "wb") as err:
                    self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
                _write_atomically(os.path.join(state_dir, PID_FILE),
                                  f"{self.process.pid}\n{_start_time(self.process.pid) or ''}\n")
        except OSError as err:
            raise RuntimeError(f"cannot run {binary}: {err} ({NO_BINARY})") from err
        if state_dir is None:
            threading.Thread(target=self._drain, args=(self.process.stderr, self._stderr), daemon=True).start()
            line = self.process.stdout.readline().strip()
        else:
            line = self._read_url_file(start_timeout)
        if not line.startswith("http://"):
            self.process.kill()
            self.process.wait()
            raise RuntimeError(f"larder did not start: {line!r} {self.stderr_tail()}")
        if state_dir is None:
            threading.Thread(target=self._drain, args=(self.process.stdout, []), daemon=True).start()
        self.url = line.rstrip("/")
        self._wait_healthy(start_timeout)

    @staticmethod
    def _drain(stream, into):
        for line in stream:
            into.append(line)

    def _read_url_file(self, timeout):
        """The first line of ``server.out`` once the server has written it ('' if it exits first)."""
        path = os.path.join(self.state_dir, OUT_FILE)
        deadline = time.monotonic() + timeout
        while True:
            with open(path, encoding="utf-8", errors="replace") as out:
                text = out.read()
            if "\n" in text:
                return text.split("\n", 1)[0].strip()
            if self.process.poll() is not None or time.monotonic() > deadline:
                return text.strip()
            time.sleep(0.01)

    def stderr_tail(self, limit=2000):
        """The end of what the server wrote to stderr."""
        if self.state_dir is None:
            return "".join(self._stderr)[-limit:]
        return read_tail(os.path.join(self.state_dir, ERR_FILE), limit)

    def _wait_healthy(self, timeout):
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=2) as resp:
                    if resp.status == 200:
                        return
            except OSError:
                pass
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.stop()
                raise RuntimeError(f"larder at {self.url} did not become healthy: {self.stderr_tail()}")
            time.sleep(0.02)

    def stop(self):
        """Stops the server (SIGTERM, then SIGKILL after 10 s); its data directory goes with it."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def read_tail(path, limit=2000):
    """The last ``limit`` characters of a text file ('' when there is none)."""
    try:
        with open(path, "rb") as file:
            file.seek(0, os.SEEK_END)
            file.seek(max(0, file.tell() - limit))
            return file.read().decode("utf-8", "replace")
    except OSError:
        return ""


def stop_pid_file(state_dir, timeout=10):
    """Stops the server a :class:`LarderServer` with ``state_dir`` started, from
    any process: SIGTERM, then SIGKILL after ``timeout`` seconds. Nothing
    happens when there is no pid file, or when that process is gone (a pid
    taken since by another process is left alone where ``/proc`` tells)."""
    try:
        with open(os.path.join(state_dir, PID_FILE)) as file:
            fields = file.read().split("\n")
        pid = int(fields[0])
    except (OSError, ValueError):
        return
    started = fields[1].strip() if len(fields) > 1 else ""
    if not _running(pid) or (started and _start_time(pid) not in (None, started)):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while _running(pid):
        if time.monotonic() > deadline:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            return
        time.sleep(0.02)


def _running(pid):
    """Whether ``pid`` is a live process (a zombie is not; one of ours is reaped)."""
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    state = _proc_stat(pid)
    return state is None or state[0] not in ("Z", "X")


def _proc_stat(pid):
    """The fields of ``/proc/<pid>/stat`` from the state on, or None (no /proc, or gone)."""
    try:
        with open(f"/proc/{pid}/stat") as file:
            return file.read().rpartition(")")[2].split()
    except (OSError, ValueError):
        return None


def _start_time(pid):
    """The process's start time in clock ticks since boot (Linux), or None."""
    stat = _proc_stat(pid)
    return stat[19] if stat and len(stat) > 19 else None


def _write_atomically(path, text):
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as file:
        file.write(text)
    os.replace(tmp, path)
