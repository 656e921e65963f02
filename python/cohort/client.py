"""The client: one master, one token; jobs, sweeps, code."""

from __future__ import annotations

import json
import os
import uuid
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from . import code as code_module
from . import config
from ._http import Transport
from .errors import CohortError
from .job import Job
from .sweep import Sweep

Spec = Union[str, Mapping[str, Any]]
# Where code comes from: a directory, or False for none (tasks start in an empty directory).
Context = Union[None, str, bool]


class Client:
    """A connection to one master. Without arguments it finds the master and token as the
    `cohort` CLI does: $COHORT_MASTER (else http://127.0.0.1:7420), $COHORT_TOKEN (else the
    token `cohort login` or `cohort up` saved for that master), $COHORT_CA_FILE for https."""

    def __init__(self, master: Optional[str] = None, token: Optional[str] = None, *,
                 ca_file: Optional[str] = None, timeout: float = 60.0) -> None:
        url = config.master_url(master)
        self._http = Transport(url, config.token_for(url, token), config.ca_file(ca_file),
                               timeout)

    @property
    def master(self) -> str:
        return self._http.master

    def whoami(self) -> Dict[str, Any]:
        return self._http.call("GET", "/whoami")

    # --- Jobs ---

    def submit(self, spec: Spec, *, context: Context = None,
               request_id: Optional[str] = None) -> Job:
        """Submits a job spec (a mapping, or YAML or JSON text; docs/job-spec.md). `context`: a
        directory whose code every task whose group names no workdir starts in (as `cohort
        submit` sends the current one); None sends none unless the spec already names one.
        Retried with the same idempotency key if the master does not answer."""
        body: Union[str, Dict[str, Any]]
        if isinstance(spec, str):
            body = spec
            if context:
                try:
                    body = json.loads(spec)
                except ValueError:
                    raise CohortError("submit: with context=, give the spec as a mapping or JSON "
                                      "text", code="invalid_argument") from None
        else:
            body = dict(spec)
        if context and isinstance(body, dict):
            body["context"] = self.send_code(context)["context"]
        key = request_id or uuid.uuid4().hex
        return Job(self, self._http.call("POST", "/jobs", body=body,
                                         headers={"Idempotency-Key": key}))

    def run(self, command: Union[str, Sequence[str]], *, gpus: int = 0, replicas: int = 1,
            cpus: Union[None, int, float, str] = None, memory: Union[None, int, str] = None,
            name: Optional[str] = None, team: Optional[str] = None,
            framework: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
            datasets: Iterable[str] = (), context: Context = ".", wait: bool = False,
            array: Optional[str] = None, depends_on: Iterable[Any] = ()) -> Job:
        """Runs a command as a job, as `cohort run` does: the current directory's code travels
        with it (context=False sends none). A string command runs under `sh -c`. With `wait`,
        returns once the job has ended. `array`: "0-99%10" runs it once per index, at most 10 at
        once (the first job of the array is returned; client.array() lists them); `depends_on`:
        job ids, or {"job": ID, "on": "success"|"failure"|"end"}."""
        argv = ["sh", "-c", command] if isinstance(command, str) else list(command)
        if not argv:
            raise CohortError("run: the command is empty", code="invalid_argument")
        resources: Dict[str, Any] = {"gpus": gpus}
        if cpus is not None:
            resources["cpus"] = cpus
        if memory is not None:
            resources["memory"] = memory
        group: Dict[str, Any] = {"role": "main", "replicas": replicas, "resources": resources,
                                 "command": argv}
        if env:
            group["env"] = dict(env)
        spec: Dict[str, Any] = {"name": name or _name_of(argv), "tasks": [group]}
        if team:
            spec["team"] = team
        if framework:
            spec["framework"] = framework
        if datasets:
            spec["datasets"] = list(datasets)
        if array:
            indices, _, most = array.partition("%")
            spec["array"] = {"indices": indices, **({"max_parallel": int(most)} if most else {})}
        if depends_on:
            spec["depends_on"] = list(depends_on)
        job = self.submit(spec, context=context)
        return job.wait() if wait else job

    def job(self, job_id: int) -> Job:
        return Job(self, self._http.call("GET", f"/jobs/{int(job_id)}"))

    def array(self, array_id: int) -> List[Job]:
        """The jobs of an array (docs/job-spec.md, "Arrays"), in index order."""
        listed = self._http.call("GET", f"/arrays/{int(array_id)}")
        return [self.job(j["job_id"]) for j in listed["jobs"]]

    def kill_array(self, array_id: int) -> List[int]:
        """Kills every job of the array that has not ended; their ids."""
        return list(self._http.call("POST", f"/arrays/{int(array_id)}/kill")["killed"])

    def jobs(self, *, state: Optional[str] = None, limit: int = 50) -> List[Job]:
        """The most recent jobs the caller may read, newest first."""
        page = self._http.call("GET", "/jobs", query={"state": state, "limit": limit})
        return [Job(self, j) for j in page["jobs"]]

    # --- Sweeps ---

    def sweep(self, spec: Spec, *, context: Context = None) -> Sweep:
        """Submits a sweep spec (docs/sweeps.md); `context` as for submit()."""
        body: Union[str, Dict[str, Any]] = spec if isinstance(spec, str) else dict(spec)
        if context:
            if not isinstance(body, dict):
                raise CohortError("sweep: with context=, give the spec as a mapping",
                                  code="invalid_argument")
            trial = dict(body.get("trial", {}))
            trial["context"] = self.send_code(context)["context"]
            body["trial"] = trial
        return Sweep(self, self._http.call("POST", "/sweeps", body=body))

    def get_sweep(self, sweep_id: int) -> Sweep:
        return Sweep(self, self._http.call("GET", f"/sweeps/{int(sweep_id)}"))

    # --- Code ---

    def send_code(self, directory: Union[str, bool] = ".",
                  extra: Optional[Mapping[str, bytes]] = None) -> Dict[str, Any]:
        """Sends a directory's code (and `extra` files, path -> bytes) to the store as `cohort
        run` does: `{"context": SHA256, "file_count", "bytes"}` for a spec's `context`."""
        root = os.getcwd() if directory is True else str(directory)
        code = code_module.scan(root)
        for path, data in (extra or {}).items():
            code.add(path, data)
        return code_module.send(self._http, code)

    # --- Functions ---

    def launch(self, fn: Any, args: Sequence[Any] = (), kwargs: Optional[Mapping[str, Any]] = None,
               **options: Any) -> Any:
        """Runs `fn(*args, **kwargs)` as a job and returns its result: see cohort.launch."""
        from ._launch import launch

        return launch(fn, args, kwargs, client=self, **options)


def _name_of(argv: Sequence[str]) -> str:
    """A job name from the program, as `cohort run` makes one: its base name, in the name's
    characters."""
    base = os.path.basename(argv[0]) or "run"
    name = "".join(c if c.isalnum() or c in "._-" else "-" for c in base)[:128]
    return name if name[:1].isalnum() else "run-" + name[:124]
