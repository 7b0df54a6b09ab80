"""The job starter: one preloaded interpreter that forks a process per job.

Starting an interpreter and importing a job's modules costs about a second of CPU, more than most
fits. The starter (``python -m app.jobs.starter``) pays it once: it imports every job body and
every model that needs no TensorFlow (``app.jobs.child.preload``), then waits on its standard
input. For each job the in-process runner writes one JSON line (kind, id, the database URL); the
starter forks, and the fork runs that one job and exits. It is still one job per process: a
cancel terminates the job's process, a crash takes only that process.

GP fits fork from a second starter (``python -m app.jobs.starter --tensorflow``), started by the
first GP job of the process, which has imported TensorFlow and GPflow too: their import (about 6
CPU seconds, 0.7 GiB) is paid once, not by every GP job. Importing creates no TensorFlow context
or thread pool (those start at the first operation, in the job's process after the fork), so the
forks are safe; the API process and the plain starter never hold TensorFlow.

The protocol, one JSON object a line. In: ``{"job": token, "kind": k, "id": n, "env": {...}}``,
``env`` the whole environment the job's process is to see (the API's at submission, with the
database URL).
Out: ``{"job": token, "pid": p}`` once forked (or ``{"job": token, "error": "..."}``), and
``{"exit": p, "code": c}`` when process p has ended (c as ``Popen.returncode``: the exit status,
or minus the signal). At the end of its input the starter stops taking jobs, reports the jobs
still running as they end, and exits. A job's process is killed if the starter dies
(``PR_SET_PDEATHSIG`` on Linux), so none outlives it unseen.

The API side is :class:`Starter`: a process-wide one per environment (``starter_for``), shared
by every runner of the process; a job's process is a :class:`StartedJob`, which answers the part
of ``subprocess.Popen`` the runner uses (``pid``, ``poll``, ``wait``, ``terminate``, ``kill``,
``returncode``).
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
from typing import IO, Any

# -- the API's side ----------------------------------------------------------------------------


def can_fork() -> bool:
    return hasattr(os, "fork")


class StartedJob:
    """A job's process forked by the starter; ``returncode`` is set when it has ended."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._ended = threading.Event()

    def _end(self, code: int) -> None:
        self.returncode = code
        self._ended.set()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired(f"job process {self.pid}", timeout or 0.0)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class StarterGone(RuntimeError):
    """The starter process has ended: the runner starts the job another way."""


