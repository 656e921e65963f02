"""Where the master is and which token to use, found as the `cohort` CLI finds them."""

from __future__ import annotations

import json
import os
from typing import Optional

DEFAULT_MASTER = "http://127.0.0.1:7420"


def master_url(master: Optional[str] = None) -> str:
    """The argument, else $COHORT_MASTER, else the local default."""
    return (master or os.environ.get("COHORT_MASTER") or DEFAULT_MASTER).rstrip("/")


def credentials_path() -> str:
    """$XDG_CONFIG_HOME/cohort/credentials.json, else ~/.config/cohort/credentials.json: where
    `cohort login` and `cohort up` save tokens, one per master URL."""
    xdg = os.environ.get("XDG_CONFIG_HOME")
    if xdg:
        return os.path.join(xdg, "cohort", "credentials.json")
    return os.path.join(os.path.expanduser("~") or "/tmp", ".config", "cohort",
                        "credentials.json")


def token_for(master: str, token: Optional[str] = None) -> str:
    """The argument, else $COHORT_TOKEN, else the token saved for `master`, else ""."""
    if token:
        return token
    if os.environ.get("COHORT_TOKEN"):
        return os.environ["COHORT_TOKEN"]
    try:
        with open(credentials_path(), encoding="utf-8") as f:
            saved = json.load(f)["masters"][master.rstrip("/")]["token"]
        return saved if isinstance(saved, str) else ""
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def ca_file(path: Optional[str] = None) -> Optional[str]:
    """The argument, else $COHORT_CA_FILE: the CA that signed an https master's certificate."""
    return path or os.environ.get("COHORT_CA_FILE") or None
