"""A job's code as `cohort run` sends it (docs/data.md, "Code"): the files of a directory that its
`.cohortignore` keeps, in the rules of `.gitignore` as data/ignore_rules.h reads them (without
one: `.git/`, `__pycache__/` and `*.pyc` stay behind), cut into 8 MiB chunks by SHA-256; the
chunks the store lacks are sent, then the manifest is committed (POST /api/v1/contexts)."""

from __future__ import annotations

import fnmatch
import hashlib
import os
import stat
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

from .errors import CohortError

if TYPE_CHECKING:
    from ._http import Transport

IGNORE_FILE = ".cohortignore"
DEFAULT_IGNORE = ".git/\n__pycache__/\n*.pyc\n"
CHUNK_BYTES = 8 << 20
MAX_BYTES = 100 << 20
MAX_FILES = 20_000
_MAX_PATTERN_BYTES = 4096
_MAX_RULES = 10_000
_MAX_GLOBSTARS = 4
_MISSING_BATCH = 1000


@dataclass
class _Rule:
    pattern: List[str]
    negated: bool = False
    directory_only: bool = False
    anchored: bool = False


class IgnoreRules:
    """A .cohortignore: the same rules as data/ignore_rules.h (the CLI's)."""

    def __init__(self, text: str) -> None:
        self._rules: List[_Rule] = []
        for number, line in enumerate(text.split("\n"), start=1):
            if line.endswith("\r"):
                line = line[:-1]
            while line.endswith(" ") and not line.endswith("\\ "):
                line = line[:-1]
            if not line or line.startswith("#"):
                continue
            if len(line.encode()) > _MAX_PATTERN_BYTES:
                raise CohortError(f".cohortignore line {number}: a pattern of "
                                  f"{len(line.encode())} bytes is longer than "
                                  f"{_MAX_PATTERN_BYTES}", code="invalid_argument")
            if len(self._rules) == _MAX_RULES:
                raise CohortError(f".cohortignore: more than {_MAX_RULES} patterns",
                                  code="invalid_argument")
            rule = _Rule([])
            if line.startswith("!"):
                rule.negated = True
                line = line[1:]
            elif line.startswith("\\#") or line.startswith("\\!"):
                line = line[1:]
            if line.endswith("/"):
                rule.directory_only = True
                line = line[:-1]
            if not line:
                continue
            rule.anchored = "/" in line
            if line.startswith("/"):
                line = line[1:]
            if not line:
                continue
            rule.pattern = line.split("/")
            if rule.pattern.count("**") > _MAX_GLOBSTARS:
                raise CohortError(f'.cohortignore line {number}: more than {_MAX_GLOBSTARS} "**" '
                                  "in one pattern", code="invalid_argument")
            self._rules.append(rule)

    def ignored(self, path: str, directory: bool) -> bool:
        name = path.rsplit("/", 1)[-1]
        result = False
        for rule in self._rules:
            if rule.directory_only and not directory:
                continue
            target = path if rule.anchored else name
            if _match(rule.pattern, 0, target.split("/"), 0):
                result = not rule.negated
        return result


def _match(pattern: List[str], i: int, path: List[str], j: int) -> bool:
    if i == len(pattern):
        return j == len(path)
    if pattern[i] == "**":
        return any(_match(pattern, i + 1, path, k) for k in range(j, len(path) + 1))
    if j == len(path):
        return False
    return fnmatch.fnmatchcase(path[j], pattern[i]) and _match(pattern, i + 1, path, j + 1)


@dataclass
class CodeFile:
    path: str            # '/'-separated, relative to the directory
    size: int
    sha256: str
    chunks: List[Tuple[str, int]]
    executable: bool
    source: Optional[str] = None   # the file on disk, or None for `data`
    data: Optional[bytes] = None   # a file the SDK adds (cohort.launch's call)


