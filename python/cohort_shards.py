"""Samples from a directory of tar shards that `cohort data pack` wrote (docs/data.md, "Small
files into shards").

    import cohort_shards
    for sample in cohort_shards.Shards("/data/digits"):   # in key order
        sample["__key__"], sample["jpg"], sample["cls"]   # "train/0001", bytes, bytes

    shards = cohort_shards.Shards(path, shuffle=True, seed=1, buffer=1000)
    shards = shards.split(rank, world_size)               # DDP: each rank its own shards
    for epoch in range(10):
        shards.set_epoch(epoch)                           # another order each epoch
        for sample in shards: ...

A sample is a dict: "__key__" is the path without its extensions, and each of its files is a
field named by its extension ("train/0001.seg.png" is the field "seg.png" of "train/0001"),
its value the file's bytes. Shards are read front to back, one open file at a time, in reads of
about 1 MiB (a member larger than that in one read of its own), and samples are sliced out of
them at the offsets that each shard's member table (shard-000000.idx, its SHA-256 in the index)
gives: no tar header is parsed per sample. Memory: one read's bytes, the sample being made, and
the shuffle buffer.

shuffle=True shuffles the order of the shards (with seed and the epoch), then the samples
through a buffer of `buffer` samples in memory (each new sample takes the place of one drawn
at random, which comes out): a sample comes out at most `buffer` places early, and the buffer
holds that many samples' bytes. All ranks must use the same
seed: the shards are shuffled first and then shared out, so that each epoch gives every rank
other shards and no two ranks the same one.

split(rank, world_size) keeps every world_size-th shard from rank on; for the processes of a
PyTorch DataLoader, pass workers=torch.utils.data.get_worker_info (any callable returning None
or an object with `id` and `num_workers`): each worker then reads every num_workers-th of its
rank's shards. Ranks (and workers) get whole shards, so they may get a shard more or less than
another: with DDP, stop at the smallest count (e.g. len(shards) // world_size samples) or pack
with a shard size that divides evenly.

verify=True checks each shard's SHA-256 and size against the index as it is read; a mismatch is
an error when the shard ends (its samples were already given out), before the next shard. Even
without it, each member table's SHA-256 is checked against the index, and its samples, files and
first and last keys, before the shard is read; the shard's size; that a tar header ends where
each member's data begins; and the first and last members' whole headers (names, sizes,
offsets): so a truncated or swapped shard, or a table that is not the shard's, is an error.
strict=True reads with tarfile instead, parsing every member's header and checking its name,
offset and size against the table (about ten times slower: 30 to 36 us a sample against 2.5 to
3 on bench/data_pack_bench.py's machine); an index of version 1 (no member tables) is read so
too. Errors are ShardError (a ValueError) naming the shard and
the member.

The standard library only: copy this file next to a training script, or put its directory on
PYTHONPATH.
"""

import hashlib
import io
import json
import os
import random
import re
import tarfile

__all__ = ["Shards", "ShardError", "split_name", "FORMAT", "VERSION", "VERSIONS"]

FORMAT = "cohort-shards"
VERSION = 2  # what `cohort data pack` writes: version 1 and a member table per shard
VERSIONS = (1, 2)  # what this reader reads
TABLE_FORMAT = "cohort-shard-members"
TABLE_VERSION = 1
INDEX = "index.json"
MAX_INDEX_BYTES = 256 << 20
_SHARD_NAME = re.compile(r"shard-[0-9]{6,}\.tar")
# tarfile's stream copies what is left of its buffer at every read of a header or a member, so a
# larger buffer costs more than it saves: 64 KiB read about 35,000 4 KiB samples a second, 1 MiB
# 13,000 (bench/data_pack_bench.py's machine).
_TAR_READ_BYTES = 1 << 16
# Reads of a shard through its member table: 256 KiB to 1 MiB read 4 KiB samples fastest from
# memory (the slices are copied while the read is in the CPU's cache; 4 MiB read 20% fewer), and
# 1 MiB is a large read for a disk.
_CHUNK_BYTES = 1 << 20
_BLOCK = 512
_END_BYTES = 2 * _BLOCK  # a tar archive's end: two zero blocks
_MAGIC = b"ustar\x00"  # at byte 257 of a ustar or pax header


