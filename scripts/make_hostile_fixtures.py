#!/usr/bin/env python3
"""Generates tests/fixtures/hostile/: small hand-made hostile Zarr stores, one directory (or zip)
each, and manifest.json saying what zarrfs must show for each (tests/hostile.rs checks it).

Every store holds a healthy neighbour (`good`, int16 0..5 in chunks of 4) beside the hostile
node(s), so the tests also prove that one bad node does not spoil the others. Compressed bytes
come from numcodecs (`pip install numcodecs`) or Python's own zlib/gzip/bz2 modules. The output
is deterministic: run it again and `git status` shows nothing.

Stores that cannot be committed (symlink cycles, links out of the store, non-UTF-8 names, 200
levels of nesting, 100k siblings, stores that cannot list) are made by the tests at run time.

Manifest fields per store (all optional but `name` and `store`):
  load        "ok" (default) or the MetaError variant load_hierarchy must fail with
  show        view paths that must resolve
  absent      view paths that must not resolve
  dirs        {dir view path: exact sorted entry names, without . and ..}
  node_errors {node path: MetaError variant of NodeKind::Array(Err(..))}
  bytes       {view path: hex of the whole file}
  eio         view paths whose whole read fails with ViewError::Io
  reads       [[view path, offset, length, hex or null for ViewError::Io]]
  size        {view path: size getattr must show}
  log         substrings the log lines must hold
  max_alloc   most bytes one read may allocate (decompression bombs)
"""

import bz2
import gzip
import json
import shutil
import struct
import zipfile
import zlib
from pathlib import Path

import numcodecs
import numpy as np

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "hostile"

GOOD = np.arange(6, dtype="<i2")
GOOD_HEX = GOOD.tobytes().hex()
BOMB_BYTES = 4 << 20
# A read of a 16-byte chunk may allocate buffers, never the bomb's 4 MiB.
BOMB_MAX_ALLOC = 1 << 20

MANIFEST = []


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def encode(codec, raw: bytes) -> bytes:
    """The stored form of `raw` under a numcodecs compressor config (None: raw)."""
    if codec is None:
        return raw
    cid = codec["id"]
    if cid == "zlib":
        return zlib.compress(raw, codec.get("level", 6))
    if cid == "gzip":
        return gzip.compress(raw, codec.get("level", 6), mtime=0)
    if cid == "bz2":
        return bz2.compress(raw, codec.get("level", 9))
    if cid == "zstd":
        return numcodecs.Zstd(level=codec.get("level", 3)).encode(raw)
    if cid == "lz4":
        return numcodecs.LZ4().encode(raw)
    if cid == "blosc":
        return numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE).encode(
            np.frombuffer(raw, dtype="u1")
        )
    if cid == "fletcher32":
        return bytes(numcodecs.Fletcher32().encode(raw))
    if cid == "adler32":
        return bytes(numcodecs.checksum32.Adler32().encode(raw))
    if cid == "crc32":
        return bytes(numcodecs.checksum32.CRC32().encode(raw))
    raise ValueError(cid)


CODECS = {
    "zlib": {"id": "zlib", "level": 6},
    "gzip": {"id": "gzip", "level": 6},
    "bz2": {"id": "bz2", "level": 9},
    "zstd": {"id": "zstd", "level": 3},
    "lz4": {"id": "lz4", "acceleration": 1},
    "blosc": {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0},
    "fletcher32": {"id": "fletcher32"},
    "adler32": {"id": "adler32"},
    "crc32": {"id": "crc32"},
}

V3_CODECS = {
    "gzip": {"name": "gzip", "configuration": {"level": 6}},
    "zstd": {"name": "zstd", "configuration": {"level": 3, "checksum": False}},
    "blosc": {
        "name": "blosc",
        "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 1,
                          "blocksize": 0},
    },
}


def zarray(shape, chunks, dtype="<i2", compressor=None, fill_value=0, **extra):
    doc = {"zarr_format": 2, "shape": shape, "chunks": chunks, "dtype": dtype,
           "compressor": compressor, "filters": None, "fill_value": fill_value, "order": "C"}
    doc.update(extra)
    return doc


def v3_array(shape, chunks, data_type="int16", codecs=None, fill_value=0):
    return {
        "zarr_format": 3, "node_type": "array", "shape": shape, "data_type": data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill_value,
        "codecs": codecs or [{"name": "bytes", "configuration": {"endian": "little"}}],
        "attributes": {},
    }


class Zeros:
    """A member of `size` zero bytes, written a MiB at a time."""

    def __init__(self, size):
        self.size = size