@dataclass
class Code:
    root: str
    files: List[CodeFile] = field(default_factory=list)

    @property
    def bytes(self) -> int:
        return sum(f.size for f in self.files)

    def add(self, path: str, data: bytes, executable: bool = False) -> None:
        """A file that is not in the directory (it replaces one of the same path)."""
        self.files = [f for f in self.files if f.path != path]
        chunks = [(hashlib.sha256(data[i:i + CHUNK_BYTES]).hexdigest(),
                   len(data[i:i + CHUNK_BYTES])) for i in range(0, len(data), CHUNK_BYTES)]
        self.files.append(CodeFile(path, len(data), hashlib.sha256(data).hexdigest(), chunks,
                                   executable, data=data))

    def manifest(self) -> Dict[str, object]:
        return {"files": [{"path": f.path, "size": f.size, "sha256": f.sha256,
                           "chunks": [{"sha256": h, "size": n} for h, n in f.chunks],
                           **({"executable": True} if f.executable else {})}
                          for f in self.files]}


def scan(root: str) -> Code:
    """The code under `root`, hashed; CohortError over 100 MiB or 20,000 files, naming the
    largest entries at the top and what to do."""
    root = os.path.abspath(root)
    try:
        with open(os.path.join(root, IGNORE_FILE), encoding="utf-8") as f:
            text = f.read((1 << 20) + 1)
        if len(text.encode()) > 1 << 20:
            raise CohortError(f"{root}/{IGNORE_FILE}: more than 1Mi; a .cohortignore is a list "
                              "of patterns", code="invalid_argument")
    except FileNotFoundError:
        text = DEFAULT_IGNORE
    rules = IgnoreRules(text)
    code = Code(root)
    sizes: Dict[str, int] = {}  # by top-level entry, for the error
    count = 0
    total = 0
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        with os.scandir(os.path.join(root, rel_dir)) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    if not rules.ignored(rel, True):
                        stack.append(rel)
                    continue
                if not stat.S_ISREG(st.st_mode) or rules.ignored(rel, False):
                    continue  # links and special files are left out, as the CLI does
                count += 1
                total += st.st_size
                top = rel.split("/", 1)[0]
                sizes[top] = sizes.get(top, 0) + st.st_size
                code.files.append(CodeFile(rel, st.st_size, "", [], bool(st.st_mode & 0o111),
                                           source=entry.path))
    if total > MAX_BYTES or count > MAX_FILES:
        largest = sorted(sizes.items(), key=lambda kv: -kv[1])[:3]
        raise CohortError(
            f"the code in {root} is {count} files of {total} bytes, over the limit of "
            f"{MAX_FILES} files and {MAX_BYTES} bytes; the largest: "
            + ", ".join(f"{name} ({size} bytes)" for name, size in largest)
            + "; leave data out with a .cohortignore, send another directory (context=), or "
            "put the data in a dataset (cohort data put)", code="resource_exhausted")
    for f in code.files:
        _hash(f)
    return code


def _hash(f: CodeFile) -> None:
    whole = hashlib.sha256()
    with open(f.source, "rb") as data:  # type: ignore[arg-type]
        while True:
            chunk = data.read(CHUNK_BYTES)
            if not chunk:
                break
            whole.update(chunk)
            f.chunks.append((hashlib.sha256(chunk).hexdigest(), len(chunk)))
    f.sha256 = whole.hexdigest()
    f.size = sum(n for _, n in f.chunks)


def send(http: "Transport", code: Code) -> Dict[str, object]:
    """Sends the chunks the store lacks and commits the manifest: the master's answer,
    `{"context": SHA256, "file_count", "bytes"}`."""
    where: Dict[str, Tuple[CodeFile, int]] = {}
    for f in code.files:
        for index, (sha, _) in enumerate(f.chunks):
            where.setdefault(sha, (f, index))
    hashes = list(where)
    for first in range(0, len(hashes), _MISSING_BATCH):
        missing = http.call("POST", "/blobs/missing",
                            body={"sha256": hashes[first:first + _MISSING_BATCH]})["missing"]
        for sha in missing:
            f, index = where[sha]
            http.call("PUT", f"/blobs/{sha}", body=_chunk(f, index))
    return http.call("POST", "/contexts", body=code.manifest())


def _chunk(f: CodeFile, index: int) -> bytes:
    if f.data is not None:
        return f.data[index * CHUNK_BYTES:(index + 1) * CHUNK_BYTES]
    with open(f.source, "rb") as data:  # type: ignore[arg-type]
        data.seek(index * CHUNK_BYTES)
        return data.read(CHUNK_BYTES)
