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
its value the file's bytes. Shards are read front to back as streams (large sequential reads,
no seeking; 64 KiB at a time), one open file at a time.

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
without it, each shard's samples, files and first and last keys are checked against the index,
so a truncated or swapped shard is an error. Errors are ShardError (a ValueError) naming the
shard and the member.

The standard library only: copy this file next to a training script, or put its directory on
PYTHONPATH.
"""

import hashlib
import json
import os
import random
import re
import tarfile

__all__ = ["Shards", "ShardError", "split_name", "FORMAT", "VERSION"]

FORMAT = "cohort-shards"
VERSION = 1
INDEX = "index.json"
MAX_INDEX_BYTES = 256 << 20
_SHARD_NAME = re.compile(r"shard-[0-9]{6,}\.tar")
# tarfile's stream copies what is left of its buffer at every read of a header or a member, so a
# larger buffer costs more than it saves: 64 KiB read about 35,000 4 KiB samples a second, 1 MiB
# 13,000 (bench/data_pack_bench.py's machine).
_READ_BYTES = 1 << 16


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
    if index.get("version") != VERSION:
        raise ShardError(f"{index_path}: version {index.get('version')!r}; this reader reads "
                         f"version {VERSION}")
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
    return index


class _HashingReader:
    """A file read through SHA-256, counting bytes."""

    def __init__(self, f, hashing):
        self._f = f
        self._hash = hashlib.sha256() if hashing else None
        self.bytes = 0

    def read(self, n=-1):
        data = self._f.read(n)
        self.bytes += len(data)
        if self._hash is not None:
            self._hash.update(data)
        return data

    def finish(self):
        """Reads what the tar reader left (the archive's end); the hex digest."""
        while self.read(_READ_BYTES):
            pass
        return self._hash.hexdigest() if self._hash is not None else None


class Shards:
    """The samples of a packed directory (see the module's documentation)."""

    def __init__(self, path, *, shuffle=False, seed=0, buffer=1000, verify=False, workers=None):
        if buffer < 1:
            raise ValueError(f"buffer must be at least 1, not {buffer!r}")
        self.path = os.fspath(path)
        self.index = _load_index(self.path)
        self.shuffle = shuffle
        self.seed = seed
        self.buffer = buffer
        self.verify = verify
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
        where = os.path.join(self.path, entry["name"])
        samples = files = 0
        first = last = None
        sample = None
        member = None
        with open(where, "rb") as raw:
            reader = _HashingReader(raw, self.verify)
            try:
                with tarfile.open(fileobj=reader, mode="r|", bufsize=_READ_BYTES,
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
        if self.verify:
            if reader.bytes != entry["bytes"]:
                raise ShardError(f"{where}: {reader.bytes} bytes; the index says "
                                 f"{entry['bytes']}")
            if digest != entry["sha256"]:
                raise ShardError(f"{where}: SHA-256 {digest}; the index says {entry['sha256']}")
