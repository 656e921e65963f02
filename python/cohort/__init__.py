"""Cohort's Python SDK: submit and watch jobs and sweeps, read their logs, metrics and outputs,
and run a Python function on a GPU as a job (``cohort.launch``). Standard library only;
docs/python.md.

    import cohort
    job = cohort.run(["python3", "train.py"], gpus=1)   # the current directory's code travels
    job.wait()
    print(job.state, job.logs())

The module-level functions use a client that finds the master and token as the `cohort` CLI
does; ``cohort.Client(master, token)`` names them.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Optional, Sequence

from .client import Client
from .errors import CohortError, JobFailed, RemoteError
from .job import TERMINAL_STATES, Job
from .sweep import Sweep

__all__ = ["Client", "CohortError", "Job", "JobFailed", "RemoteError", "Sweep",
           "TERMINAL_STATES", "connect", "job", "launch", "run", "submit", "sweep"]

_default: Optional[Client] = None


def connect(master: Optional[str] = None, token: Optional[str] = None, *,
            ca_file: Optional[str] = None) -> Client:
    """A client, made the default of the module-level functions."""
    global _default
    _default = Client(master, token, ca_file=ca_file)
    return _default


def _client() -> Client:
    return _default or connect()


def submit(spec: Any, **options: Any) -> Job:
    """Client.submit on the default client."""
    return _client().submit(spec, **options)


def run(command: Any, **options: Any) -> Job:
    """Client.run on the default client."""
    return _client().run(command, **options)


def job(job_id: int) -> Job:
    return _client().job(job_id)


def sweep(spec: Any, **options: Any) -> Sweep:
    return _client().sweep(spec, **options)


def launch(fn: Callable[..., Any], args: Sequence[Any] = (),
           kwargs: Optional[Mapping[str, Any]] = None, **options: Any) -> Any:
    """Runs ``fn(*args, **kwargs)`` as a job on the default client and returns its result
    (cohort._launch.launch has the options: gpus, cpus, memory, datasets, env, python,
    context, timeout)."""
    return _client().launch(fn, args, kwargs, **options)
