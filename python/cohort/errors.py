"""Errors the SDK raises: the API's own, with its code, message and details."""

from __future__ import annotations

from typing import List, Optional


class CohortError(Exception):
    """An error the master answered (or the SDK found before asking it).

    ``status`` is the HTTP status (0 when the master could not be reached), ``code`` the API's
    error code (``invalid_argument``, ``not_found``, ``permission_denied``, ...; docs/api.md,
    "Errors"), ``details`` one line per problem when there are several.
    """

    def __init__(self, message: str, *, status: int = 0, code: str = "",
                 details: Optional[List[str]] = None) -> None:
        self.message = message
        self.status = status
        self.code = code
        self.details = list(details or [])
        text = message if not self.details else message + "\n  " + "\n  ".join(self.details)
        super().__init__(text)


class JobFailed(CohortError):
    """A job that ended otherwise than SUCCEEDED, where the caller needed it to succeed."""

    def __init__(self, job_id: int, state: str, message: str) -> None:
        super().__init__(f"job {job_id} ended {state}: {message}", code="failed_precondition")
        self.job_id = job_id
        self.state = state


class RemoteError(CohortError):
    """The function ``cohort.launch`` ran raised: its type name and traceback, as the job saw
    them. The exception itself, when it could be unpickled here, is ``__cause__``."""

    def __init__(self, job_id: int, type_name: str, traceback_text: str) -> None:
        super().__init__(f"job {job_id}: the function raised {type_name}:\n{traceback_text}",
                         code="remote_error")
        self.job_id = job_id
        self.type_name = type_name
        self.traceback = traceback_text
