"""cohort.launch: run a Python function as a job and get its result back (Hopsworks' pattern).

The function travels by reference, as pickle sends functions: the job imports it from the code
it starts in (the directory `context`, the current one by default, sent as `cohort run` sends
it), so it must be defined at the top level of a module there, or of the script being run (a
script's own `if __name__ == "__main__":` block does not run again on the node). Its arguments
and its result travel by value (pickle). On the node, `cohort._launched` calls it and writes the
result (or the exception, with its traceback) into the job's outputs; the job ends as the
function returns, its GPUs free at once, and the result is read back from the store once the
outputs are stored.
"""

from __future__ import annotations

import os
import pickle
import sys
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Optional, Sequence

from .errors import CohortError, JobFailed, RemoteError

if TYPE_CHECKING:
    from .client import Client

RESULT_PATH = "cohort-launch/result.pickle"  # under the job's outputs
CALL_PATH = ".cohort-launch/call.pickle"      # in its code
SDK_DIR = ".cohort-launch/sdk"                # this package, in its code, on PYTHONPATH
# The name a launched script runs under on the node, so that its `__main__` block does not.
SCRIPT_MODULE = "__cohort_main__"


def launch(fn: Callable[..., Any], args: Sequence[Any] = (),
           kwargs: Optional[Mapping[str, Any]] = None, *, gpus: int = 1,
           cpus: Any = None, memory: Any = None, name: Optional[str] = None,
           team: Optional[str] = None, datasets: Iterable[str] = (),
           env: Optional[Mapping[str, str]] = None, python: Optional[str] = None,
           context: str = ".", timeout: Optional[float] = None,
           client: Optional["Client"] = None) -> Any:
    """Runs `fn(*args, **kwargs)` as a one-task job with `gpus` GPUs and returns what it
    returns. An exception in it is raised here as RemoteError (the original exception, when it
    can be unpickled, as its __cause__); a job that ends otherwise (killed, lost, its function
    never called) raises JobFailed. `python`: the interpreter on the node (default: this one's
    path). `timeout`: seconds to wait for the job and its result."""
    if client is None:
        from .client import Client

        client = Client()
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if not module or "<" in qualname:
        raise CohortError(
            f"launch: {qualname or fn!r} is not defined at the top level of a module or script; "
            "the job imports the function by name, so define it with def at the top level",
            code="invalid_argument")
    root = os.path.abspath(context)
    script = None
    if module == "__main__":
        path = getattr(sys.modules["__main__"], "__file__", None)
        if not path:
            raise CohortError("launch: the function was defined interactively; put it in a file "
                              "in the directory whose code the job gets", code="invalid_argument")
        path = os.path.abspath(path)
        if not path.startswith(root + os.sep):
            raise CohortError(f"launch: {path} is not inside {root}, the code the job gets; "
                              "run it from its directory or pass context=", code="invalid_argument")
        script = os.path.relpath(path, root)
    call = pickle.dumps((fn, tuple(args), dict(kwargs or {})), protocol=4)
    envelope = pickle.dumps({"module": module, "script": script, "call": call}, protocol=4)
    extra = {CALL_PATH: envelope}
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sorted(os.listdir(here)):
        if entry.endswith(".py"):
            with open(os.path.join(here, entry), "rb") as f:
                extra[f"{SDK_DIR}/cohort/{entry}"] = f.read()
    sent = client.send_code(root, extra)
    resources = {"gpus": gpus}
    if cpus is not None:
        resources["cpus"] = cpus
    if memory is not None:
        resources["memory"] = memory
    spec = {
        "name": name or _name_of(fn),
        "tasks": [{"role": "main", "resources": resources,
                   "command": [python or sys.executable, "-m", "cohort._launched", CALL_PATH],
                   "env": {**dict(env or {}), "PYTHONPATH": SDK_DIR}}],
        "context": sent["context"],
        "restart": {"max_attempts": 1},
    }
    if team:
        spec["team"] = team
    if datasets:
        spec["datasets"] = list(datasets)
    job = client.submit(spec)
    job.wait(timeout)
    if job.state == "KILLED":
        raise JobFailed(job.id, job.state, job.message)
    try:
        job.wait_for_outputs(timeout)
        data = job.read_artifact(RESULT_PATH)
    except CohortError as e:
        raise JobFailed(job.id, job.state,
                        f"{job.message}; its result could not be read ({e.message}); see "
                        f"`cohort logs {job.id}`") from None
    sys.modules.setdefault(SCRIPT_MODULE, sys.modules["__main__"])
    outcome = pickle.loads(data)
    if outcome["ok"]:
        return outcome["value"]
    error = RemoteError(job.id, outcome["type"], outcome["traceback"])
    original = None
    if outcome.get("exception"):
        try:
            original = pickle.loads(outcome["exception"])
        except Exception:  # noqa: BLE001: a type this side cannot import
            original = None
    raise error from original


def _name_of(fn: Callable[..., Any]) -> str:
    name = "launch-" + "".join(c if c.isalnum() or c in "._-" else "-"
                               for c in getattr(fn, "__name__", "fn"))
    return name[:128]