class Store:
    """A store being written: a directory, or the members of a zip (compressed with `method` at
    `level`; `damage` lists (key, what) to damage once written, see `damage_member`)."""

    def __init__(self, name, zip_file=False, method=zipfile.ZIP_STORED, level=None):
        self.name = name + (".zip" if zip_file else ".zarr")
        self.members = {}
        self.method = method
        self.level = level
        self.damage = []

    def put(self, key, value):
        if isinstance(value, (dict, list)):
            value = json.dumps(value, indent=1).encode()
        elif isinstance(value, str):
            value = value.encode()
        self.members[key] = value if isinstance(value, Zeros) else bytes(value)

    def v2_group(self, prefix="", attrs=None):
        self.put(join(prefix, ".zgroup"), {"zarr_format": 2})
        if attrs is not None:
            self.put(join(prefix, ".zattrs"), attrs)

    def good(self, prefix="good", compressor=None):
        """The healthy neighbour: v2 int16 0..5 in chunks of 4 under `compressor`."""
        self.put(join(prefix, ".zarray"), zarray([6], [4], compressor=compressor))
        padded = np.concatenate([GOOD, np.zeros(2, "<i2")]).tobytes()
        self.put(join(prefix, "0"), encode(compressor, padded[:8]))
        self.put(join(prefix, "1"), encode(compressor, padded[8:]))

    def good_v3(self, prefix="good", codecs=None):
        """The healthy neighbour as a v3 array."""
        self.put(join(prefix, "zarr.json"), v3_array([6], [4], codecs=codecs))
        padded = np.concatenate([GOOD, np.zeros(2, "<i2")]).tobytes()
        for i, part in enumerate([padded[:8], padded[8:]]):
            self.put(join(prefix, f"c/{i}"), v3_encode(codecs, part))

    def write(self):
        path = OUT / self.name
        if self.name.endswith(".zip"):
            with zipfile.ZipFile(path, "w") as z:
                for key, value in self.members.items():
                    info = zipfile.ZipInfo(key, date_time=(2024, 1, 1, 0, 0, 0))
                    info.compress_type = self.method
                    if isinstance(value, Zeros):
                        with z.open(info, "w") as f:
                            for _ in range(value.size >> 20):
                                f.write(bytes(1 << 20))
                    else:
                        z.writestr(info, value, compresslevel=self.level)
            for key, what in self.damage:
                damage_member(path, key, what)
            return
        for key, value in self.members.items():
            p = path / key
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(value)
        path.mkdir(parents=True, exist_ok=True)


def damage_member(path, key, what):
    """Damages member `key` of the zip at `path`: "data" flips its sixth byte as written (a
    deflated member at level 0: the first byte of its stored block, past the block's 5-byte
    header), "local_header" breaks the signature of its local header."""
    with zipfile.ZipFile(path) as z:
        at = z.getinfo(key).header_offset
    buf = bytearray(path.read_bytes())
    if what == "local_header":
        buf[at:at + 4] = b"PK\0\0"
    else:
        name_len, extra_len = struct.unpack("<HH", buf[at + 26:at + 30])
        buf[at + 30 + name_len + extra_len + 5] ^= 0xFF
    path.write_bytes(bytes(buf))


def join(prefix, name):
    return f"{prefix}/{name}" if prefix else name


def v3_encode(codecs, raw):
    for c in (codecs or [])[1:]:
        name = c["name"]
        if name == "gzip":
            raw = gzip.compress(raw, 6, mtime=0)
        elif name == "zstd":
            raw = numcodecs.Zstd(level=3).encode(raw)
        elif name == "blosc":
            raw = encode(CODECS["blosc"], raw)
        elif name == "crc32c":
            raw = raw + struct.pack("<I", crc32c(raw))
        else:
            raise ValueError(name)
    return raw


def entry(store, doc, **expect):
    """Writes `store` and records what zarrfs must show for it."""
    store.write()
    case = {"name": store.name.rsplit(".", 1)[0], "store": store.name, "doc": doc}
    expect.setdefault("load", "ok")
    if expect["load"] == "ok" and "bytes" not in expect:
        expect["bytes"] = {"good": GOOD_HEX}
    case.update(expect)
    MANIFEST.append(case)


def bad_json_stores():
    s = Store("json_truncated_zarray")
    s.v2_group()
    s.good()
    s.put("bad/.zarray", json.dumps(zarray([6], [4]))[:30])
    entry(s, "a .zarray cut short: the node is left out",
          absent=["bad", "bad.json"], log=["bad: left out", "malformed JSON"])

    s = Store("json_not_an_object")
    s.v2_group()
    s.good()
    s.put("bad/.zarray", "[2, 3]")
    s.put("worse/zarr.json", '"array"')
    entry(s, "metadata that is JSON but not an object",
          absent=["bad", "worse"], log=["not a JSON object"])

    s = Store("json_wrong_types_v2")
    s.v2_group()
    s.good()
    s.put("shape_str/.zarray", zarray("6", [4]))
    s.put("chunks_obj/.zarray", zarray([6], {"x": 4}))
    s.put("filters_num/.zarray", {**zarray([6], [4]), "filters": 5})
    s.put("no_dtype/.zarray", {k: v for k, v in zarray([6], [4]).items() if k != "dtype"})
    entry(s, "v2 fields of the wrong JSON type: the arrays show (with their metadata), reads EIO",
          show=["shape_str.json", "chunks_obj.json", "filters_num.json", "no_dtype.json"],
          eio=["shape_str", "chunks_obj", "filters_num", "no_dtype"],
          node_errors={"shape_str": "Field", "chunks_obj": "Field", "filters_num": "Field",
                       "no_dtype": "Field"})

    s = Store("json_wrong_types_v3")
    s.put("zarr.json", {"zarr_format": 3, "node_type": "group", "attributes": {}})
    s.good_v3()
    s.put("node_type_num/zarr.json", {**v3_array([6], [4]), "node_type": 5})
    s.put("grid_num/zarr.json", {**v3_array([6], [4]), "chunk_grid": 7})
    s.put("codecs_obj/zarr.json", {**v3_array([6], [4]), "codecs": {"name": "bytes"}})
    s.put("dtype_list/zarr.json", {**v3_array([6], [4]), "data_type": ["int16"]})
    entry(s, "v3 fields of the wrong JSON type",
          absent=["node_type_num"], eio=["grid_num", "codecs_obj", "dtype_list"],
          node_errors={"grid_num": "Field", "codecs_obj": "Field", "dtype_list": "DataType"},
          log=["node_type"])

    s = Store("json_bad_attributes")
    s.v2_group()
    s.good()
    s.put("good/.zattrs", '{"units": "m", ')
    entry(s, "malformed .zattrs: the array shows and reads, without attributes",
          show=["good.json"], log=["attributes ignored"])

    s = Store("json_deeply_nested")
    s.v2_group()
    s.good()
    s.put("deep/.zarray", "[" * 2000 + "]" * 2000)
    s.put(".zattrs", '{"a": ' + "[" * 2000 + "]" * 2000 + "}")
    entry(s, "JSON nested 2000 deep: refused by the parser's recursion limit, no stack overflow",
          absent=["deep"], log=["recursion limit"])

    s = Store("json_root_truncated")
    s.put(".zgroup", '{"zarr_format": ')
    s.good()
    entry(s, "the root's .zgroup is cut short: the root is shown as an implicit group",
          show=["good"], log=["/: metadata ignored"])

    s = Store("json_zmetadata_truncated")
    s.v2_group()
    s.good()
    s.put(".zmetadata", '{"metadata": {".zgroup": {"zarr_format": 2}, "good/.za')
    entry(s, "consolidated metadata cut short: ignored, the store is walked instead",
          show=["good"], log=["consolidated metadata ignored"])

    s = Store("json_only_garbage")
    s.put("zarr.json", "\x00\x01garbage")
    entry(s, "nothing but a malformed root: the load fails naming the cause", load="Json")