class Starter:
    """The API's handle on one starter process."""

    def __init__(self, env: dict[str, str], *, tensorflow: bool = False) -> None:
        self.env = env
        self.tensorflow = tensorflow
        self._process = subprocess.Popen(
            [sys.executable, "-m", "app.jobs.starter", *(["--tensorflow"] if tensorflow else [])],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self._lock = threading.Lock()
        self._tokens = itertools.count(1)
        self._forked: dict[int, tuple[threading.Event, list[Any]]] = {}
        self._jobs: dict[int, StartedJob] = {}
        self._exited: dict[int, int] = {}  # exits reported before their fork's answer was read
        self._gone = False
        self._reader = threading.Thread(target=self._read, name="crowdqrels-starter",
                                        daemon=True)
        self._reader.start()

    @property
    def alive(self) -> bool:
        return not self._gone and self._process.poll() is None

    def start(self, kind: str, job_id: int, env: dict[str, str]) -> StartedJob:
        """Fork a process for the job; :class:`StarterGone` when the starter cannot."""
        token = next(self._tokens)
        answered = threading.Event()
        answer: list[Any] = []
        line = json.dumps({"job": token, "kind": kind, "id": job_id, "env": env}) + "\n"
        with self._lock:
            if self._gone:
                raise StarterGone("the job starter has ended")
            self._forked[token] = (answered, answer)
            try:
                assert self._process.stdin is not None
                self._process.stdin.write(line.encode())
                self._process.stdin.flush()
            except (OSError, ValueError) as error:
                self._forked.pop(token, None)
                raise StarterGone(f"the job starter has ended: {error}") from error
        # The starter answers once its imports are done: the first job may wait for them.
        if not answered.wait(timeout=120) or not answer:
            raise StarterGone("the job starter did not answer")
        job = answer[0]
        if isinstance(job, str):
            raise StarterGone(f"the job starter could not fork: {job}")
        return job  # type: ignore[no-any-return]

    def close(self) -> None:
        """No more jobs: the starter exits once the jobs it runs have ended."""
        with self._lock, contextlib.suppress(OSError, ValueError):
            assert self._process.stdin is not None
            self._process.stdin.close()

    def _read(self) -> None:
        assert self._process.stdout is not None
        for raw in self._process.stdout:
            message = json.loads(raw)
            with self._lock:
                if "exit" in message:
                    pid, code = int(message["exit"]), int(message["code"])
                    job = self._jobs.pop(pid, None)
                    if job is None:
                        self._exited[pid] = code
                    else:
                        job._end(code)
                    continue
                answered, answer = self._forked.pop(int(message["job"]), (None, None))
                if answered is None or answer is None:
                    continue
                if "pid" in message:
                    job = StartedJob(int(message["pid"]))
                    if job.pid in self._exited:
                        job._end(self._exited.pop(job.pid))
                    else:
                        self._jobs[job.pid] = job
                    answer.append(job)
                else:
                    answer.append(str(message.get("error", "unknown error")))
                answered.set()
        self._process.stdout.close()
        self._process.wait()
        with self._lock:
            self._gone = True
            with contextlib.suppress(OSError, ValueError):
                assert self._process.stdin is not None
                self._process.stdin.close()
            # Its jobs' processes die with it (PR_SET_PDEATHSIG): they ended without a status.
            code = -signal.SIGKILL
            for job in self._jobs.values():
                job._end(code)
            self._jobs.clear()
            for answered, _answer in self._forked.values():
                answered.set()
            self._forked.clear()


# What the starter's imports may read from the environment: the service's settings, Python's,
# the numeric libraries' thread pools, the metrics' directory, the loader's paths. A job's
# process gets the whole environment of its submission anyway (``env`` of each job).
IMPORT_VARIABLES = ("CROWDQRELS_", "PYTHON", "PROMETHEUS_", "prometheus_", "TF_", "OMP_",
                    "OPENBLAS_", "MKL_", "NUMEXPR_", "LD_", "PATH", "HOME", "TMPDIR")


def import_environment(env: dict[str, str]) -> dict[str, str]:
    """The part of an environment that the starter's imports may have read."""
    return {k: v for k, v in env.items()
            if k.startswith(IMPORT_VARIABLES) and k != "CROWDQRELS_DATABASE_URL"}


_starters_lock = threading.Lock()
_starters: dict[bool, Starter] = {}  # by whether it has imported TensorFlow


def starter_for(env: dict[str, str], *, tensorflow: bool = False) -> Starter:
    """The process's starter for this environment: one is shared by every runner while what its
    imports may have read stays the same (``import_environment``); a new one replaces it when
    that changes (the old one ends once its jobs have).

    With ``tensorflow``, the starter of the jobs that fit a GP: it has imported TensorFlow and
    GPflow as well (about 6 CPU seconds and 0.7 GiB, paid once instead of in every GP job's
    process). It is started by the first GP job, so a service that fits no GP never holds it."""
    with _starters_lock:
        current = _starters.get(tensorflow)
        if (current is not None and current.alive
                and import_environment(current.env) == import_environment(env)):
            return current
        if current is not None:
            current.close()
        _starters[tensorflow] = Starter(env, tensorflow=tensorflow)
        return _starters[tensorflow]


@atexit.register
def _close_starter() -> None:
    with _starters_lock:
        for starter in _starters.values():
            starter.close()


# -- the starter process ------------------------------------------------------------------------


def _die_with_parent(parent: int) -> None:
    """Ask Linux to kill this process when its parent (the starter) dies."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the starter died before the request took effect
        os._exit(1)


def _run_forked(command: dict[str, Any], parent: int, fds: tuple[int, ...]) -> None:
    """In the fork: become the job's process, run the job, exit."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        for signum in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_DFL)
        _die_with_parent(parent)
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.dup2(2, 1)  # the starter's standard output is its answers to the API, not the job's
        sys.stdin = open(os.devnull)  # noqa: SIM115 - the process's stdin, closed at exit
        os.environ.clear()  # the job's process sees the environment of its submission
        os.environ.update({str(k): str(v) for k, v in command.get("env", {}).items()})
        if "numpy" in sys.modules:  # a fork shares the starter's generator state; reseed it
            sys.modules["numpy"].random.seed()
        from app.jobs.child import run_job

        run_job(str(command["kind"]), int(command["id"]))
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    except BaseException:  # noqa: BLE001 - the job's process reports and exits, as a child would
        import traceback

        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


class _Serve:
    """The starter's loop: commands on standard input, a fork each, exits reported."""

    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        self.children: set[int] = set()
        self.wake_r, self.wake_w = os.pipe()
        for fd in (self.wake_r, self.wake_w):
            os.set_blocking(fd, False)

    def send(self, message: dict[str, Any]) -> None:
        self.out.write((json.dumps(message) + "\n").encode())
        self.out.flush()

    def reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                self.children.clear()
                return
            if pid == 0:
                return
            self.children.discard(pid)
            self.send({"exit": pid, "code": os.waitstatus_to_exitcode(status)})

    def fork(self, command: dict[str, Any]) -> None:
        try:
            pid = os.fork()
        except OSError as error:
            self.send({"job": command.get("job"), "error": str(error)})
            return
        if pid == 0:
            _run_forked(command, os.getppid(), (self.wake_r, self.wake_w, self.out.fileno()))
        self.children.add(pid)
        self.send({"job": command.get("job"), "pid": pid})

    def loop(self) -> None:
        import select

        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        buffer, reading = b"", True
        while reading or self.children:
            ready, _, _ = select.select([0, self.wake_r] if reading else [self.wake_r], [], [],
                                        1.0)
            if self.wake_r in ready:
                with contextlib.suppress(BlockingIOError):
                    while os.read(self.wake_r, 4096):
                        pass
            if 0 in ready:
                chunk = os.read(0, 65536)
                if not chunk:
                    reading = False
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        self.fork(json.loads(line))
            self.reap()


def main() -> int:
    import importlib
    import warnings

    from app.jobs.child import preload

    # Ctrl-C in a terminal is the server's to handle; it ends the starter by closing its input.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    tensorflow = "--tensorflow" in sys.argv[1:]
    if tensorflow:
        from app.jobs.tensorflow_preload import preload_tensorflow

        preload_tensorflow()
    for name in preload(tensorflow=tensorflow):
        importlib.import_module(name)
    # The starter runs no Python thread; native ones (BLAS pools) have fork handlers of their own.
    warnings.filterwarnings("ignore", message=".*fork.*", category=DeprecationWarning)
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # stray prints of an import go to standard error, not into the answers
    _Serve(out).loop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
