"""Real servers for the slow tier: PostgreSQL, an MLflow tracking server (or `mlflow ui`), a Ray
head. Each listens on 127.0.0.1 on a free port, keeps its state in a throw-away folder, and is
stopped however the test ends (its whole process group, by id). A missing prerequisite fails
with what to install; nothing here skips."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent  # mlflow and ray: the console scripts of this venv


POLL_S = 0.1  # between two looks at a server starting: its start-up is seconds, the look milliseconds


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tail(log: Path, lines: int = 40) -> str:
    text = log.read_text(errors="replace") if log.exists() else ""
    return "\n".join(text.splitlines()[-lines:])


def wait_until(ready: Callable[[], bool], proc: subprocess.Popen, what: str, log: Path, timeout_s: float) -> None:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{what} exited with {proc.returncode} before it was ready; its log {log}:\n{tail(log)}")
        if ready():
            return
        time.sleep(POLL_S)
    pytest.fail(f"{what} was not ready within {timeout_s:.0f} s; its log {log}:\n{tail(log)}")


def stop(proc: subprocess.Popen, sig: int, timeout_s: float = 60) -> None:
    """Signal the server, wait for it, then kill whatever is left of its process group (every
    server here is started in a session of its own, so the group id is its pid)."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is empty: nothing left


def http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


@contextmanager
def mlflow_server(backend_store: str, artifacts: Path, log: Path) -> Iterator[str]:
    """`mlflow server` over `backend_store`, serving the artifacts it keeps under `artifacts`;
    yields its URL, the value each user gives MLFLOW_TRACKING_URI."""
    with _mlflow("server", backend_store, artifacts, log) as url:
        yield url


@contextmanager
def mlflow_ui(backend_store: str, artifacts: Path, log: Path) -> Iterator[str]:
    """`mlflow ui` over `backend_store`, as the README has a user open a store; yields the URL a
    browser opens. Runs keep their own artifact locations (a folder beside an sqlite database);
    `artifacts` is where the UI would put uploads, never the working directory."""
    with _mlflow("ui", backend_store, artifacts, log) as url:
        yield url


@contextmanager
def _mlflow(command: str, backend_store: str, artifacts: Path, log: Path) -> Iterator[str]:
    server = MlflowProcess(command, backend_store, artifacts, log)
    try:
        yield server.ready()
    finally:
        stop(server.proc, signal.SIGTERM)


class MlflowProcess:
    """`mlflow server` (or `mlflow ui`) started at once on a free port, in a session of its own;
    `ready()` waits for /health and returns the URL, so that a test can start two and wait for
    both; `kill()` is a server that dies under a run (its whole process group, at once)."""

    def __init__(self, command: str, backend_store: str, artifacts: Path, log: Path):
        port = free_port()
        # the server's job runner (GenAI evaluation jobs) is not used by cortex_exp; off, it starts
        # seven processes fewer and leaves no huey folder in /dev/shm
        env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
        cmd = [str(BIN / "mlflow"), command, "--host", "127.0.0.1", "--port", str(port), "--workers", "1"]
        cmd += ["--backend-store-uri", backend_store, "--artifacts-destination", str(artifacts), "--serve-artifacts"]
        self.what, self.log, self.url = f"mlflow {command}", log, f"http://127.0.0.1:{port}"
        with open(log, "w") as out:
            self.proc = subprocess.Popen(
                cmd, cwd=log.parent, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )

    def ready(self) -> str:
        wait_until(lambda: http_ok(self.url + "/health"), self.proc, self.what, self.log, 120)
        return self.url

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)


def postgres_bindir() -> Path:
    """Where initdb and postgres are: on PATH, else Debian's /usr/lib/postgresql/<version>/bin."""
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    debian = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[4]))
    if debian:
        return Path(debian[-1]).parent
    pytest.fail(
        "PostgreSQL is not installed (no initdb on PATH nor under /usr/lib/postgresql/*/bin): "
        "`make test` installs Debian's package (apt-get install postgresql)"
    )


