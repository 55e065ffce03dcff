"""Starting and stopping a ``larder`` process for a test run."""

import os
import shutil
import subprocess
import threading
import time
import urllib.request


class LarderServer:
    """A ``larder --ephemeral --port 0 --no-fsync`` child process.

    Its data lives in a temporary directory the server removes when it
    exits. ``url`` is the server's base URL, read from the first line the
    server prints.
    """

    def __init__(self, binary=None, fixtures=None, allow_faults=True, extra_args=(), start_timeout=30):
        binary = binary or os.environ.get("LARDER_BIN") or shutil.which("larder")
        if not binary:
            raise RuntimeError("no larder binary: put it on PATH, set LARDER_BIN, or set LARDER_URL to a running server")
        args = [binary, "--ephemeral", "--port", "0", "--host", "127.0.0.1", "--no-fsync"]
        if fixtures:
            args += ["--fixtures", str(fixtures)]
        if allow_faults:
            args.append("--allow-faults")
        args += list(extra_args)
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._stderr = []
        threading.Thread(target=self._drain, args=(self.process.stderr, self._stderr), daemon=True).start()
        line = self.process.stdout.readline().strip()
        if not line.startswith("http://"):
            self.process.kill()
            self.process.wait()
            raise RuntimeError(f"larder did not start: {line!r} {''.join(self._stderr)[-2000:]}")
        threading.Thread(target=self._drain, args=(self.process.stdout, []), daemon=True).start()
        self.url = line.rstrip("/")
        self._wait_healthy(start_timeout)

    @staticmethod
    def _drain(stream, into):
        for line in stream:
            into.append(line)

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
                raise RuntimeError(f"larder at {self.url} did not become healthy: {''.join(self._stderr)[-2000:]}")
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
