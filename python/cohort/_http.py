"""HTTP to the master: JSON in and out, the API's errors as CohortError, standard library only."""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, Iterator, Mapping, Optional, Union

from .errors import CohortError

Body = Union[None, bytes, str, Mapping[str, Any]]


class Transport:
    """Calls /api/v1 on one master with one token."""

    # Answers that mean "try again shortly" (a busy store worker, artifact reads): retried this
    # many times, waiting Retry-After (or a second) between.
    RETRIES = 5

    def __init__(self, master: str, token: str, ca_file: Optional[str] = None,
                 timeout: float = 60.0) -> None:
        self.master = master.rstrip("/")
        self.token = token
        self.timeout = timeout
        self._context = None
        if self.master.startswith("https://"):
            self._context = ssl.create_default_context(cafile=ca_file)

    def url(self, path: str, query: Optional[Mapping[str, Any]] = None) -> str:
        url = self.master + "/api/v1" + path
        if query:
            pairs = {k: ("true" if v is True else v) for k, v in query.items()
                     if v is not None and v is not False}
            if pairs:
                url += "?" + urllib.parse.urlencode(pairs)
        return url

    def open(self, method: str, path: str, *, query: Optional[Mapping[str, Any]] = None,
             body: Body = None, headers: Optional[Mapping[str, str]] = None,
             timeout: Optional[float] = None):
        """The response, open (the caller reads and closes it); CohortError for an error."""
        data: Optional[bytes] = None
        all_headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        if isinstance(body, (dict, list)):
            data = json.dumps(body).encode()
            all_headers["Content-Type"] = "application/json"
        elif isinstance(body, str):
            data = body.encode()
            all_headers["Content-Type"] = "application/yaml"
        elif isinstance(body, bytes):
            data = body
            all_headers["Content-Type"] = "application/octet-stream"
        all_headers.update(headers or {})
        for attempt in range(self.RETRIES + 1):
            request = urllib.request.Request(self.url(path, query), data=data,
                                             headers=all_headers, method=method)
            try:
                return urllib.request.urlopen(request, timeout=timeout or self.timeout,
                                              context=self._context)
            except urllib.error.HTTPError as e:
                if e.code == 503 and e.headers.get("Retry-After") and attempt < self.RETRIES:
                    time.sleep(_seconds(e.headers.get("Retry-After")))
                    continue
                raise _error_of(e) from None
            except urllib.error.URLError as e:
                raise CohortError(
                    f"cannot reach the master at {self.master}: {e.reason}; is it running? "
                    "(cohort up starts a local one; $COHORT_MASTER names another)") from None
        raise AssertionError("unreachable")

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        """The JSON answer of a call."""
        with self.open(method, path, **kwargs) as response:
            text = response.read()
        return json.loads(text) if text else None

    def lines(self, path: str, *, query: Optional[Mapping[str, Any]] = None,
              timeout: Optional[float] = None) -> Iterator[str]:
        """A text answer, a line at a time, as it streams."""
        with self.open("GET", path, query=query, timeout=timeout) as response:
            for raw in response:
                yield raw.decode("utf-8", errors="replace")


def _seconds(text: Optional[str]) -> float:
    try:
        return max(0.1, min(float(text or 1), 30.0))
    except ValueError:
        return 1.0


def _error_of(e: urllib.error.HTTPError) -> CohortError:
    raw = e.read()
    try:
        error: Dict[str, Any] = json.loads(raw)["error"]
        return CohortError(error.get("message", ""), status=e.code, code=error.get("code", ""),
                           details=error.get("details"))
    except (ValueError, KeyError, TypeError):
        text = raw.decode("utf-8", errors="replace").strip()
        return CohortError(f"HTTP {e.code}: {text or e.reason}", status=e.code)