def shape_stores():
    s = Store("shapes_v2")
    s.v2_group()
    s.good()
    bad = {
        "zero_shape": zarray([0], [4]),
        "zero_chunks": zarray([6], [0]),
        "negative_shape": zarray([-6], [4]),
        "negative_chunks": zarray([6], [-4]),
        "float_shape": zarray([6.5], [4]),
        "huge_shape": zarray([2 ** 62, 2 ** 62], [1, 1]),
        "overflow_u64": zarray([2 ** 64], [4]),
        "rank_mismatch": zarray([6, 6], [4]),
        "too_many_dims": zarray([1] * 65, [1] * 65),
        "huge_chunks": zarray([6], [2 ** 40]),
        "huge_empty": zarray([2 ** 40, 2 ** 40, 0], [1, 1, 1]),
    }
    readable = {"zero_shape": "", "zero_chunks": "0000" * 6, "huge_empty": ""}
    for name, doc in bad.items():
        s.put(f"{name}/.zarray", doc)
    entry(s, "v2 shapes and chunk shapes zero, negative, fractional, huge, overflowing (a "
          "chunk size 0 reads as 1, as zarr-python 3.4 reads it; axes whose product overflows "
          "beside an empty one hold nothing)",
          bytes={"good": GOOD_HEX, **readable},
          eio=[n for n in bad if n not in readable],
          show=[f"{n}.json" for n in bad],
          node_errors={"negative_shape": "Shape",
                       "negative_chunks": "Shape", "float_shape": "Shape",
                       "huge_shape": "TooLarge", "overflow_u64": "Shape",
                       "rank_mismatch": "Shape", "too_many_dims": "Shape"},
          log=["huge_chunks: data cannot be read"], max_alloc=1 << 22)

    s = Store("shapes_v3")
    s.put("zarr.json", {"zarr_format": 3, "node_type": "group"})
    s.good_v3()
    bad = {
        "zero_chunks": v3_array([6], [0]),
        "negative_shape": v3_array([-1], [4]),
        "huge_shape": v3_array([2 ** 63, 4], [1, 1]),
        "overflow_chunks": v3_array([6], [2 ** 64 + 1]),
        "huge_empty": v3_array([2 ** 40, 2 ** 40, 0], [1, 1, 1]),
    }
    readable = {"zero_chunks": "0000" * 6, "huge_empty": ""}
    for name, doc in bad.items():
        s.put(f"{name}/zarr.json", doc)
    entry(s, "v3 shapes zero, negative, huge, overflowing (a chunk size 0 reads as 1, as "
          "zarr-python 3.4 reads it; axes whose product overflows beside an empty one hold "
          "nothing)",
          bytes={"good": GOOD_HEX, **readable},
          eio=[n for n in bad if n not in readable], max_alloc=1 << 22,
          node_errors={"negative_shape": "Shape",
                       "huge_shape": "TooLarge", "overflow_chunks": "Shape"})