@contextmanager
def postgres(log: Path) -> Iterator[str]:
    """A PostgreSQL server with an empty database `mlflow`, its data in a throw-away folder;
    yields the SQLAlchemy URL MLflow takes (`postgresql+psycopg://`: the psycopg 3 driver)."""
    import psycopg

    bindir = postgres_bindir()
    as_user: dict = {}
    if os.geteuid() == 0:  # initdb refuses to run as root: run the server as Debian's `postgres`
        try:
            pg = pwd.getpwnam("postgres")
        except KeyError:
            pytest.fail("running as root, and no `postgres` user to run PostgreSQL as (Debian's package adds it)")
        as_user = {"user": pg.pw_uid, "group": pg.pw_gid, "extra_groups": []}
    # under /tmp itself: pytest's tmp folders are root's alone (0700), the server could not enter them
    root = Path(tempfile.mkdtemp(prefix="cortex-pg-"))
    try:
        if as_user:
            os.chown(root, as_user["user"], as_user["group"])
        data = root / "data"
        init = [str(bindir / "initdb"), "-D", str(data), "-U", "mlflow", "-A", "trust", "-E", "UTF8", "--locale=C"]
        r = subprocess.run([*init, "--no-sync"], capture_output=True, text=True, **as_user)
        if r.returncode:
            pytest.fail(f"initdb failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
        port = free_port()
        # loopback only; the socket file in the throw-away folder; no fsync: the data dies with the test
        cmd = [str(bindir / "postgres"), "-D", str(data), "-p", str(port), "-k", str(root)]
        cmd += ["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"]
        with open(log, "w") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, **as_user)
        dsn = {"host": "127.0.0.1", "port": port, "user": "mlflow", "connect_timeout": 2, "autocommit": True}

        def ready() -> bool:
            try:
                with psycopg.connect(dbname="postgres", **dsn):
                    return True
            except psycopg.OperationalError:
                return False

        try:
            wait_until(ready, proc, "PostgreSQL", log, 60)
            with psycopg.connect(dbname="postgres", **dsn) as conn:
                conn.execute("CREATE DATABASE mlflow")
            yield f"postgresql+psycopg://mlflow@127.0.0.1:{port}/mlflow"
        finally:
            stop(proc, signal.SIGINT)  # SIGINT: PostgreSQL's fast shutdown
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def ray_head(cwd: Path, log: Path, env: dict, num_cpus: int = 2) -> Iterator[tuple[str, Path]]:
    """`ray start --head --block` in `cwd`; yields the address a driver gives
    `hydra.launcher.ray.init.address`, and Ray's temp folder (its logs). Every port is a free one
    (Ray's fixed defaults would collide with another cluster on the machine); the temp folder is
    a short path under /tmp (Ray's socket paths must stay under 108 characters)."""
    temp = Path(tempfile.mkdtemp(prefix="ray-"))
    port = free_port()
    cmd = [str(BIN / "ray"), "start", "--head", "--block", "--port", str(port), "--num-cpus", str(num_cpus)]
    cmd += ["--include-dashboard=false", "--disable-usage-stats", "--temp-dir", str(temp)]
    cmd += ["--object-store-memory", str(100 * 2**20)]
    for flag in ("--ray-client-server-port", "--dashboard-port", "--dashboard-agent-listen-port"):
        cmd += [flag, str(free_port())]
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        wait_until(lambda: "Ray runtime started" in log.read_text(errors="replace"), proc, "ray head", log, 120)
        yield f"127.0.0.1:{port}", temp
    finally:
        stop(proc, signal.SIGTERM)  # `ray start --block` stops every process of its node on SIGTERM
        shutil.rmtree(temp, ignore_errors=True)


# --- a search service that misbehaves (issue 17: deadlines, sides watched, secrets) -------------

PROBE_REQUESTS = 5  # the probe's queries, one a request (retriever.service.batch_size=1)


