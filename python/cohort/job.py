"""A job as the SDK holds it: its last known record, and what can be asked of it."""

from __future__ import annotations

import os
import time
import urllib.parse
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Union

from .errors import CohortError, JobFailed

if TYPE_CHECKING:
    from .client import Client

TERMINAL_STATES = ("SUCCEEDED", "FAILED", "KILLED")
# The most one artifact read returns; larger files come in ranges of it.
_RANGE = 8 << 20


class Job:
    """One job. ``record`` is the master's JSON of it (docs/api.md, "Jobs") as last read;
    ``refresh()`` reads it again, ``wait()`` until it ends."""

    def __init__(self, client: "Client", record: Dict[str, Any]) -> None:
        self._client = client
        self.record = record

    def __repr__(self) -> str:
        return f"<cohort.Job {self.id} {self.name!r} {self.state}>"

    @property
    def id(self) -> int:
        return int(self.record["id"])

    @property
    def name(self) -> str:
        return str(self.record.get("spec", {}).get("name", ""))

    @property
    def state(self) -> str:
        return str(self.record["state"])

    @property
    def message(self) -> str:
        return str(self.record.get("message") or "")

    @property
    def done(self) -> bool:
        return self.state in TERMINAL_STATES

    def refresh(self) -> "Job":
        self.record = self._client._http.call("GET", f"/jobs/{self.id}")
        return self

    def wait(self, timeout: Optional[float] = None, *, check: bool = False) -> "Job":
        """Waits until the job ends (or `timeout` seconds pass: CohortError with code
        ``deadline_exceeded``), following its changes as the master announces them. With
        `check`, a job that did not succeed raises JobFailed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.done:
            left = 60.0 if deadline is None else deadline - time.monotonic()
            if left <= 0:
                raise CohortError(f"job {self.id} is still {self.state} after {timeout} s",
                                  code="deadline_exceeded")
            wait_ms = int(max(1, min(left, 60.0)) * 1000)
            self.record = self._client._http.call(
                "GET", f"/jobs/{self.id}",
                query={"wait_version": self.record.get("version", 0), "timeout_ms": wait_ms},
                timeout=wait_ms / 1000 + 30)
        if check and self.state != "SUCCEEDED":
            raise JobFailed(self.id, self.state, self.message)
        return self

    def kill(self) -> "Job":
        self.record = self._client._http.call("POST", f"/jobs/{self.id}/kill")
        return self

    def events(self) -> List[Dict[str, Any]]:
        """Every event of the job, oldest first (read a page at a time)."""
        out: List[Dict[str, Any]] = []
        after: Optional[int] = 0
        while after is not None:
            page = self._client._http.call("GET", f"/jobs/{self.id}/events",
                                           query={"after": after})
            out.extend(page["events"])
            after = page.get("next")
        return out

    def logs(self, *, task: Optional[str] = None, attempt: Optional[int] = None,
             follow: bool = False) -> Union[str, Iterator[str]]:
        """The job's output, each line prefixed with its task when it has several. With
        `follow`, an iterator of lines as they come, ending once the job has ended and its output
        is all out; otherwise the output so far, as one string."""
        query = {"task": task, "attempt": attempt, "follow": follow}
        lines = self._client._http.lines(f"/jobs/{self.id}/logs", query=query,
                                         timeout=None if follow else 60)
        return lines if follow else "".join(lines)

    def metrics(self, tag: Optional[str] = None, *, task: Optional[str] = None,
                max_points: Optional[int] = None) -> Dict[str, Any]:
        """Without `tag`, the job's series; with it, that tag's chart, one line per task
        (docs/api.md, "Metrics")."""
        return self._client._http.call(
            "GET", f"/jobs/{self.id}/metrics",
            query={"tag": tag, "task": task, "max_points": max_points})

    def points(self, tag: str, *, task: Optional[str] = None) -> List[tuple]:
        """`(step, value)` of one task's tag (the job's first task's unless `task`), oldest first."""
        chart = self.metrics(tag, task=task)
        if not chart.get("lines"):
            return []
        line = chart["lines"][0]
        step, value = chart["columns"].index("step"), chart["columns"].index("value")
        return [(row[step], row[value]) for row in line["rows"]]

    def artifacts(self) -> List[Dict[str, Any]]:
        """The files the job left in $COHORT_OUTPUT_DIR, as stored so far: `{"path", "size"}`."""
        files: List[Dict[str, Any]] = []
        after: Optional[str] = None
        while True:
            page = self._client._http.call("GET", f"/jobs/{self.id}/artifacts",
                                           query={"after": after})
            files.extend(page["files"])
            if not page.get("more") or not page["files"]:
                return files
            after = page["files"][-1]["path"]

    def upload_state(self) -> Optional[str]:
        """Where the upload of its outputs stands: None before its agent reports it, then
        "waiting", "uploading", "stored" or "failed"."""
        artifacts = self.refresh().record.get("artifacts")
        return artifacts.get("state") if artifacts else None

    # A job that wrote no outputs has no upload at all: once it has ended, its agent reports one
    # within a few seconds if there is one.
    NO_OUTPUTS_AFTER = 30.0

    def wait_for_outputs(self, timeout: Optional[float] = None) -> "Job":
        """Waits until the job has ended and its outputs are stored (CohortError if their
        upload failed, if the job left none, or at `timeout`)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        self.wait(timeout)
        ended = time.monotonic()
        while True:
            state = self.upload_state()
            if state == "stored":
                return self
            if state is None and time.monotonic() - ended > self.NO_OUTPUTS_AFTER:
                raise CohortError(f"job {self.id} left no outputs", code="not_found")
            if state == "failed":
                raise CohortError(f"job {self.id}: its outputs could not be stored: "
                                  f"{self.record['artifacts'].get('message', '')}")
            if deadline is not None and time.monotonic() >= deadline:
                raise CohortError(f"job {self.id}: its outputs are still {state} after "
                                  f"{timeout} s", code="deadline_exceeded")
            time.sleep(0.2)

    def read_artifact(self, path: str) -> bytes:
        """One output's bytes, read 8 MiB at a time."""
        quoted = urllib.parse.quote(path)
        data = bytearray()
        while True:
            first = len(data)
            with self._client._http.open(
                    "GET", f"/jobs/{self.id}/artifacts/{quoted}",
                    headers={"Range": f"bytes={first}-{first + _RANGE - 1}"}) as response:
                chunk = response.read()
                total = _total_of(response.headers.get("Content-Range"), first + len(chunk))
            data += chunk
            if len(data) >= total or not chunk:
                return bytes(data)

    def download(self, path: str, dest: str) -> str:
        """Writes one output to `dest` (a file, or a directory to put it in); returns its path."""
        if os.path.isdir(dest):
            dest = os.path.join(dest, os.path.basename(path))
        with open(dest, "wb") as f:
            f.write(self.read_artifact(path))
        return dest


def _total_of(content_range: Optional[str], otherwise: int) -> int:
    """SIZE of "bytes FIRST-LAST/SIZE"."""
    if content_range and "/" in content_range:
        try:
            return int(content_range.rsplit("/", 1)[1])
        except ValueError:
            pass
    return otherwise