def dtype_stores():
    s = Store("dtypes_huge")
    s.v2_group()
    s.good()
    bad = {
        "u_overflow": zarray([6], [4], dtype=">U4611686018427387904", fill_value=None),
        "u_huge": zarray([6], [4], dtype=">U1000000000", fill_value=None),
        "s_huge": zarray([6], [4], dtype="|S99999999999", fill_value=None),
        "v_huge": zarray([6], [4], dtype="|V2000000", fill_value=None),
        "struct_huge": zarray([6], [4], dtype=[["a", ">i4", [1000000, 1000000]]],
                              fill_value=None),
        "struct_zero_size": zarray([6], [4], dtype=[["a", "|S0", [2 ** 62]]], fill_value=None),
    }
    for name, doc in bad.items():
        s.put(f"{name}/.zarray", doc)
    entry(s, "huge and overflowing data types: refused before anything is allocated",
          eio=list(bad), node_errors={n: "TooLarge" for n in bad}, max_alloc=1 << 22)

    s = Store("dtypes_bad")
    s.v2_group()
    s.good()
    s.put("datetime/.zarray", zarray([6], [4], dtype="<M8[fortnight]"))
    s.put("empty/.zarray", zarray([6], [4], dtype=""))
    s.put("number/.zarray", zarray([6], [4], dtype=4))
    s.put("fill_text/.zarray", zarray([6], [4], fill_value="abc"))
    s.put("fill_range/.zarray", zarray([6], [4], dtype="|u1", fill_value=300))
    s.put("object_no_codec/.zarray", zarray([6], [4], dtype="|O"))
    entry(s, "unknown or malformed data types and fill values that do not fit",
          eio=["datetime", "empty", "number", "fill_text", "fill_range", "object_no_codec"],
          node_errors={"datetime": "DataType", "empty": "DataType", "number": "DataType",
                       "fill_text": "FillValue", "fill_range": "FillValue",
                       "object_no_codec": "DataType"})

    s = Store("dtypes_v3_huge")
    s.put("zarr.json", {"zarr_format": 3, "node_type": "group"})
    s.good_v3()
    s.put("raw_huge/zarr.json", v3_array([6], [4], data_type="r8000000000", fill_value=None))
    s.put("raw_odd/zarr.json", v3_array([6], [4], data_type="r7"))
    entry(s, "v3 raw types too large or not whole bytes", eio=["raw_huge", "raw_odd"],
          node_errors={"raw_huge": "TooLarge", "raw_odd": "DataType"})


def codec_stores():
    s = Store("codecs_unsupported")
    s.v2_group()
    s.good()
    # A raw stream (format 3) needs its filter chain, which zarrfs does not take.
    s.put("lzma/.zarray", zarray([6], [4], compressor={"id": "lzma", "format": 3, "preset": 1}))
    s.put("lzma/0", b"\xfd7zXZ\x00\x00")
    s.put("nosuch/.zarray", zarray([6], [4], compressor={"id": "nosuch"}))
    s.put("nosuch/0", b"\x00" * 8)
    entry(s, "codecs zarrfs cannot decode: the files keep their real size (6 x 2 bytes, so tar "
             "and cp notice) and reads fail with EIO",
          eio=["lzma", "nosuch"], size={"lzma": 12, "nosuch": 12},
          log=["lzma: data cannot be read", "nosuch: data cannot be read"])


def unsupported_stores():
    s = Store("unsupported_v3")
    s.put("zarr.json", {"zarr_format": 3, "node_type": "group"})
    s.good_v3()
    s.put("grid/zarr.json", {**v3_array([6], [4]), "chunk_grid": {"name": "hexagonal"}})
    s.put("keys/zarr.json", {**v3_array([6], [4]), "chunk_key_encoding": {"name": "hashed"}})
    s.put("transformer/zarr.json",
          {**v3_array([6], [4]), "storage_transformers": [{"name": "offset"}]})
    entry(s, "valid v3 metadata asking for what zarrfs does not implement",
          eio=["grid", "keys", "transformer"],
          node_errors={"grid": "Unsupported", "keys": "Unsupported", "transformer": "Unsupported"})

    s = Store("root_array_bomb")
    s.put(".zarray", zarray([16], [16], dtype="|u1", compressor=CODECS["zstd"]))
    s.put("0", encode(CODECS["zstd"], bytes(BOMB_BYTES)))
    entry(s, "the root itself is an array whose chunk is a bomb: the mount shows it, reads EIO",
          bytes={}, eio=["root"], dirs={"": ["root", "root.json", "root.npy"]},
          max_alloc=BOMB_MAX_ALLOC)


def chunk_stores():
    padded = np.concatenate([GOOD, np.zeros(2, "<i2")]).tobytes()
    for cid in [None, "zlib", "zstd"]:
        name = cid or "raw"
        s = Store(f"chunks_damaged_{name}")
        s.v2_group()
        comp = CODECS.get(cid)
        s.good(compressor=comp)
        first = encode(comp, padded[:8])
        s.put("truncated/.zarray", zarray([6], [4], compressor=comp))
        s.put("truncated/0", first)
        s.put("truncated/1", encode(comp, padded[8:])[:-3])
        s.put("oversize/.zarray", zarray([6], [4], compressor=comp))
        s.put("oversize/0", first)
        s.put("oversize/1", encode(comp, padded[8:] + b"\x07" * 8))
        s.put("corrupt/.zarray", zarray([6], [4], compressor=comp))
        s.put("corrupt/0", first)
        s.put("corrupt/1", bytes(b ^ 0x5A for b in encode(comp, padded[8:])))
        entry(s, f"{name} chunks cut short, too long, corrupt: EIO for that chunk only",
              eio=["truncated", "oversize"] + (["corrupt"] if cid else []),
              reads=[[n, 0, 8, GOOD_HEX[:16]] for n in ["truncated", "oversize", "corrupt"]]
              + [["truncated", 8, 4, None], ["oversize", 8, 4, None]]
              + ([["corrupt", 8, 4, None]] if cid else []))