class Misbehaving:
    """The reference search service (examples/search_service.py; its dense side the hashed-bag
    encoder, strong enough for the probe) on 127.0.0.1, port 0, which answers the request as
    `act(n, method, body)` says — n counts the POSTs from 1 (a GET: 0):

    - `answer`: honestly; `trickle`: the honest answer one byte a second, from its status line;
      `silent`: reads the request and never sends a byte;
    - `lexical only`: honestly, but names only the lexical side (the dense side vanished);
    - `other model`: the dense side answers another model's ranking (its honest ranking of the
      whole corpus turned around, cut to k: the right documents last), the fused ranking made
      from it;
    - `echo`: HTTP 500 whose body echoes every request header (the auth header too);
    - `tied`: a set, not a ranking: the honest top 3, every score 1.0.
    `started` is set when a misbehaving answer begins (a test signals the run then)."""

    def __init__(self, corpus_path: Path, cache_dir: Path, act):
        import json as _json
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        from cortex_exp.retrievers.base import Ranking
        from cortex_exp.retrievers.dense import Dense
        from support.fake_encoder import HashedBagEncoder
        from support.loopback import reference_module

        module = reference_module()
        dense = Dense.using(HashedBagEncoder(), cache_dir=str(cache_dir), show_progress=False)
        self.service = module.HybridService(corpus_path, dense=dense)
        self.act, self.posts = act, 0
        self.started, self.stop = threading.Event(), threading.Event()
        owner, lock, honest_dense = self, threading.Lock(), self.service._dense

        def reversed_dense(texts, k):  # the whole corpus ranked, turned around, cut to k
            rankings, error = honest_dense(texts, len(self.service.corpus.docs))
            turned = [Ranking(r.doc_ids[::-1][:k], tuple(-s for s in r.scores[::-1][:k])) for r in rankings]
            return turned, error

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                self._reply(0, None, lambda: owner.service.listing())

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length)
                if len(raw) < length:  # the client hung up mid-request: a run stopping on another request's failure
                    owner.hung_up.append(f"POST {self.path}: {len(raw)} of {length} bytes, then the client hung up")
                    return
                body = _json.loads(raw)
                with lock:
                    owner.posts += 1
                    n = owner.posts
                self._reply(n, body, lambda: owner.service.answer(body))

            def _reply(self, n, body, honest):
                mode = owner.act(n, self.command, body)
                if mode != "answer":
                    owner.started.set()
                if mode == "silent":
                    owner.stop.wait()
                    return
                status, payload = 200, None
                if mode == "echo":
                    heard = sorted(self.headers.items(), key=lambda h: h[0].lower() != "authorization")
                    status, payload = 500, {"error": "bad request", "headers": dict(heard)}  # the auth header first
                elif mode == "other model":
                    with lock:
                        owner.service._dense = reversed_dense
                        try:
                            payload = honest()
                        finally:
                            owner.service._dense = honest_dense
                else:
                    payload = honest()
                for result in payload.get("results", []) if mode in ("lexical only", "tied") else []:
                    if mode == "lexical only":
                        result["components"].pop("dense")
                    else:
                        result["ranking"] = [{**item, "score": 1.0} for item in result["ranking"][:3]]
                data = _json.dumps(payload).encode()
                # the handler closes its connection after one answer (HTTP/1.0): say so, or the client
                # reuses it and loses a request to the race ("Server disconnected without sending a response")
                head = (
                    f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
                    "Connection: close\r\n\r\n"
                )
                raw = head.encode() + data
                try:
                    if mode != "trickle":
                        self.wfile.write(raw)
                        return
                    for i in range(len(raw)):
                        if owner.stop.wait(1.0):
                            return
                        self.wfile.write(raw[i : i + 1])
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up: what a deadline does

            def log_message(self, *args):
                pass

        class Server(ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                # a client that hung up mid-request (what a deadline does) is kept here, not printed
                # into the stderr a test reads for the run's tracebacks; any other error is printed
                if not isinstance(sys.exc_info()[1], ConnectionError):
                    return super().handle_error(request, client_address)
                owner.hung_up.append(traceback.format_exc())

        self.hung_up: list[str] = []
        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def after_probe(mode: str, listing: str = "answer"):
    """An `act`: the probe's requests and the listing answered (the listing as `listing` says),
    every later POST as `mode`."""
    return lambda n, method, body: listing if method == "GET" else ("answer" if n <= PROBE_REQUESTS else mode)