class ShardError(ValueError):
    """A packed directory or shard that is not what its index says."""


def split_name(name):
    """("train/0001", "seg.png") for "train/0001.seg.png": the sample's key and the field, as
    `cohort data pack` splits them (WebDataset's rule: the key ends at the first "." of the last
    path segment). ShardError when there is no field."""
    base = name.rfind("/") + 1
    dot = name.find(".", base + 1)
    if name[base:base + 1] in ("", ".") or dot < 0 or dot == len(name) - 1:
        raise ShardError(f"{name!r}: no extension to name its field")
    return name[:dot], name[dot + 1:]


def _load_index(path):
    index_path = os.path.join(path, INDEX)
    try:
        with open(index_path, "rb") as f:
            text = f.read(MAX_INDEX_BYTES + 1)
    except FileNotFoundError:
        raise ShardError(f"{path}: no {INDEX}; not a packed directory (or its packing did not "
                         "finish)") from None
    if len(text) > MAX_INDEX_BYTES:
        raise ShardError(f"{index_path}: larger than {MAX_INDEX_BYTES} bytes")
    try:
        index = json.loads(text)
    except ValueError as e:
        raise ShardError(f"{index_path}: not JSON: {e}") from None
    if not isinstance(index, dict) or index.get("format") != FORMAT:
        raise ShardError(f"{index_path}: not a {FORMAT} index")
    if index.get("version") not in VERSIONS:
        raise ShardError(f"{index_path}: version {index.get('version')!r}; this reader reads "
                         f"versions {', '.join(map(str, VERSIONS))} (a newer cohort_shards.py "
                         "reads newer ones)")
    shards = index.get("shards")
    if not isinstance(shards, list) or not shards:
        raise ShardError(f"{index_path}: no shards")
    for i, s in enumerate(shards):
        ok = (isinstance(s, dict) and isinstance(s.get("name"), str)
              and _SHARD_NAME.fullmatch(s["name"])
              and all(isinstance(s.get(k), int) and s[k] >= 0
                      for k in ("bytes", "samples", "files"))
              and all(isinstance(s.get(k), str) for k in ("sha256", "first_key", "last_key")))
        if not ok:
            raise ShardError(f"{index_path}: shard {i} is not a shard's entry")
        if index["version"] >= 2:
            t = s.get("members")
            ok = (isinstance(t, dict) and t.get("name") == s["name"][:-len(".tar")] + ".idx"
                  and isinstance(t.get("bytes"), int) and t["bytes"] >= 0
                  and isinstance(t.get("sha256"), str))
            if not ok:
                raise ShardError(f"{index_path}: shard {i} ({s['name']}) has no member table "
                                 "entry (members: name, bytes, sha256)")
    return index


def _round_up(n):
    return (n + _BLOCK - 1) // _BLOCK * _BLOCK


