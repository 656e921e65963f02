"""python/cohort_shards.py reading shards that `cohort data pack` wrote: samples in order and
shuffled, through the member tables and with tarfile alike, ranks and workers disjoint,
corruption found and named, version 1 indexes (no member tables) still read.

    COHORT_BIN_DIR=build/bin /usr/bin/python3 python/cohort_shards_test.py
"""

import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cohort_shards  # noqa: E402

BIN_DIR = os.environ.get("COHORT_BIN_DIR", os.path.join(os.path.dirname(__file__), "..", "build",
                                                        "bin"))
COHORT = os.path.join(BIN_DIR, "cohort")


def pack(src, out, shard_size="16Ki", *extra):
    return subprocess.run([COHORT, "data", "pack", src, out, "--shard-size", shard_size, *extra],
                          capture_output=True, text=True, timeout=120)


class Worker:
    def __init__(self, id, num_workers):
        self.id, self.num_workers = id, num_workers


class PackedDirectory(unittest.TestCase):
    """60 samples of an image, a class and, for some, a mask, in a few shards."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="cohort-shards-test-")
        cls.src = os.path.join(cls.tmp, "src")
        rng = random.Random(5)
        cls.expected = {}
        for i in range(60):
            key = f"train/{i:04d}" if i % 10 else f"val/caf\u00e9-{i}"
            sample = {"jpg": rng.randbytes(rng.randrange(100, 3000)), "cls": str(i % 7).encode()}
            if i % 4 == 0:
                sample["seg.png"] = rng.randbytes(50)
            cls.expected[key] = sample
            for field, data in sample.items():
                path = os.path.join(cls.src, f"{key}.{field}")
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "wb") as f:
                    f.write(data)
        cls.out = os.path.join(cls.tmp, "out")
        done = pack(cls.src, cls.out)
        if done.returncode != 0:
            raise AssertionError(f"cohort data pack failed: {done.stderr}")
        cls.summary = done.stdout

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def copy(self):
        """A copy of the packed directory, to break."""
        path = os.path.join(tempfile.mkdtemp(dir=self.tmp), "copy")
        shutil.copytree(self.out, path)
        return path

    def rewrite_table(self, path, shard, change):
        """Changes shard number `shard`'s member table with change(table) and puts its new size
        and SHA-256 in the index, so that only what the change breaks is found."""
        table_path = os.path.join(path, f"shard-{shard:06d}.idx")
        with open(table_path) as f:
            table = json.load(f)
        change(table)
        text = (json.dumps(table, separators=(",", ":")) + "\n").encode()
        with open(table_path, "wb") as f:
            f.write(text)
        self.rewrite_index(path, lambda index: index["shards"][shard]["members"].update(
            bytes=len(text), sha256=hashlib.sha256(text).hexdigest()))

    def rewrite_index(self, path, change):
        with open(os.path.join(path, "index.json")) as f:
            index = json.load(f)
        change(index)
        with open(os.path.join(path, "index.json"), "w") as f:
            json.dump(index, f)

    def check_sample(self, sample):
        key = sample["__key__"]
        self.assertIn(key, self.expected)
        self.assertEqual({k: v for k, v in sample.items() if k != "__key__"},
                         self.expected[key], key)


class Reading(PackedDirectory):
    def test_samples_come_in_key_order_whole_through_the_tables_and_with_tarfile(self):
        for strict in (False, True):
            shards = cohort_shards.Shards(self.out, verify=True, strict=strict)
            self.assertEqual(shards.index["version"], 2)
            self.assertGreater(len(shards.index["shards"]), 4)
            samples = list(shards)
            self.assertEqual([s["__key__"] for s in samples], sorted(self.expected))
            for s in samples:
                self.check_sample(s)
            self.assertEqual(len(shards), 60)
        self.assertIn("packed 135 files (60 samples", self.summary)

    def test_reads_of_any_size_give_the_same_samples(self):
        # Reads smaller than most members (each then read alone) and holding a few of them.
        default = cohort_shards._CHUNK_BYTES
        try:
            for chunk in (1024, 5000, 1 << 20):
                cohort_shards._CHUNK_BYTES = chunk
                samples = list(cohort_shards.Shards(self.out, verify=True))
                self.assertEqual([s["__key__"] for s in samples], sorted(self.expected), chunk)
                for s in samples:
                    self.check_sample(s)
        finally:
            cohort_shards._CHUNK_BYTES = default

    def test_a_version_1_index_without_tables_is_read_with_tarfile(self):
        path = self.copy()

        def to_version_1(index):
            index["version"] = 1
            for s in index["shards"]:
                del s["members"]
                os.remove(os.path.join(path, s["name"][:-4] + ".idx"))
        self.rewrite_index(path, to_version_1)
        samples = list(cohort_shards.Shards(path, verify=True))
        self.assertEqual([s["__key__"] for s in samples], sorted(self.expected))
        for s in samples:
            self.check_sample(s)
        # Version 2 without a table is not.
        self.rewrite_index(path, lambda index: index.update(version=2))
        with self.assertRaisesRegex(cohort_shards.ShardError,
                                    r"shard 0 \(shard-000000\.tar\) has no member table"):
            cohort_shards.Shards(path)

    def test_shuffled_by_shard_and_buffer_the_same_for_a_seed_another_each_epoch(self):
        def keys(epoch=0, **kw):
            shards = cohort_shards.Shards(self.out, shuffle=True, **kw)
            shards.set_epoch(epoch)
            return [s["__key__"] for s in shards]

        a = keys(seed=1, buffer=8)
        self.assertEqual(sorted(a), sorted(self.expected))
        self.assertNotEqual(a, sorted(self.expected))
        self.assertEqual(a, keys(seed=1, buffer=8))
        self.assertNotEqual(a, keys(seed=2, buffer=8))
        self.assertNotEqual(a, keys(seed=1, buffer=8, epoch=1))
        # A buffer of one sample: shards in another order, each shard's samples in order.
        order = cohort_shards.Shards(self.out, shuffle=True, seed=1, buffer=1)
        names = order.shard_names()
        self.assertNotEqual(names, [s["name"] for s in order.index["shards"]])
        by_shard = {s["name"]: s for s in order.index["shards"]}
        one = keys(seed=1, buffer=1)
        at = 0
        for name in names:
            n = by_shard[name]["samples"]
            self.assertEqual(one[at], by_shard[name]["first_key"])
            self.assertEqual(one[at:at + n], sorted(one[at:at + n]))
            at += n
        # Through a buffer of 8: no sample comes out more than 8 places early.
        position = {k: i for i, k in enumerate(one)}
        for i, k in enumerate(a):
            self.assertGreaterEqual(i, position[k] - 8, k)

    def test_ranks_and_workers_read_disjoint_shards_that_cover_all(self):
        for shuffle in (False, True):
            seen = []
            for rank in range(2):
                for worker in range(2):
                    shards = cohort_shards.Shards(self.out, shuffle=shuffle, seed=3,
                                                  workers=lambda w=worker: Worker(w, 2))
                    mine = [s["__key__"] for s in shards.split(rank, 2)]
                    self.assertTrue(mine)
                    seen += mine
            self.assertEqual(sorted(seen), sorted(self.expected))
        no_torch = cohort_shards.Shards(self.out, workers=lambda: None).split(1, 3)
        self.assertEqual(no_torch.shard_names(),
                         [s["name"] for s in no_torch.index["shards"]][1::3])
        with self.assertRaisesRegex(ValueError, "rank 2 is not in"):
            cohort_shards.Shards(self.out).split(2, 2)
        with self.assertRaisesRegex(ValueError, "shards cannot feed 1000 ranks"):
            cohort_shards.Shards(self.out).split(0, 1000)
        many = cohort_shards.Shards(self.out, workers=lambda: Worker(0, 1000))
        with self.assertRaisesRegex(ValueError, "shards cannot feed 1000 workers"):
            list(many)

    def test_a_changed_byte_is_found_with_verify_naming_the_shard(self):
        path = self.copy()
        shard = os.path.join(path, "shard-000001.tar")
        with open(shard, "r+b") as f:
            f.seek(600)  # in the first member's data
            byte = f.read(1)
            f.seek(600)
            f.write(bytes([byte[0] ^ 0xff]))
        self.assertEqual(len(list(cohort_shards.Shards(path))), 60)  # unseen without verify
        with self.assertRaisesRegex(cohort_shards.ShardError,
                                    r"shard-000001\.tar: SHA-256 [0-9a-f]{64}; the index says"):
            list(cohort_shards.Shards(path, verify=True))

    def test_a_truncated_or_swapped_shard_is_an_error_naming_it(self):
        path = self.copy()
        shard = os.path.join(path, "shard-000002.tar")
        size = os.path.getsize(shard)
        os.truncate(shard, size // 2 + 100)
        with self.assertRaisesRegex(cohort_shards.ShardError,
                                    r"shard-000002\.tar: \d+ bytes; the index says \d+"):
            list(cohort_shards.Shards(path))
        with self.assertRaisesRegex(cohort_shards.ShardError,
                                    r"shard-000002\.tar: (corrupt after member '.*'|samples is)"):
            list(cohort_shards.Shards(path, strict=True))
        path = self.copy()
        os.replace(os.path.join(path, "shard-000003.tar"), os.path.join(path, "shard-000000.tar"))
        shutil.copy(os.path.join(self.out, "shard-000000.tar"),
                    os.path.join(path, "shard-000003.tar"))
        with self.assertRaisesRegex(cohort_shards.ShardError,
                                    r"shard-000000\.tar: \d+ bytes; the index says"):
            list(cohort_shards.Shards(path))
        with self.assertRaisesRegex(cohort_shards.ShardError,
                                    r"shard-000000\.tar: member '.*' is at byte \d+, \d+ bytes; "
                                    r"its member table says"):
            list(cohort_shards.Shards(path, strict=True))

    def test_a_shard_of_the_same_layout_swapped_in_is_found_by_its_headers(self):
        # Two packings of files of the same sizes under other names: their shards and tables
        # differ only in the names.
        tmp = tempfile.mkdtemp(dir=self.tmp)
        for name in ("a", "b"):
            for i in range(20):
                path = os.path.join(tmp, name, f"{name}{i:03d}.bin")
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "wb") as f:
                    f.write(bytes(1000))
            done = pack(os.path.join(tmp, name), os.path.join(tmp, name + "-out"), "8Ki")
            self.assertEqual(done.returncode, 0, done.stderr)
        shutil.copy(os.path.join(tmp, "b-out", "shard-000001.tar"),
                    os.path.join(tmp, "a-out", "shard-000001.tar"))
        with self.assertRaisesRegex(cohort_shards.ShardError,
                                    r"shard-000001\.tar: the header at byte 0 says \('b004\.bin', "
                                    r"1000, 512\); the member table says \('a004\.bin', 1000, "
                                    r"512\)"):
            list(cohort_shards.Shards(os.path.join(tmp, "a-out")))

    def test_a_member_table_that_is_not_the_shards_is_an_error_naming_the_member(self):
        path = self.copy()
        # Edited without its SHA-256 in the index.
        table = os.path.join(path, "shard-000001.idx")
        with open(table, "r+b") as f:
            f.seek(60)
            f.write(b"9")
        with self.assertRaisesRegex(cohort_shards.ShardError,
                                    r"shard-000001\.idx: \d+ bytes of SHA-256 [0-9a-f]{64}; the "
                                    r"index says \d+ of [0-9a-f]{64}"):
            list(cohort_shards.Shards(path))

        path = self.copy()
        # A member's data a block later: the next member's has no room for its header.
        self.rewrite_table(path, 1, lambda t: t["offsets"].__setitem__(2, t["offsets"][2] + 512))
        with open(os.path.join(path, "shard-000001.idx")) as f:
            fourth = json.load(f)["names"][3]
        with self.assertRaisesRegex(cohort_shards.ShardError,
                                    rf"shard-000001\.idx: member '{re.escape(fourth)}': offset \d+ "
                                    r"and size \d+ do not leave a header after the previous"):
            list(cohort_shards.Shards(path))

        # A member's data said to begin a block later and be as much shorter: the table still
        # holds together, and what lies before that offset is data, not a header.
        path = self.copy()
        with open(os.path.join(path, "shard-000002.idx")) as f:
            table = json.load(f)
        k = next(k for k, size in enumerate(table["sizes"]) if size > 512 and k > 0)
        second = table["names"][k]

        def late(t):
            t["offsets"][k] += 512
            t["sizes"][k] -= 512
        self.rewrite_table(path, 2, late)
        with self.assertRaisesRegex(cohort_shards.ShardError,
                                    rf"shard-000002\.tar: member '{re.escape(second)}': no tar "
                                    r"header ends at byte \d+, where its member table puts its "
                                    r"data"):
            list(cohort_shards.Shards(path))
        # strict=True reads every header and names the member whose table entry is wrong.
        with self.assertRaisesRegex(cohort_shards.ShardError,
                                    rf"shard-000002\.tar: member '{re.escape(second)}' is at byte "
                                    r"\d+, \d+ bytes; its member table says"):
            list(cohort_shards.Shards(path, strict=True))

        # A name that is no member's.
        path = self.copy()
        self.rewrite_table(path, 1, lambda t: t["names"].__setitem__(0, "LICENSE"))
        with self.assertRaisesRegex(cohort_shards.ShardError,
                                    r"shard-000001\.tar: member 'LICENSE': no extension"):
            list(cohort_shards.Shards(path))

        # Another shard's table, its entry in the index made to match.
        path = self.copy()
        shutil.copy(os.path.join(path, "shard-000003.idx"), os.path.join(path, "shard-000001.idx"))
        with open(os.path.join(path, "shard-000001.idx"), "rb") as f:
            text = f.read()
        self.rewrite_index(path, lambda index: index["shards"][1]["members"].update(
            bytes=len(text), sha256=hashlib.sha256(text).hexdigest()))
        with self.assertRaisesRegex(cohort_shards.ShardError,
                                    r"shard-000001\.idx: not a version 1 member table of "
                                    r"shard-000001\.tar"):
            list(cohort_shards.Shards(path))

    def test_an_index_of_another_version_or_none_is_refused(self):
        path = self.copy()
        index = os.path.join(path, "index.json")
        with open(index) as f:
            text = f.read()
        with open(index, "w") as f:
            f.write(text.replace('"version": 2', '"version": 3'))
        with self.assertRaisesRegex(cohort_shards.ShardError,
                                    r"version 3; this reader reads versions 1, 2"):
            cohort_shards.Shards(path)
        with open(index, "w") as f:
            f.write(text.replace('"shard-000001.tar"', '"../etc/passwd"'))
        with self.assertRaisesRegex(cohort_shards.ShardError, "shard 1 is not a shard's entry"):
            cohort_shards.Shards(path)
        os.remove(index)
        with self.assertRaisesRegex(cohort_shards.ShardError, "no index.json; not a packed"):
            cohort_shards.Shards(path)


class Names(unittest.TestCase):
    def test_keys_and_fields_split_as_the_packer_splits_them(self):
        self.assertEqual(cohort_shards.split_name("train/0001.jpg"), ("train/0001", "jpg"))
        self.assertEqual(cohort_shards.split_name("a/0001.seg.png"), ("a/0001", "seg.png"))
        self.assertEqual(cohort_shards.split_name("v1.2/x.cls"), ("v1.2/x", "cls"))
        for bad in ("LICENSE", "a/.hidden", "a/x.", "a/", "v1.2/README"):
            with self.assertRaises(cohort_shards.ShardError):
                cohort_shards.split_name(bad)

    def test_keys_and_fields_are_webdatasets(self):
        # webdataset.tariterators.base_plus_ext's pattern (WebDataset 0.2 to 1.0), which groups
        # a tar's members into samples.
        base_plus_ext = re.compile(r"^((?:.*/|)[^.]+)[.]([^/]*)$")
        for name in ("train/0001.jpg", "a/0001.seg.png", "v1.2/x.cls", "x.d/y.tar.gz",
                     "caf\u00e9/1.json", "deep/er/k.a.b.c", "n.0"):
            self.assertEqual(cohort_shards.split_name(name),
                             base_plus_ext.match(name).groups(), name)
        for name in ("LICENSE", "v1.2/README"):  # WebDataset skips these; the packer refuses them
            self.assertIsNone(base_plus_ext.match(name), name)
        # WebDataset would make "a/.hidden" the field "hidden" of a sample "a/"; the packer
        # refuses it.
        self.assertEqual(base_plus_ext.match("a/.hidden").groups(), ("a/", "hidden"))


class Command(unittest.TestCase):
    def test_bad_input_is_refused_with_the_path_or_the_flag(self):
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "src")
            os.makedirs(src)
            with open(os.path.join(src, "a.jpg"), "wb") as f:
                f.write(b"x")
            os.symlink("a.jpg", os.path.join(src, "b.jpg"))
            done = pack(src, os.path.join(tmp, "out"))
            self.assertEqual(done.returncode, 1)
            self.assertIn("cohort data pack: b.jpg: a symbolic link (not followed): shards hold", done.stderr)
            os.remove(os.path.join(src, "b.jpg"))
            done = pack(src, os.path.join(tmp, "out"), "12x")
            self.assertEqual(done.returncode, 1)
            self.assertIn('--shard-size: "12x" is not a size', done.stderr)
            self.assertFalse(os.path.exists(os.path.join(tmp, "out")))
            done = pack(src, os.path.join(tmp, "out"), "64Mi", "-o", "json")
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertIn('"format": "cohort-shards"', done.stdout)
            self.assertEqual([s["sha256"] for s in
                              cohort_shards.Shards(os.path.join(tmp, "out")).index["shards"]],
                             [__import__("json").loads(done.stdout)["shards"][0]["sha256"]])


if __name__ == "__main__":
    unittest.main()
