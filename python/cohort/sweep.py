"""A hyperparameter sweep (docs/sweeps.md) as the SDK holds it."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from .errors import CohortError

if TYPE_CHECKING:
    from .client import Client
    from .job import Job

SWEEP_END_STATES = ("COMPLETED", "KILLED")


class Sweep:
    """One sweep; ``record`` is the master's JSON of it, its leaderboard included."""

    def __init__(self, client: "Client", record: Dict[str, Any]) -> None:
        self._client = client
        self.record = record

    def __repr__(self) -> str:
        return f"<cohort.Sweep {self.id} {self.record.get('name')!r} {self.state}>"

    @property
    def id(self) -> int:
        return int(self.record["id"])

    @property
    def state(self) -> str:
        return str(self.record["state"])

    @property
    def trials(self) -> List[Dict[str, Any]]:
        """The leaderboard: best first by the searcher's metric."""
        return list(self.record.get("trials", []))

    @property
    def best(self) -> Optional[Dict[str, Any]]:
        best = self.record.get("best_trial")
        return next((t for t in self.trials if t["id"] == best), None)

    def refresh(self) -> "Sweep":
        self.record = self._client._http.call("GET", f"/sweeps/{self.id}")
        return self

    def wait(self, timeout: Optional[float] = None, poll: float = 1.0) -> "Sweep":
        """Waits until the sweep ends (COMPLETED or KILLED)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.refresh().state not in SWEEP_END_STATES:
            if deadline is not None and time.monotonic() >= deadline:
                raise CohortError(f"sweep {self.id} is still {self.state} after {timeout} s",
                                  code="deadline_exceeded")
            time.sleep(poll)
        return self

    def trial_job(self, trial_id: int) -> "Job":
        trial = next(t for t in self.trials if t["id"] == trial_id)
        return self._client.job(trial["job_id"])

    def _act(self, action: str) -> "Sweep":
        self.record = self._client._http.call("POST", f"/sweeps/{self.id}/{action}")
        return self

    def kill(self) -> "Sweep":
        return self._act("kill")

    def pause(self) -> "Sweep":
        return self._act("pause")

    def resume(self) -> "Sweep":
        return self._act("resume")