def bomb_stores():
    zeros = bytes(BOMB_BYTES)
    for cid in ["zlib", "gzip", "zstd", "blosc", "lz4", "bz2"]:
        s = Store(f"bomb_v2_{cid}")
        s.v2_group()
        comp = CODECS[cid]
        s.good(compressor=comp)
        s.put("bomb/.zarray", zarray([16], [16], dtype="|u1", compressor=comp))
        if cid == "bz2":
            # bzip2 decoding needs up to 3.6 MB of working memory for its 900k blocks, whatever
            # the output: this bomb inflates to 64 MiB, and a read may use 8 MiB.
            s.put("bomb/0", encode(comp, bytes(16 * BOMB_BYTES)))
            entry(s, "a bz2 chunk of 16 bytes that inflates to 64 MiB: EIO, no 64 MiB allocation",
                  eio=["bomb"], max_alloc=8 * BOMB_MAX_ALLOC)
            continue
        s.put("bomb/0", encode(comp, zeros))
        entry(s, f"a {cid} chunk of 16 bytes that inflates to 4 MiB: EIO, no 4 MiB allocation",
              eio=["bomb"], max_alloc=BOMB_MAX_ALLOC)
    s = Store("bomb_v2_lz4_lying_header")
    s.v2_group()
    s.good(compressor=CODECS["lz4"])
    s.put("bomb/.zarray", zarray([16], [16], dtype="|u1", compressor=CODECS["lz4"]))
    s.put("bomb/0", struct.pack("<I", 16) + encode(CODECS["lz4"], zeros)[4:])
    entry(s, "an lz4 chunk whose header claims 16 bytes and whose block inflates to 4 MiB",
          eio=["bomb"], max_alloc=BOMB_MAX_ALLOC)
    for name, codec in V3_CODECS.items():
        s = Store(f"bomb_v3_{name}")
        s.put("zarr.json", {"zarr_format": 3, "node_type": "group"})
        codecs = [{"name": "bytes", "configuration": {"endian": "little"}}, codec]
        s.good_v3(codecs=codecs)
        s.put("bomb/zarr.json", v3_array([16], [16], data_type="uint8", codecs=codecs))
        s.put("bomb/c/0", v3_encode(codecs, zeros))
        entry(s, f"a v3 {name} chunk of 16 bytes that inflates to 4 MiB",
              eio=["bomb"], max_alloc=BOMB_MAX_ALLOC)


def checksum_stores():
    padded = np.concatenate([GOOD, np.zeros(2, "<i2")]).tobytes()
    for cid in ["fletcher32", "adler32", "crc32"]:
        s = Store(f"checksum_{cid}")
        s.v2_group()
        comp = CODECS[cid]
        s.good(compressor=comp)
        s.put("flipped/.zarray", zarray([6], [4], compressor=comp))
        s.put("flipped/0", encode(comp, padded[:8]))
        damaged = bytearray(encode(comp, padded[8:]))
        damaged[0] ^= 1
        damaged[-1] ^= 1
        s.put("flipped/1", bytes(damaged))
        entry(s, f"a {cid} checksum mismatch: EIO for that chunk only", eio=["flipped"],
              reads=[["flipped", 0, 8, GOOD_HEX[:16]], ["flipped", 8, 2, None]])
    s = Store("checksum_crc32c_v3")
    s.put("zarr.json", {"zarr_format": 3, "node_type": "group"})
    codecs = [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]
    s.good_v3(codecs=codecs)
    s.put("flipped/zarr.json", v3_array([6], [4], codecs=codecs))
    s.put("flipped/c/0", v3_encode(codecs, padded[:8]))
    damaged = bytearray(v3_encode(codecs, padded[8:]))
    damaged[2] ^= 0x80
    s.put("flipped/c/1", bytes(damaged))
    entry(s, "a v3 crc32c mismatch", eio=["flipped"],
          reads=[["flipped", 0, 8, GOOD_HEX[:16]], ["flipped", 8, 2, None]])


def trailing_checksum_stores():
    """Chunks of 384 KiB whose only damage is in the checksum their stream ends with (a zstd
    frame's content checksum, gzip's CRC-32): not even their first bytes are served, though
    they decode before the check is reached (random bits, one per byte, so that zstd's first
    128 KiB block is complete long before the frame's end)."""
    n = 3 << 17
    raw = np.random.default_rng(7).integers(0, 2, n, dtype=np.uint8).tobytes()
    zstd_checked = numcodecs.Zstd(level=3, checksum=True).encode(raw)
    for name, codec, encoded, last in [
        ("zstd", {"name": "zstd", "configuration": {"level": 3, "checksum": True}}, zstd_checked, 1),
        ("gzip", V3_CODECS["gzip"], gzip.compress(raw, 6, mtime=0), 5),
    ]:
        s = Store(f"trailing_checksum_{name}_v3")
        s.put("zarr.json", {"zarr_format": 3, "node_type": "group"})
        codecs = [{"name": "bytes", "configuration": {"endian": "little"}}, codec]
        s.good_v3(codecs=codecs)
        s.put("flipped/zarr.json", v3_array([2 * n], [n], data_type="uint8", codecs=codecs))
        s.put("flipped/c/0", encoded)
        damaged = bytearray(encoded)
        damaged[-last] ^= 1
        s.put("flipped/c/1", bytes(damaged))
        first = raw[:8].hex()
        entry(s, f"a v3 {name} chunk whose trailing checksum does not match: EIO for all of it",
              eio=["flipped"],
              reads=[["flipped", 0, 8, first], ["flipped", n, 8, None],
                     [f"flipped[{n}:{n + 8}]", 0, 8, None], ["flipped[0:8]", 0, 8, first]])