class _Table:
    """A shard's member table, checked against the index and in itself: each member's key,
    field, data offset and size, in the shard's order."""

    def __init__(self, path, entry):
        t = entry["members"]
        where = os.path.join(path, t["name"])
        try:
            with open(where, "rb") as f:
                text = f.read(t["bytes"] + 1)
        except FileNotFoundError:
            raise ShardError(f"{where}: missing; the index names it as "
                             f"{entry['name']}'s member table") from None
        digest = hashlib.sha256(text).hexdigest()
        if len(text) != t["bytes"] or digest != t["sha256"]:
            raise ShardError(f"{where}: {len(text)} bytes of SHA-256 {digest}; the index says "
                             f"{t['bytes']} of {t['sha256']}")
        try:
            table = json.loads(text)
        except ValueError as e:
            raise ShardError(f"{where}: not JSON: {e}") from None
        n = entry["files"]
        ok = (isinstance(table, dict) and table.get("format") == TABLE_FORMAT
              and table.get("version") == TABLE_VERSION and table.get("shard") == entry["name"]
              and all(isinstance(table.get(k), list) and len(table[k]) == n
                      for k in ("names", "offsets", "sizes")))
        if not ok:
            raise ShardError(f"{where}: not a version {TABLE_VERSION} member table of "
                             f"{entry['name']} with {n} members")
        self.names, self.offsets, self.sizes = table["names"], table["offsets"], table["sizes"]
        keys, fields = self.keys, self.fields = [], []
        shard = os.path.join(path, entry["name"])
        end = samples = 0
        last = last_field = None
        # One pass, split_name inlined: this is a third of a sample's cost.
        try:
            for name, offset, size in zip(self.names, self.offsets, self.sizes):
                base = name.rfind("/") + 1
                dot = name.find(".", base + 1)
                if dot < 0 or dot == len(name) - 1 or name[base:base + 1] in ("", "."):
                    try:
                        split_name(name)
                    except ShardError as e:
                        raise ShardError(f"{shard}: member {e}") from None
                key, field = name[:dot], name[dot + 1:]
                if size < 0 or offset & (_BLOCK - 1) or offset < _round_up(end) + _BLOCK:
                    raise ShardError(f"{where}: member {name!r}: offset {offset!r} and size "
                                     f"{size!r} do not leave a header after the previous member")
                end = offset + size
                if key != last:
                    if last is not None and key < last:
                        raise ShardError(f"{shard}: member {name!r} is out of key order")
                    last = key
                    samples += 1
                elif field <= last_field:  # a sample's fields are in order: none twice
                    raise ShardError(f"{shard}: member {name!r} is in the shard twice or out "
                                     "of field order")
                last_field = field
                keys.append(key)
                fields.append(field)
        except (TypeError, AttributeError):
            raise ShardError(f"{where}: a name that is not a string, or an offset or size that "
                             "is not an integer") from None
        if _round_up(end) + _END_BYTES != entry["bytes"]:
            raise ShardError(f"{where}: its last member ends at byte {end}; the index says "
                             f"{entry['name']} is {entry['bytes']} bytes")
        counted = {"samples": samples, "files": n,
                   "first_key": self.keys[0] if n else None, "last_key": last}
        for k, v in counted.items():
            if entry[k] != v:
                raise ShardError(f"{where}: {k} is {v!r}; the index says {entry[k]!r}")

    def header_start(self, i):
        """Where member i's headers begin: after the previous member's data, padded."""
        return 0 if i == 0 else _round_up(self.offsets[i - 1] + self.sizes[i - 1])


def _read_exactly(f, n, where):
    data = f.read(n)
    while len(data) < n:
        more = f.read(n - len(data))
        if not more:
            raise ShardError(f"{where}: ends at byte {f.tell()}; its member table reads on")
        data += more
    return data


class _HashingReader:
    """A file read through SHA-256, counting bytes."""

    def __init__(self, f, hashing):
        self._f = f
        self._hash = hashlib.sha256() if hashing else None
        self.bytes = 0

    def read(self, n=-1):
        data = self._f.read(n)
        self.add(data)
        return data

    def add(self, data):
        """Counts and hashes bytes read elsewhere."""
        self.bytes += len(data)
        if self._hash is not None:
            self._hash.update(data)

    def finish(self):
        """Reads what the reader left (the archive's end); the hex digest."""
        while self.read(_TAR_READ_BYTES):
            pass
        return self._hash.hexdigest() if self._hash is not None else None