def zstd_frame_without_size(blocks):
    """A zstd frame whose header states no content size (128 KiB window, no checksum), of
    `blocks`: bytes for a raw block, (byte, count) for an RLE block of `count` copies."""
    out = bytearray(struct.pack("<I", 0xFD2FB528) + bytes([0x00, (17 - 10) << 3]))
    for i, block in enumerate(blocks):
        last = int(i == len(blocks) - 1)
        if isinstance(block, bytes):
            out += (last | len(block) << 3).to_bytes(3, "little") + block
        else:
            byte, count = block
            out += (last | 1 << 1 | count << 3).to_bytes(3, "little") + bytes([byte])
    return bytes(out)


def wrong_length_zstd_stores():
    """zstd chunks (no content checksum, so they decode step by step) that decode to the wrong
    length: one whose frame states half the chunk's length, one whose frame states no length
    and runs past the chunk after its first steps. A read of their first bytes is EIO as a
    whole read is: a decode stopped early never sees where the data ends."""
    n = 1 << 19
    s = Store("wrong_length_zstd_v3")
    s.put("zarr.json", {"zarr_format": 3, "node_type": "group"})
    codecs = [{"name": "bytes", "configuration": {"endian": "little"}},
              {"name": "zstd", "configuration": {"level": 3, "checksum": False}}]
    s.good_v3(codecs=codecs)
    s.put("wrong/zarr.json", v3_array([3 * n], [n], data_type="uint8", codecs=codecs))
    s.put("wrong/c/0", numcodecs.Zstd(level=3).encode(bytes(n // 2)))
    head = bytes(i % 251 for i in range(600))
    s.put("wrong/c/1", zstd_frame_without_size([head] + [(7, 1 << 17)] * 4))
    good = (np.arange(n) % 251).astype("u1").tobytes()
    s.put("wrong/c/2", numcodecs.Zstd(level=3).encode(good))
    entry(s, "v3 zstd chunks that decode short, or past the chunk with no stated size: EIO "
             "for all of them, even their first bytes; the next chunk reads right",
          eio=["wrong"],
          reads=[["wrong", 0, 8, None], ["wrong", n, 8, None], ["wrong", 2 * n, 8, good[:8].hex()],
                 ["wrong", 3 * n - 8, 8, good[-8:].hex()], ["wrong[0:8]", 0, 8, None],
                 [f"wrong[{n}:{n + 8}]", 0, 8, None]])


def shard(entries, inner, index_crc=True, cut=0):
    """A shard of the inner chunks `inner` (bytes) and an index of `entries` (offset, nbytes)."""
    data = b"".join(inner)
    index = b"".join(struct.pack("<QQ", o, n) for o, n in entries)
    if index_crc:
        index += struct.pack("<I", crc32c(index))
    out = data + index
    return out[:len(out) - cut] if cut else out


# Shards of two inner chunks of 4 bytes, index (with its crc32c) at the end.
SHARDED = [{
    "name": "sharding_indexed",
    "configuration": {
        "chunk_shape": [4],
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                         {"name": "crc32c"}],
        "index_location": "end",
    },
}]


def shard_stores():
    inner = [bytes(range(1, 5)), bytes(range(5, 9))]
    healthy = shard([(0, 4), (4, 4)], inner)
    into_index = (inner[0] + inner[1][2:4] + struct.pack("<QQ", 0, 4)[:2]).hex()
    variants = {
        "out_of_range": (shard([(0, 4), (1000, 4)], inner), None,
                         "an index entry beyond the shard's end"),
        "overflowing": (shard([(0, 4), (2 ** 64 - 2, 4)], inner), None,
                        "an index entry whose end overflows 64 bits"),
        "wrong_size": (shard([(0, 4), (4, 3)], inner), None,
                       "an index entry of 3 bytes for a 4-byte inner chunk"),
        "crc_mismatch": (healthy[:-1] + bytes([healthy[-1] ^ 1]), None,
                         "an index whose crc32c does not match"),
        "truncated_index": (shard([(0, 4), (4, 4)], inner, cut=20), None,
                            "a shard shorter than its index"),
        "overlapping": (shard([(0, 4), (0, 4)], inner), "0102030401020304",
                        "two index entries sharing bytes (valid: both read them)"),
        "into_index": (shard([(0, 4), (6, 4)], inner), into_index,
                       "an entry overlapping the index (valid: it reads what lies there)"),
    }
    for name, (blob, expected, doc) in variants.items():
        s = Store(f"shard_{name}")
        s.put("zarr.json", {"zarr_format": 3, "node_type": "group"})
        s.put("healthy/zarr.json", v3_array([8], [8], data_type="uint8", codecs=SHARDED))
        s.put("healthy/c/0", healthy)
        s.put("bad/zarr.json", v3_array([8], [8], data_type="uint8", codecs=SHARDED))
        s.put("bad/c/0", blob)
        s.good_v3()
        ok = {"good": GOOD_HEX, "healthy": "0102030405060708"}
        if expected is not None:
            entry(s, doc, bytes={**ok, "bad": expected})
        elif name == "wrong_size":
            entry(s, doc, bytes=ok, eio=["bad"],
                  reads=[["bad", 0, 4, "01020304"], ["bad", 4, 4, None]])
        else:
            entry(s, doc, bytes=ok, eio=["bad"],
                  reads=[["bad", 0, 4, None]])


def key_stores():
    good_meta = zarray([6], [4])
    s = Store("keys_zmetadata_escape")
    s.v2_group()
    s.good()
    s.put(".zmetadata", {"zarr_consolidated_format": 1, "metadata": {
        ".zgroup": {"zarr_format": 2},
        "good/.zarray": good_meta,
        "../../escape/.zarray": good_meta,
        "/abs/.zgroup": {"zarr_format": 2},
        "": {"zarr_format": 2},
        "a//b/.zgroup": {"zarr_format": 2},
        "./dot/.zgroup": {"zarr_format": 2},
        "back\\slash/.zarray": good_meta,
    }})
    entry(s, "consolidated v2 keys that leave the store: refused one by one, no stack overflow",
          dirs={"": [".group.json", "good", "good.json", "good.npy"]},
          log=['refused key "../../escape/.zarray"', 'refused key "/abs/.zgroup"',
               'refused key ""', 'refused key "back\\\\slash/.zarray"'])

    s = Store("keys_v3_consolidated_escape")
    good_v3 = v3_array([6], [4])
    s.put("zarr.json", {"zarr_format": 3, "node_type": "group", "attributes": {},
                        "consolidated_metadata": {"kind": "inline", "must_understand": False,
                                                  "metadata": {
                                                      "": {"zarr_format": 3, "node_type": "group"},
                                                      "..": {"zarr_format": 3,
                                                             "node_type": "group"},
                                                      "../x": good_v3,
                                                      "/abs": good_v3,
                                                      "good": good_v3}}})
    s.good_v3()
    entry(s, "a v3 consolidated key \"\" (once a child joining back to the root: endless walk)",
          dirs={"": [".group.json", "good", "good.json", "good.npy"]},
          log=['refused key ""', 'refused key ".."', 'refused key "../x"'])

    s = Store("keys_nczarr_lists")
    s.put(".zgroup", {"zarr_format": 2})
    s.put(".zattrs", {"_nczarr_superblock": {"version": "2.0.0"}, "_nczarr_group": {
        "dimensions": {}, "arrays": ["good", "..", "../x", "", "a/b", "good"],
        "groups": ["/abs", "."]}})
    s.good()
    s.put("unlisted/.zarray", good_meta)
    entry(s, "NCZarr gen-4 lists naming escaping children (and omitting one, which the lists "
             "hide as netCDF does)",
          dirs={"": [".group.json", "good", "good.json", "good.npy"]},
          log=['refused key ".."', 'refused key "../x"', 'refused key "a/b"',
               'refused key "/abs"', "NCZarr group list"])

    s = Store("keys_nczarr_gen1")
    s.put(".nczarr", {"zarr_format": 2, "nczarr_version": "1.0.0"})
    s.put(".zgroup", {"zarr_format": 2})
    s.put(".nczgroup", {"dims": {}, "vars": ["good", "../../etc"], "groups": ["/abs", ""]})
    s.good()
    entry(s, "gen-1 .nczgroup lists naming escaping children",
          dirs={"": [".group.json", "good", "good.json", "good.npy"]},
          log=['refused key "../../etc"', 'refused key "/abs"'])

    s = Store("keys_zip_members", zip_file=True)
    s.v2_group()
    s.good()
    s.put("../evil/.zarray", good_meta)
    s.put("/abs/.zgroup", {"zarr_format": 2})
    s.put("x/../../up/.zgroup", {"zarr_format": 2})
    s.put("back\\slash/.zarray", good_meta)
    entry(s, "zip member names that leave the store",
          dirs={"": [".group.json", "good", "good.json", "good.npy"]},
          log=['refused key "../evil/.zarray"', 'refused key "/abs/.zgroup"'])

    s = Store("keys_v3_draft")
    s.put("zarr.json", {"zarr_format": "https://purl.org/zarr/spec/protocol/core/3.0",
                        "metadata_encoding": "https://purl.org/zarr/spec/protocol/core/3.0",
                        "metadata_key_suffix": ".json", "extensions": []})
    s.put("meta/root.group.json", {"attributes": {}})
    draft = {"shape": [6], "data_type": "<i2", "chunk_memory_layout": "C", "fill_value": 0,
             "chunk_grid": {"type": "regular", "chunk_shape": [4], "separator": "/"},
             "compressor": None, "extensions": [], "attributes": {}}
    s.put("meta/root/good.array.json", draft)
    s.put("meta/root/.array.json", draft)
    s.put("meta/root/sub/.group.json", {"attributes": {}})
    padded = np.concatenate([GOOD, np.zeros(2, "<i2")]).tobytes()
    s.put("data/root/good/c0", padded[:8])
    s.put("data/root/good/c1", padded[8:])
    entry(s, "v3 draft documents whose names make an empty path",
          dirs={"": [".group.json", "good", "good.json", "good.npy"]},
          log=['refused key ""'])


def zip_stores():
    chunks = np.arange(12, dtype="<i2").tobytes()
    inner = [bytes(range(1, 5)), bytes(range(5, 9)), bytes(range(9, 13)), bytes(range(13, 17))]

    def bad(s):
        """`bad`, int16 0..11 in three chunks, and `sharded`, uint8 1..16 in two shards."""
        s.v2_group()
        s.good()
        s.put("bad/.zarray", zarray([12], [4]))
        for i in range(3):
            s.put(f"bad/{i}", chunks[8 * i:8 * i + 8])
        s.put("sharded/zarr.json", v3_array([16], [8], data_type="uint8", codecs=SHARDED))
        s.put("sharded/c/0", shard([(0, 4), (4, 4)], inner[:2]))
        s.put("sharded/c/1", shard([(0, 4), (4, 4)], inner[2:]))

    first, third = ["bad", 0, 8, chunks[:8].hex()], ["bad", 16, 8, chunks[16:].hex()]
    shard0 = ["sharded", 0, 8, b"".join(inner[:2]).hex()]
    for name, method, level in [("stored", zipfile.ZIP_STORED, None),
                                ("deflated", zipfile.ZIP_DEFLATED, 0)]:
        s = Store(f"zip_crc_{name}", zip_file=True, method=method, level=level)
        bad(s)
        s.damage += [("bad/1", "data"), ("sharded/c/1", "data")]
        entry(s, f"{name} members with a byte changed since they were written (only their CRC-32 "
                 "tells): EIO for the chunk, and for every inner chunk of the shard; their "
                 "neighbours read",
              reads=[first, ["bad", 8, 8, None], third, shard0, ["sharded", 8, 4, None],
                     ["sharded", 12, 4, None]],
              log=["bad/1: CRC-32", "sharded/c/1: CRC-32"])

    s = Store("zip_bad_local_header", zip_file=True)
    bad(s)
    s.damage.append(("bad/1", "local_header"))
    entry(s, "a member whose local header is not one: EIO for that chunk alone",
          reads=[first, ["bad", 8, 8, None], third, shard0],
          log=["bad/1: local header"])

    for name, method in [("lzma", zipfile.ZIP_LZMA), ("bzip2", zipfile.ZIP_BZIP2)]:
        s = Store(f"zip_{name}", zip_file=True, method=method)
        bad(s)
        entry(s, f"members compressed with {name} (Python's zipfile writes it): read whole, and "
                 "in part (shards)",
              bytes={"good": GOOD_HEX, "bad": chunks.hex(), "sharded": b"".join(inner).hex()})

    s = Store("zip_bomb_bzip2", zip_file=True, method=zipfile.ZIP_BZIP2)
    s.v2_group()
    s.good()
    s.put("bomb/.zarray", zarray([16], [16], dtype="|u1"))
    s.put("bomb/0", Zeros(1 << 30))
    s.put("bomb_shard/zarr.json", v3_array([8], [8], data_type="uint8", codecs=SHARDED))
    s.put("bomb_shard/c/0", Zeros(1 << 30))
    # The good chunks are bzip2 members too: their decoder takes 3.6 MB whatever the output.
    entry(s, "a chunk and a shard of 1 GiB each, bzip2-compressed to a few hundred bytes: EIO, "
             "nothing inflated",
          eio=["bomb", "bomb_shard"], max_alloc=8 * BOMB_MAX_ALLOC,
          log=["read in part only up to"])


def name_stores():
    s = Store("names_control_characters", zip_file=True)
    s.v2_group()
    s.good()
    for name in ["tab\there", "new\nline", "bell\x07", "esc\x1b[31mred"]:
        s.good(prefix=name)
    s.good(prefix="n" * 300)
    s.put("back\\slash/.zarray", zarray([6], [4]))
    entry(s, "names with control characters show as they are; a 300-byte name and a backslash "
             "do not",
          bytes={"good": GOOD_HEX, "tab\there": GOOD_HEX, "new\nline": GOOD_HEX,
                 "bell\x07": GOOD_HEX, "esc\x1b[31mred": GOOD_HEX},
          absent=["n" * 300, "back\\slash"], log=["longer than 255 bytes", "back\\\\slash"])

    s = Store("names_sidecar_collision")
    s.v2_group()
    s.good()
    s.v2_group("g")
    s.good(prefix="g/a")
    s.v2_group("g/a.json")
    entry(s, "a group named like its sibling array's sidecar is shown instead of the sidecar, "
             "and the log names it with its group",
          bytes={"good": GOOD_HEX, "g/a": GOOD_HEX},
          dirs={"g": [".group.json", "a", "a.json", "a.npy"], "g/a.json": [".group.json"]},
          log=["g/a.json: a node has this name, so it is shown instead of the sidecar"])


def main():
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    bad_json_stores()
    shape_stores()
    dtype_stores()
    codec_stores()
    unsupported_stores()
    chunk_stores()
    bomb_stores()
    checksum_stores()
    trailing_checksum_stores()
    wrong_length_zstd_stores()
    shard_stores()
    key_stores()
    zip_stores()
    name_stores()
    (OUT / "manifest.json").write_text(json.dumps({"stores": MANIFEST}, indent=1,
                                                  ensure_ascii=True) + "\n")
    size = sum(p.stat().st_size for p in OUT.rglob("*") if p.is_file())
    print(f"{len(MANIFEST)} stores, {size} bytes in {OUT}")


if __name__ == "__main__":
    main()