class Shards:
    """The samples of a packed directory (see the module's documentation)."""

    def __init__(self, path, *, shuffle=False, seed=0, buffer=1000, verify=False, strict=False,
                 workers=None):
        if buffer < 1:
            raise ValueError(f"buffer must be at least 1, not {buffer!r}")
        self.path = os.fspath(path)
        self.index = _load_index(self.path)
        self.shuffle = shuffle
        self.seed = seed
        self.buffer = buffer
        self.verify = verify
        self.strict = strict
        self.workers = workers
        self.epoch = 0
        self._rank, self._world_size = 0, 1

    def split(self, rank, world_size):
        """A reader of every world_size-th shard from rank on (after the epoch's shuffle)."""
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank!r} is not in [0, world_size={world_size!r})")
        count = len(self.index["shards"])
        if world_size > count:
            raise ValueError(f"{count} shards cannot feed {world_size} ranks: pack with a smaller "
                             "--shard-size")
        other = Shards.__new__(Shards)
        other.__dict__.update(self.__dict__)
        other._rank, other._world_size = rank, world_size
        return other

    def set_epoch(self, epoch):
        """Shuffles differently for each epoch (with shuffle=True), the same on every rank."""
        self.epoch = epoch

    def shard_names(self):
        """The shards this reader reads, in the order it reads them."""
        shards = self._ordered()
        return [s["name"] for s in self._mine(shards)]

    def __len__(self):
        """How many samples this reader gives in an epoch (ranks may differ by a shard's)."""
        return sum(s["samples"] for s in self._mine(self._ordered()))

    def __iter__(self):
        shards = self._mine(self._ordered())
        samples = (sample for s in shards for sample in self._read_shard(s))
        if not self.shuffle:
            return samples
        return self._buffered(samples, random.Random(f"{self.seed}/{self.epoch}/samples/"
                                                     f"{self._rank}/{self._worker()[0]}"))

    def _ordered(self):
        shards = list(self.index["shards"])
        if self.shuffle:
            random.Random(f"{self.seed}/{self.epoch}/shards").shuffle(shards)
        return shards

    def _worker(self):
        info = self.workers() if self.workers else None
        return (0, 1) if info is None else (info.id, info.num_workers)

    def _mine(self, shards):
        mine = shards[self._rank::self._world_size]
        worker, workers = self._worker()
        if workers > len(mine):
            raise ValueError(f"{len(mine)} shards cannot feed {workers} workers: use fewer "
                             "DataLoader workers or a smaller --shard-size")
        return mine[worker::workers]

    def _buffered(self, samples, rng):
        pool = []
        for sample in samples:
            if len(pool) < self.buffer:
                pool.append(sample)
                continue
            i = rng.randrange(len(pool))
            pool[i], sample = sample, pool[i]
            yield sample
        rng.shuffle(pool)
        yield from pool

    def _read_shard(self, entry):
        table = _Table(self.path, entry) if "members" in entry else None
        if table is None or self.strict:
            return self._read_with_tarfile(entry, table)
        return self._read_by_table(entry, table)

    def _read_by_table(self, entry, table):
        where = os.path.join(self.path, entry["name"])
        keys, fields, offsets, sizes = table.keys, table.fields, table.offsets, table.sizes
        n = len(keys)
        with open(where, "rb", buffering=0) as f:
            size = os.fstat(f.fileno()).st_size
            if size != entry["bytes"]:
                raise ShardError(f"{where}: {size} bytes; the index says {entry['bytes']}")
            reader = _HashingReader(f, self.verify)
            pos = i = 0  # the shard's bytes up to pos are read, and its members before i
            sample = None
            while i < n:
                # Whole members, about _CHUNK_BYTES of them, or one larger.
                limit = pos + _CHUNK_BYTES
                j = i + 1
                while j < n and offsets[j] + sizes[j] <= limit:
                    j += 1
                end = offsets[j - 1] + sizes[j - 1]
                buf = _read_exactly(f, end - pos, where)
                reader.add(buf)
                for k in {0, n - 1}:
                    if i <= k < j:
                        self._check_header(where, table, k, buf, pos)
                for k in range(i, j):
                    o = offsets[k] - pos
                    if buf[o - 255:o - 249] != _MAGIC:
                        raise ShardError(f"{where}: member {table.names[k]!r}: no tar header "
                                         f"ends at byte {offsets[k]}, where its member table "
                                         "puts its data: the table is not this shard's")
                    key = keys[k]
                    if sample is None or key != sample["__key__"]:
                        if sample is not None:
                            yield sample
                        sample = {"__key__": key}
                    sample[fields[k]] = buf[o:o + sizes[k]]
                pos, i = end, j
            digest = reader.finish()
        if sample is not None:
            yield sample
        self._check_digest(where, entry, reader, digest)

    @staticmethod
    def _check_header(where, table, k, buf, pos):
        """Member k's headers, parsed whole (pax included): its name, size and offset as the
        table says; so a shard swapped for another of the same layout is found."""
        start = table.header_start(k) - pos
        name, offset, size = table.names[k], table.offsets[k], table.sizes[k]
        try:
            with tarfile.open(fileobj=io.BytesIO(buf[start:offset - pos]), mode="r:",
                              encoding="utf-8", errors="strict") as tar:
                member = tar.firstmember
        except (tarfile.TarError, EOFError, UnicodeError) as e:
            raise ShardError(f"{where}: member {name!r}: no tar header at byte "
                             f"{start + pos}: {e}") from None
        got = (member.name, member.size, start + pos + member.offset_data) if member else None
        if got != (name, size, offset):
            raise ShardError(f"{where}: the header at byte {start + pos} says {got!r}; the "
                             f"member table says {(name, size, offset)!r}")

    def _check_digest(self, where, entry, reader, digest):
        if self.verify:
            if reader.bytes != entry["bytes"]:
                raise ShardError(f"{where}: {reader.bytes} bytes; the index says "
                                 f"{entry['bytes']}")
            if digest != entry["sha256"]:
                raise ShardError(f"{where}: SHA-256 {digest}; the index says {entry['sha256']}")

    def _read_with_tarfile(self, entry, table):
        where = os.path.join(self.path, entry["name"])
        samples = files = 0
        first = last = None
        sample = None
        member = None
        with open(where, "rb") as raw:
            reader = _HashingReader(raw, self.verify)
            try:
                with tarfile.open(fileobj=reader, mode="r|", bufsize=_TAR_READ_BYTES,
                                  encoding="utf-8", errors="strict") as tar:
                    for member in tar:
                        if not member.isreg():
                            raise ShardError(f"{where}: member {member.name!r} is not a file")
                        try:
                            key, field = split_name(member.name)
                        except ShardError as e:
                            raise ShardError(f"{where}: member {e}") from None
                        if sample is not None and key != sample["__key__"]:
                            if key < sample["__key__"]:
                                raise ShardError(f"{where}: member {member.name!r} is out of "
                                                 "key order")
                            yield sample
                            sample = None
                        if sample is None:
                            sample = {"__key__": key}
                            samples += 1
                            first = key if first is None else first
                            last = key
                        if field in sample:
                            raise ShardError(f"{where}: member {member.name!r} is in the shard "
                                             "twice")
                        if table is not None:
                            self._check_member(where, table, files, member)
                        sample[field] = tar.extractfile(member).read()
                        files += 1
            except (tarfile.TarError, EOFError, UnicodeError) as e:
                at = f"after member {member.name!r}" if member is not None else "at its start"
                raise ShardError(f"{where}: corrupt {at}: {e}") from None
            digest = reader.finish()
        if sample is not None:
            yield sample
        counted = {"samples": samples, "files": files, "first_key": first, "last_key": last}
        for k, v in counted.items():
            if entry[k] != v:
                raise ShardError(f"{where}: {k} is {v!r}; the index says {entry[k]!r}")
        self._check_digest(where, entry, reader, digest)

    @staticmethod
    def _check_member(where, table, k, member):
        """A member as tarfile read it against the table's k-th (strict=True)."""
        got = (member.name, member.offset_data, member.size)
        said = ((table.names[k], table.offsets[k], table.sizes[k]) if k < len(table.names)
                else None)
        if got != said:
            raise ShardError(f"{where}: member {member.name!r} is at byte {member.offset_data}, "
                             f"{member.size} bytes; its member table says {said!r}")
