#!/usr/bin/env python3
"""Generate the zarrfs test fixtures (tests/fixtures/) and examples/demo.zarr.

Run from anywhere:

    python3 scripts/make_fixtures.py

The outputs are committed; the Rust tests never run this script.  It deletes and
rewrites everything it owns:

  * tests/fixtures/*  EXCEPT tests/fixtures/codecs/ and tests/fixtures/dialects/
    (those belong to other people and are never touched);
  * examples/demo.zarr

Every store is written by a real Zarr client; metadata is hand-edited only where
no client writes what we need, and each such edit is listed in the manifest's
"note" fields.  tests/fixtures/manifest.json is the contract the Rust tests read
(see the bottom of this file for its schema).

Clients (exact versions are checked; pass --allow-other-versions to override,
but then the committed bytes will change):

  * system python3 (3.11):   zarr 3.1.6, numcodecs 0.16.6, numpy 2.4.6
  * zarr-python 2 venv:      zarr 2.18.7, numcodecs 0.15.2, numpy 1.26.4
    Recreate it with:

        python3 -m venv /work/venvs/zarr2
        /work/venvs/zarr2/bin/pip install 'zarr==2.18.7' 'numcodecs==0.15.2' 'numpy==1.26.4'

    (override the interpreter path with the ZARR2_PYTHON environment variable).
    This same file is run by that interpreter as a worker
    (`make_fixtures.py --zarr2-worker MODE ARG...`) to write and read back the
    stores written by zarr-python 2.

Determinism: all data comes from fixed seeds; the wall clock is frozen
(time.time() returns FIXED_TIME and TZ=UTC) because gzip headers and ZIP entries
carry timestamps; chunks are written one at a time so ZIP entry order is fixed.
"""

import os
import sys
import time

# --- freeze the clock before anything else imports `time` users ------------
FIXED_TIME = 1704067200.0  # 2024-01-01T00:00:00Z
os.environ["TZ"] = "UTC"
time.tzset()
time.time = lambda: FIXED_TIME  # gzip mtime, zip entry timestamps

import base64  # noqa: E402
import hashlib  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import posixpath  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import warnings  # noqa: E402
import zipfile  # noqa: E402

import numpy as np  # noqa: E402
import numcodecs  # noqa: E402
import zarr  # noqa: E402  (zarr 3 in the system python, zarr 2 in the worker)

warnings.filterwarnings("ignore")

ZARR2_WORKER = "--zarr2-worker" in sys.argv
EXPECT_VERSIONS = (
    {"zarr": "2.18.7", "numcodecs": "0.15.2", "numpy": "1.26.4"}
    if ZARR2_WORKER
    else {"zarr": "3.1.6", "numcodecs": "0.16.6", "numpy": "2.4.6"}
)
ZARR2_PYTHON = os.environ.get("ZARR2_PYTHON", "/work/venvs/zarr2/bin/python")

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
FIXTURES = os.path.join(REPO, "tests", "fixtures")
EXPECTED = os.path.join(FIXTURES, "expected")
DEMO = os.path.join(REPO, "examples", "demo.zarr")
NOT_OURS = {"codecs", "dialects"}  # subdirectories of tests/fixtures owned by others

NAN = float("nan")
INF = float("inf")


def versions():
    return {"zarr": zarr.__version__, "numcodecs": numcodecs.__version__, "numpy": np.__version__}


def check_versions():
    v = versions()
    if v != EXPECT_VERSIONS and "--allow-other-versions" not in sys.argv:
        sys.exit(f"version mismatch: have {v}, expected {EXPECT_VERSIONS} "
                 "(pass --allow-other-versions to go on anyway)")


# =============================================================================
# helpers shared by both interpreters (numpy only)
# =============================================================================

def to_le(a):
    """Little-endian, C-contiguous copy (structured fields converted too)."""
    a = np.asarray(a)
    dt = a.dtype.newbyteorder("<")  # recursive for structured/sub-array dtypes
    return np.array(a.astype(dt), order="C", copy=True)


def sem_equal(a, b):
    """Value equality; NaN == NaN; works field by field for structured dtypes."""
    if a.shape != b.shape:
        return False
    if a.dtype.names:
        if a.dtype.names != b.dtype.names:
            return False
        return all(sem_equal(a[n], b[n]) for n in a.dtype.names)
    if a.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True))
    if a.dtype.kind == "V":
        return a.tobytes() == b.tobytes()
    return bool(np.array_equal(a, b))


def check_expected(npy_path, got):
    """np.load(npy) must equal the client's read `got` (values and LE bytes)."""
    exp = np.load(npy_path, allow_pickle=False)
    got = np.asarray(got)
    assert exp.shape == got.shape, (npy_path, exp.shape, got.shape)
    assert exp.dtype == got.dtype.newbyteorder("<"), (npy_path, exp.dtype, got.dtype)
    assert exp.flags.c_contiguous
    assert sem_equal(exp, got), npy_path
    assert exp.tobytes() == to_le(got).tobytes(), npy_path


def gen(dt, shape, rng):
    """Deterministic test values for any numpy dtype (with special values)."""
    dt = np.dtype(dt)
    shape = tuple(shape)
    n = int(np.prod(shape, dtype=np.int64))
    if dt.subdtype is not None:
        base, sub = dt.subdtype
        return gen(base, shape + sub, rng)
    if dt.names:
        out = np.zeros(shape, dt)
        for name in dt.names:
            out[name] = gen(dt.fields[name][0], shape, rng)
        return out
    k = dt.kind
    if k == "b":
        return rng.random(shape) < 0.5
    if k in "iu":
        info = np.iinfo(dt)
        v = rng.integers(int(info.min), int(info.max), size=shape, endpoint=True,
                         dtype=dt.newbyteorder("="))
        if n >= 2:
            v.flat[0] = info.min
            v.flat[n - 1] = info.max
        return v.astype(dt)
    if k == "f":
        v = (rng.standard_normal(shape) * 1000).astype(dt.newbyteorder("="))
        specials = [NAN, INF, -INF, -0.0, float(np.finfo(dt).tiny) / 4]
        if n > 2 * len(specials):
            for i, s in enumerate(specials):
                v.flat[1 + 2 * i] = s
        return v.astype(dt)
    if k == "c":
        ft = np.dtype(f"f{dt.itemsize // 2}")
        v = (gen(ft, shape, rng) + 1j * (rng.standard_normal(shape) * 10).astype(ft))
        v = v.astype(dt.newbyteorder("="))
        if n > 4:
            v.flat[2] = complex(NAN, 1.0)
            v.flat[4] = complex(-INF, 0.5)
        return v.astype(dt)
    if k == "S":
        out = np.zeros(shape, dt)
        for i in range(n):
            ln = int(rng.integers(0, dt.itemsize, endpoint=True))
            out.flat[i] = bytes(rng.integers(1, 256, size=ln, dtype=np.uint8).tolist())
        return out
    if k == "U":
        alphabet = list("aZ09 _é€中ÿ") + ["\U0001F600", "\U0001D11E"]
        out = np.zeros(shape, dt)
        for i in range(n):
            ln = int(rng.integers(0, dt.itemsize // 4, endpoint=True))
            out.flat[i] = "".join(alphabet[j] for j in rng.integers(0, len(alphabet), size=ln))
        return out
    if k == "V":
        raw = rng.integers(0, 256, size=n * dt.itemsize, dtype=np.uint8)
        return raw.view(dt).reshape(shape)
    raise TypeError(dt)


def chunk_slices(shape, chunks):
    grid = [range(math.ceil(s / c)) for s, c in zip(shape, chunks)]
    for idx in itertools.product(*grid):
        yield idx, tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(idx, chunks, shape))


def write_chunks(arr, data, skip=()):
    """Write `data` chunk by chunk (fixed order), leaving chunks in `skip` unwritten.

    skip may be a set of chunk-grid index tuples or the string "all"."""
    shape = tuple(arr.shape)
    chunks = tuple(arr.chunks)
    data = np.asarray(data)
    assert data.shape == shape
    if shape == ():
        if skip != "all":
            arr[...] = data
        return
    n_written = 0
    for idx, sl in chunk_slices(shape, chunks):
        if skip == "all" or idx in skip:
            continue
        arr[sl] = data[sl]
        n_written += 1
    # every written chunk must be stored (zarr 3 drops chunks equal to the fill value)
    if zarr.__version__.startswith("2."):  # its nchunks_initialized misses nested keys
        prefix = arr.path + "/" if arr.path else ""
        stored = sum(1 for k in arr.store.keys() if k.startswith(prefix)
                     and not k.rsplit("/", 1)[-1].startswith("."))
    else:
        stored = arr.nchunks_initialized
    assert stored == n_written, (arr.name, stored, n_written)


# =============================================================================
# zarr-python 2 worker (runs inside /work/venvs/zarr2)
# =============================================================================

def z2_open_store(store_path, mode):
    if store_path.endswith(".zip"):
        return zarr.ZipStore(store_path, mode=mode)
    return zarr.DirectoryStore(store_path)


def z2_write_main_store(path):
    from numcodecs import BZ2, LZ4, Blosc, Delta, GZip, Shuffle, Zlib, Zstd
    rng = np.random.default_rng(2002)
    store = zarr.DirectoryStore(path)
    root = zarr.group(store=store, overwrite=True)
    root.attrs.put({"title": "written by zarr-python 2.18", "nested": {"list": [1, 2.5, None, True],
                    "unicode": "Grüße ☃"}})

    def arr(name, shape, chunks, dtype, fill_value=0, skip=(), data=None, **kw):
        kw.setdefault("compressor", None)
        a = root.create_dataset(name, shape=shape, chunks=chunks, dtype=dtype,
                                fill_value=fill_value, **kw)
        if data is None:
            data = gen(np.dtype(dtype), shape, rng)
        write_chunks(a, data, skip)
        return a

    # intermediate groups: zarr 2 writes .zgroup for grp and grp/sub
    a = arr("grp/sub/arr", (6, 4), (4, 3), "<i4", fill_value=-1, skip={(1, 1)},
            compressor=Blosc(cname="lz4", clevel=5, shuffle=Blosc.SHUFFLE))
    a.attrs.put({"long_name": "an array two groups down", "valid_range": [-10, 10]})
    root.create_group("empty_group")
    # structured dtypes with a sub-array field (zarr-python 3 cannot write these)
    arr("struct_subarray", (5,), (2,), [("x", "<i4"), ("v", "<f4", (2,))], fill_value=None)
    arr("struct_subarray_be", (5,), (2,), [("x", ">i4"), ("v", ">f4", (2,)), ("s", "|S2")],
        fill_value=np.array((-7, (1.5, -2.0), b"ff"),
                            dtype=[("x", ">i4"), ("v", ">f4", (2,)), ("s", "|S2")])[()],
        skip={(1,)})
    arr("struct", (5,), (2,), [("x", "<i4"), ("y", ">f8"), ("z", "|S3")],
        fill_value=(5, 1.0, b"ab"), skip={(2,)})
    # order F, edge chunks, missing chunks
    arr("f_order_2d", (7, 5), (3, 2), "<i8", fill_value=-9, order="F", skip={(1, 1)},
        compressor=Zlib(level=5))
    arr("f_order_3d", (5, 7, 3), (2, 3, 2), ">f4", fill_value=NAN, order="F",
        dimension_separator="/", skip={(0, 1, 1), (2, 2, 0)},
        compressor=Blosc(cname="zstd", clevel=3, shuffle=Blosc.BITSHUFFLE))
    arr("slash_sep", (5, 6), (2, 4), ">i2", fill_value=3, dimension_separator="/", skip={(0, 1)})
    # fill values
    arr("fill_null", (5,), (2,), "<f8", fill_value=None)  # every chunk written
    arr("fill_nan", (7,), (3,), "<f4", fill_value=NAN, skip={(1,)})
    arr("fill_inf", (7,), (3,), ">f8", fill_value=INF, skip={(0,)})
    arr("fill_neginf", (7,), (3,), "<f2", fill_value=-INF, skip={(2,)})
    arr("S6", (5,), (2,), "|S6", fill_value=b"zz\x01", skip={(1,)})
    arr("U4_be", (5,), (2,), ">U4", fill_value="añ", skip={(1,)})
    arr("V3", (5,), (2,), "|V3", fill_value=b"\x01\x02\x03", skip={(1,)})
    arr("b1", (5,), (2,), "|b1", fill_value=True, skip={(1,)})
    # zarr-python 2 decodes a complex fill [re, im] as re + 1j*im, which turns a NaN or
    # infinite imaginary part into NaN+NaNj: keep the imaginary part finite here.
    arr("c16_be", (5,), (2,), ">c16", fill_value=complex(-INF, 2.0), skip={(1,)})
    arr("u8_be", (5,), (2,), ">u8", fill_value=2**64 - 2, skip={(1,)})
    # shapes
    arr("scalar", (), (), "<i4", data=np.array(-123456, dtype="<i4"))
    arr("one", (1,), (1,), ">u2")
    arr("bigchunk", (3,), (10,), "<f8")
    # compressors and filters
    smooth = (np.arange(60) * 7 + rng.integers(0, 3, size=60)).astype("<i4").reshape(6, 10)
    arr("gzip", (6, 10), (4, 4), "<i4", data=smooth, compressor=GZip(level=5))
    arr("bz2", (6, 10), (4, 4), "<i4", data=smooth, compressor=BZ2(level=9))
    arr("lz4", (6, 10), (4, 4), "<i4", data=smooth, compressor=LZ4(acceleration=1))
    arr("zstd", (6, 10), (4, 4), "<i4", data=smooth, compressor=Zstd(level=3))
    arr("delta_zlib", (6, 10), (4, 4), "<i4", data=smooth, filters=[Delta(dtype="<i4")],
        compressor=Zlib(level=1))
    arr("shuffle_blosc", (6, 10), (4, 4), "<f8", data=smooth.astype("<f8") / 7,
        filters=[Shuffle(elementsize=8)],
        compressor=Blosc(cname="lz4hc", clevel=5, shuffle=Blosc.NOSHUFFLE))


def z2_write_zip(path):
    rng = np.random.default_rng(2003)
    zs = zarr.ZipStore(path, mode="w")
    root = zarr.group(store=zs)
    root.attrs.put({"title": "v2 zip store", "source": "zarr-python 2.18 ZipStore"})
    g = root.create_group("g")
    g.attrs.put({"kind": "subgroup"})
    a = root.create_dataset("x", shape=(7,), chunks=(3,), dtype="<i8", fill_value=0)
    write_chunks(a, gen(a.dtype, a.shape, rng))
    b = g.create_dataset("y", shape=(4, 5), chunks=(2, 2), dtype="<f4", fill_value=1.5,
                         dimension_separator="/")
    write_chunks(b, gen(b.dtype, b.shape, rng), skip={(1, 2)})
    c = g.create_dataset("s", shape=(3,), chunks=(2,), dtype="|S4", fill_value=b"--")
    write_chunks(c, gen(c.dtype, c.shape, rng))
    zs.close()


def zarr2_worker(argv):
    check_versions()
    mode = argv[0]
    if mode == "write":
        out = argv[1]
        z2_write_main_store(os.path.join(out, "v2_zarr2.zarr"))
        z2_write_zip(os.path.join(out, "v2_zip.zip"))
    elif mode == "dump":
        for job in json.load(open(argv[1])):
            st = z2_open_store(job["store"], "r")
            a = zarr.open_array(st, path=job["path"], mode="r")
            got = np.asarray(a[...])
            assert got.shape == a.shape
            np.save(job["out"], got)
            if hasattr(st, "close"):
                st.close()
    elif mode == "verify":
        for job in json.load(open(argv[1])):
            st = z2_open_store(job["store"], "r")
            a = zarr.open_array(st, path=job["path"], mode="r")
            check_expected(job["npy"], a[...])
            if hasattr(st, "close"):
                st.close()
        print(f"zarr2 worker: verified {len(json.load(open(argv[1])))} arrays")
    elif mode == "versions":
        print(json.dumps(versions()))
    else:
        sys.exit(f"unknown worker mode {mode}")


def run_worker(*args):
    r = subprocess.run([ZARR2_PYTHON, os.path.abspath(__file__), "--zarr2-worker", *args]
                       + (["--allow-other-versions"] if "--allow-other-versions" in sys.argv else []),
                       check=True, stdout=subprocess.PIPE, text=True,
                       env=dict(os.environ, TZ="UTC"))
    return r.stdout


# =============================================================================
# zarr-python 3 writers (system python)
# =============================================================================

def z3_local(path):
    return zarr.storage.LocalStore(path)


def z3_root(path, fmt, attrs=None):
    return zarr.open_group(z3_local(path), mode="w", zarr_format=fmt, attributes=attrs or {})


def make_arr(group, rng, name, shape, chunks, dtype, fill_value=0, skip=(), data=None, **kw):
    """create_array with explicit codecs (defaults: no compressor, no filters)."""
    kw.setdefault("compressors", None)
    kw.setdefault("filters", None)
    kw.setdefault("config", {"write_empty_chunks": True})  # only skipped chunks are missing
    a = group.create_array(name, shape=shape, chunks=chunks, dtype=dtype,
                           fill_value=fill_value, **kw)
    if data is None:
        data = gen(np.dtype(dtype), shape, rng)
    write_chunks(a, data, skip)
    return a


def edit_text(path, old, new):
    """Hand-edit a metadata file by exact text replacement (keeps the client's formatting)."""
    with open(path, encoding="utf-8") as f:
        txt = f.read()
    assert txt.count(old) == 1, (path, old)
    with open(path, "w", encoding="utf-8") as f:
        f.write(txt.replace(old, new))


V2_DTYPES = [
    # name, dtype, fill value (a chunk is left unwritten so the fill is observable)
    ("b1", "|b1", True),
    ("i1", "|i1", -3),
    ("u1", "|u1", 200),
    ("i2_le", "<i2", -300), ("i2_be", ">i2", 1234),
    ("i4_le", "<i4", -70000), ("i4_be", ">i4", 70000),
    ("i8_le", "<i8", -2**40), ("i8_be", ">i8", 2**62),
    ("u2_le", "<u2", 65535), ("u2_be", ">u2", 7),
    ("u4_le", "<u4", 4000000000), ("u4_be", ">u4", 1),
    ("u8_le", "<u8", 2**64 - 1), ("u8_be", ">u8", 2**63 + 5),
    ("f2_le", "<f2", 1.5), ("f2_be", ">f2", NAN),
    ("f4_le", "<f4", INF), ("f4_be", ">f4", -INF),
    ("f8_le", "<f8", NAN), ("f8_be", ">f8", -2.25),
    ("c8_le", "<c8", complex(1, -2)), ("c8_be", ">c8", complex(NAN, 0.5)),
    ("c16_le", "<c16", complex(INF, -INF)), ("c16_be", ">c16", complex(0.25, NAN)),
    ("S5", "|S5", b"fill"),
    ("U3_le", "<U3", "fé"), ("U3_be", ">U3", "x€"),
    ("V4", "|V4", b"\xde\xad\xbe\xef"),
    ("struct_le", [("x", "<i4"), ("y", "<f8"), ("z", "|S3")], (-1, 2.5, b"zz")),
    ("struct_be", [("x", ">i4"), ("y", ">f8"), ("z", "|S3")], (7, NAN, b"q")),
]


def build_v2_dtypes(path):
    rng = np.random.default_rng(1)
    root = z3_root(path, 2, {"description": "one array per dtype and byte order"})
    for name, dt, fv in V2_DTYPES:
        dt = np.dtype(dt)
        if dt.names:
            fv = np.array(fv, dtype=dt)[()]
        make_arr(root, rng, name, (5, 4), (2, 3), dt, fill_value=fv, skip={(1, 1)})
    make_arr(root, rng, "i4_fill_null", (5, 4), (2, 3), "<i4", fill_value=None)  # all chunks written
    make_arr(root, rng, "f8_be_fill_null", (5, 4), (2, 3), ">f8", fill_value=None)
    make_arr(root, rng, "i2_fill_zero", (5, 4), (2, 3), "<i2", fill_value=0, skip={(0, 0)})


def build_v2_layout(path):
    from numcodecs import Blosc, Zlib
    rng = np.random.default_rng(2)
    root = z3_root(path, 2, {"title": "v2 layouts", "nested": {"a": [1, {"b": None}], "ü": "ß"}})
    dot = {"name": "v2", "separator": "."}
    slash = {"name": "v2", "separator": "/"}
    make_arr(root, rng, "sep_dot", (6, 5), (4, 2), "<i4", fill_value=-1, skip={(1, 2)},
             chunk_key_encoding=dot)
    make_arr(root, rng, "sep_slash", (6, 5), (4, 2), "<i4", fill_value=-1, skip={(1, 2)},
             chunk_key_encoding=slash)
    make_arr(root, rng, "f_order_2d", (7, 5), (3, 2), "<f8", fill_value=-1.5, order="F",
             skip={(1, 1)}, chunk_key_encoding=slash)
    make_arr(root, rng, "f_order_3d", (5, 7, 3), (2, 3, 2), ">i4", fill_value=99, order="F",
             skip={(1, 2, 1)}, compressors=Zlib(level=3))
    make_arr(root, rng, "f_order_2d_blosc", (9, 4), (4, 3), "<u2", fill_value=7, order="F",
             skip={(2, 0)}, compressors=Blosc(cname="lz4", clevel=5, shuffle=Blosc.SHUFFLE))
    make_arr(root, rng, "f_order_4d", (2, 3, 4, 5), (1, 2, 3, 2), "|i1", fill_value=-5,
             order="F", skip={(1, 1, 1, 2)}, chunk_key_encoding=slash)
    make_arr(root, rng, "scalar", (), (), "<f8", data=np.array(3.25))
    make_arr(root, rng, "scalar_missing", (), (), ">i2", fill_value=42, skip="all")
    make_arr(root, rng, "one", (1,), (1,), "<u8")
    make_arr(root, rng, "bigchunk", (3, 5), (10, 10), "<i2", compressors=Zlib(level=1))
    make_arr(root, rng, "all_missing", (4, 4), (2, 2), "<f4", fill_value=NAN, skip="all")
    # implicit groups: zarr-python 3 writes no .zgroup for the parents of a path
    make_arr(root, rng, "implicit/sub/arr", (4,), (3,), "<i2", fill_value=5, skip={(1,)})
    make_arr(root, rng, "implicit/arr2", (3,), (3,), "|u1")
    g = root.create_group("grp", attributes={"long_name": "explicit group", "n": 3})
    make_arr(g, rng, "inner", (4, 3), (2, 2), ">f4", attributes={
        "units": "m s-1", "scale": [1.5, -2], "flags": {"ok": True, "missing": None},
        "desc": "vent du nord — ∂u/∂t"})
    root.create_group("empty_group")


def build_v2_codecs(path):
    from numcodecs import BZ2, LZ4, Blosc, Delta, GZip, Shuffle, Zlib, Zstd
    rng = np.random.default_rng(3)
    root = z3_root(path, 2)
    shape, chunks = (12, 10), (5, 4)
    ints = (np.arange(120) * 3 + rng.integers(0, 4, size=120)).reshape(shape).astype("<i4")
    flts = (np.sin(np.arange(120) / 9.0) * 100 + rng.standard_normal(120)).reshape(shape)

    def a(name, dt, data, **kw):
        make_arr(root, rng, name, shape, chunks, dt, data=np.asarray(data).astype(dt), **kw)

    a("zlib", "<i4", ints, compressors=Zlib(level=5))
    a("gzip", "<i4", ints, compressors=GZip(level=5))
    a("zstd", "<f8", flts, compressors=Zstd(level=3))
    a("bz2", "<i4", ints, compressors=BZ2(level=9))
    a("lz4", ">i4", ints, compressors=LZ4(acceleration=1))
    for cname in ["lz4", "lz4hc", "blosclz", "zlib", "zstd"]:
        for sname, shuf in [("noshuffle", Blosc.NOSHUFFLE), ("shuffle", Blosc.SHUFFLE),
                            ("bitshuffle", Blosc.BITSHUFFLE)]:
            a(f"blosc_{cname}_{sname}", "<f4", flts,
              compressors=Blosc(cname=cname, clevel=5, shuffle=shuf))
    a("blosc_lz4_shuffle_be_i8", ">i8", ints, compressors=Blosc(cname="lz4", clevel=5,
                                                                 shuffle=Blosc.SHUFFLE))
    a("shuffle_only", "<i4", ints, filters=[Shuffle(elementsize=4)])
    a("shuffle_zlib", ">f8", flts, filters=[Shuffle(elementsize=8)], compressors=Zlib(level=5))
    a("delta_only", "<i4", ints, filters=[Delta(dtype="<i4")])
    a("delta_be", ">i4", ints, filters=[Delta(dtype=">i4")])
    a("delta_zstd", "<i8", ints, filters=[Delta(dtype="<i8")], compressors=Zstd(level=1))
    a("delta_shuffle_blosc", "<i4", ints, filters=[Delta(dtype="<i4"), Shuffle(elementsize=4)],
      compressors=Blosc(cname="zstd", clevel=5, shuffle=Blosc.NOSHUFFLE))
    a("zlib_missing", "<i4", ints, fill_value=-77, skip={(1, 1), (2, 2)},
      compressors=Zlib(level=5))


def build_v3_dtypes(path):
    from zarr.codecs import BytesCodec, ZstdCodec
    rng = np.random.default_rng(4)
    root = z3_root(path, 3, {"description": "one array per data type, little and big endian"})
    types = [
        ("bool", [True]), ("int8", [-3]), ("uint8", [200]),
        ("int16", [-300, 1234]), ("int32", [-70000, 70000]), ("int64", [-2**40, 2**62]),
        ("uint16", [65535, 7]), ("uint32", [4000000000, 1]), ("uint64", [2**64 - 1, 2**63 + 5]),
        ("float16", [1.5, NAN]), ("float32", [INF, -INF]), ("float64", [NAN, -2.25]),
        ("complex64", [complex(1, -2), complex(NAN, 0.5)]),
        ("complex128", [complex(INF, -INF), complex(0.25, NAN)]),
    ]
    for name, fills in types:
        if len(fills) == 1:
            make_arr(root, rng, name, (5, 4), (2, 3), name, fill_value=fills[0], skip={(1, 1)},
                     compressors=ZstdCodec(level=1))
            continue
        make_arr(root, rng, name + "_le", (5, 4), (2, 3), name, fill_value=fills[0],
                 skip={(1, 1)}, serializer=BytesCodec(endian="little"),
                 compressors=ZstdCodec(level=1))
        make_arr(root, rng, name + "_be", (5, 4), (2, 3), name, fill_value=fills[1],
                 skip={(1, 1)}, serializer=BytesCodec(endian="big"))
    # hex fill value: zarr-python writes a NaN fill as "NaN" (payload lost) -> hand-edit
    make_arr(root, rng, "float32_hexfill", (5, 4), (2, 3), "float32", fill_value=NAN,
             skip={(1, 1), (2, 0)})
    edit_text(os.path.join(path, "float32_hexfill", "zarr.json"),
              '"fill_value": "NaN"', '"fill_value": "0x7fc00001"')


def build_v3_codecs(path):
    from zarr.codecs import (BloscCodec, BytesCodec, Crc32cCodec, GzipCodec, TransposeCodec,
                             ZstdCodec)
    rng = np.random.default_rng(5)
    root = z3_root(path, 3)
    shape, chunks = (12, 10), (5, 4)
    ints = (np.arange(120) * 3 + rng.integers(0, 4, size=120)).reshape(shape)
    flts = (np.sin(np.arange(120) / 9.0) * 100 + rng.standard_normal(120)).reshape(shape)

    def a(name, dt, data, **kw):
        make_arr(root, rng, name, shape, chunks, dt, data=np.asarray(data).astype(dt), **kw)

    a("key_default_slash", "int32", ints, chunk_key_encoding={"name": "default", "separator": "/"},
      compressors=GzipCodec(level=5))
    a("key_default_dot", "int32", ints, chunk_key_encoding={"name": "default", "separator": "."},
      compressors=ZstdCodec(level=3))
    a("key_v2_dot", "int32", ints, chunk_key_encoding={"name": "v2", "separator": "."})
    a("key_v2_slash", "int32", ints, chunk_key_encoding={"name": "v2", "separator": "/"},
      fill_value=-5, skip={(0, 1)})
    a("transpose_2d", "int16", ints, filters=[TransposeCodec(order=(1, 0))], fill_value=5,
      skip={(1, 2)})
    make_arr(root, rng, "transpose_3d", (5, 7, 3), (2, 3, 2), "int32", fill_value=-1,
             skip={(2, 1, 0)}, filters=[TransposeCodec(order=(2, 0, 1))],
             serializer=BytesCodec(endian="big"), compressors=ZstdCodec(level=1))
    make_arr(root, rng, "transpose_3d_blosc", (4, 5, 6), (3, 2, 4), "float64", fill_value=0.5,
             skip={(0, 2, 1)}, filters=[TransposeCodec(order=(1, 2, 0))],
             compressors=BloscCodec(cname="lz4", clevel=5, shuffle="shuffle"))
    a("gzip", "float64", flts, compressors=GzipCodec(level=6))
    a("zstd", "float64", flts, compressors=ZstdCodec(level=3))
    a("zstd_checksum", "int64", ints, compressors=ZstdCodec(level=5, checksum=True))
    a("blosc_lz4_shuffle", "float32", flts, compressors=BloscCodec(cname="lz4", clevel=5,
                                                                    shuffle="shuffle"))
    a("blosc_zstd_bitshuffle", "float32", flts,
      compressors=BloscCodec(cname="zstd", clevel=5, shuffle="bitshuffle"))
    a("blosc_blosclz_noshuffle", "int32", ints,
      compressors=BloscCodec(cname="blosclz", clevel=5, shuffle="noshuffle"))
    a("blosc_lz4hc_be", "uint16", ints, serializer=BytesCodec(endian="big"),
      compressors=BloscCodec(cname="lz4hc", clevel=9, shuffle="shuffle"))
    a("blosc_zlib_bitshuffle", "int64", ints,
      compressors=BloscCodec(cname="zlib", clevel=5, shuffle="bitshuffle"))
    a("crc32c", "int32", ints, compressors=Crc32cCodec())
    a("gzip_crc32c", "float32", flts, compressors=[GzipCodec(level=5), Crc32cCodec()])
    a("transpose_be_zstd_crc32c", "int16", ints, filters=[TransposeCodec(order=(1, 0))],
      serializer=BytesCodec(endian="big"), compressors=[ZstdCodec(level=1), Crc32cCodec()])
    a("missing", "int64", ints, fill_value=-1, skip={(0, 0), (2, 1)},
      compressors=ZstdCodec(level=1))
    make_arr(root, rng, "scalar", (), (), "float32", data=np.array(2.5, "float32"))
    make_arr(root, rng, "scalar_missing", (), (), "int16", fill_value=7, skip="all")
    make_arr(root, rng, "one", (1,), (1,), "uint32")
    make_arr(root, rng, "bigchunk", (3, 5), (8, 8), "int16", compressors=GzipCodec(level=1))


def build_v3_attrs(path):
    rng = np.random.default_rng(6)
    root = z3_root(path, 3, {
        "title": "attributes and dimension names",
        "nested": {"list": [1, 2.5, -3, None, True, False, "x"], "obj": {"deep": {"deeper": [[]]}}},
        "unicode": "温度 — température — 🌡",
        "big": 18446744073709551615, "neg": -9007199254740993, "float": 1e-300, "empty": {}})
    a = root.create_group("a", attributes={"role": "first level", "ids": [10, 20]})
    b = a.create_group("b")  # group without attributes
    make_arr(b, rng, "arr", (4, 3, 2), (2, 2, 2), "float32", dimension_names=["time", "lat", "lon"],
             attributes={"units": "K", "long_name": "Temperatur (°C → K)",
                         "valid_range": [200.0, 330.0], "flags": {"qc": [0, 1, 2], "none": None}})
    make_arr(a, rng, "partial_names", (3, 2), (2, 2), "int8", dimension_names=["y", None])
    make_arr(root, rng, "no_attrs", (2,), (2,), "uint16")
    make_arr(root, rng, "unicode_attr", (2, 2), (1, 2), "int64", attributes={"κλειδί": "τιμή",
             "emoji": "🙂", "esc": "tab\there \"quoted\" back\\slash"})
    root.create_group("empty")


def build_temp(path):
    rng = np.random.default_rng(7)
    a = zarr.create_array(z3_local(path), shape=(6, 4), chunks=(4, 3), dtype="float32",
                          fill_value=-999.0, zarr_format=3, dimension_names=["y", "x"],
                          attributes={"units": "degC", "note": "root of this store is an array"},
                          compressors=None, filters=None)
    write_chunks(a, gen(a.dtype, a.shape, rng), skip={(1, 1)})


def build_temp2(path):
    rng = np.random.default_rng(8)
    a = zarr.create_array(z3_local(path), shape=(5, 3), chunks=(2, 2), dtype="<i2",
                          fill_value=42, zarr_format=2, attributes={"note": "v2 root array"},
                          compressors=None, filters=None)
    write_chunks(a, gen(a.dtype, a.shape, rng), skip={(1, 1)})


def build_v3_zip(path):
    from zarr.codecs import GzipCodec
    rng = np.random.default_rng(9)
    zs = zarr.storage.ZipStore(path, mode="w")
    root = zarr.open_group(zs, mode="w", zarr_format=3,
                           attributes={"title": "v3 zip store", "source": "zarr-python 3 ZipStore"})
    make_arr(root, rng, "a", (6,), (4,), "int16")
    g = root.create_group("g", attributes={"kind": "subgroup"})
    make_arr(g, rng, "b", (3, 4), (2, 2), "float64", fill_value=NAN, skip={(1, 0)},
             compressors=GzipCodec(level=5))
    make_arr(g, rng, "c", (5,), (5,), "bool", chunk_key_encoding={"name": "default", "separator": "."})
    zs.close()


def read_expected_z3(store_path, node_path, fmt):
    st = open_z3_store(store_path)
    try:
        a = zarr.open_array(st, path=node_path, mode="r", zarr_format=fmt)
        got = np.asarray(a[...])
        assert got.shape == tuple(a.shape)
        return got
    finally:
        st.close()


def build_broken(path, fmt):
    """Error cases beside healthy arrays.  Returns {node path: manifest overrides}."""
    from numcodecs import Zlib
    rng = np.random.default_rng(10 + fmt)
    root = z3_root(path, fmt, {"description": "error cases beside healthy arrays"})
    if fmt == 3:
        from zarr.codecs import GzipCodec, ZstdCodec
        comp_a, comp_b = GzipCodec(level=5), ZstdCodec(level=3)
    else:
        comp_a, comp_b = Zlib(level=5), Zlib(level=5)
    make_arr(root, rng, "healthy", (10,), (4,), "<i4", fill_value=-1, skip={(1,)},
             compressors=comp_b)
    g = root.create_group("grp")
    make_arr(g, rng, "healthy2", (3, 3), (2, 2), "<f8")
    make_arr(root, rng, "unknown_codec", (6,), (3,), "<i4", compressors=comp_a)
    make_arr(root, rng, "unknown_dtype", (4,), (2,), "<i2")
    make_arr(root, rng, "bad_json", (4,), (2,), "|i1")
    make_arr(root, rng, "corrupt_chunk", (20,), (4,), "<i4", compressors=comp_b)
    over = {}
    if fmt == 3:
        meta = "zarr.json"
        edit_text(os.path.join(path, "unknown_codec", meta), '"name": "gzip"', '"name": "nosuchcodec"')
        edit_text(os.path.join(path, "unknown_dtype", meta), '"data_type": "int16"',
                  '"data_type": "nosuchtype"')
        chunk = os.path.join(path, "corrupt_chunk", "c", "2")
        codec_note = 'hand-edited zarr.json: codec "gzip" renamed "nosuchcodec" (chunks are real gzip)'
        dtype_note = 'hand-edited zarr.json: data_type "int16" changed to the made-up "nosuchtype"'
    else:
        meta = ".zarray"
        edit_text(os.path.join(path, "unknown_codec", meta), '"id": "zlib"', '"id": "nosuchcodec"')
        edit_text(os.path.join(path, "unknown_dtype", meta), '"dtype": "<i2"', '"dtype": "<x2"')
        chunk = os.path.join(path, "corrupt_chunk", "2")
        codec_note = 'hand-edited .zarray: compressor id "zlib" renamed "nosuchcodec" (chunks are real zlib)'
        dtype_note = 'hand-edited .zarray: dtype "<i2" changed to the made-up "<x2"'
    # malformed JSON: cut the metadata document in half
    mpath = os.path.join(path, "bad_json", meta)
    txt = open(mpath, encoding="utf-8").read()
    with open(mpath, "w", encoding="utf-8") as f:
        f.write(txt[: len(txt) // 2])
    try:
        json.loads(txt[: len(txt) // 2])
        raise AssertionError("bad_json is still valid JSON")
    except json.JSONDecodeError:
        pass
    # corrupt chunk: read back first, then truncate chunk 2 (elements 8..11)
    good = read_expected_z3(path, "corrupt_chunk", fmt)
    raw = open(chunk, "rb").read()
    with open(chunk, "wb") as f:
        f.write(raw[: len(raw) // 2])
    try:
        read_expected_z3(path, "corrupt_chunk", fmt)
        raise AssertionError("corrupt chunk still decodes")
    except AssertionError:
        raise
    except Exception:
        pass
    st = open_z3_store(path)
    ok = np.asarray(zarr.open_array(st, path="corrupt_chunk", mode="r", zarr_format=fmt)[:8])
    st.close()
    assert sem_equal(ok, good[:8])
    over["unknown_codec"] = {"expect": "eio", "note": codec_note + "; A.json is listed, reading A or A.npy fails with EIO"}
    over["unknown_dtype"] = {"expect": "eio", "note": dtype_note + "; A.json is listed, reading A or A.npy fails with EIO"}
    over["bad_json"] = {"expect": "absent", "type": "array",
                        "note": f"hand-edited: {meta} truncated to half its length (malformed JSON); "
                                "the node (and its .json/.npy) must not be listed"}
    over["corrupt_chunk"] = {"expect": "partial_eio", "ok_range": [0, 8 * 4], "data": good,
                             "note": "hand-edited: chunk 2 (elements 8..11) truncated to half its "
                                     "length; reading all of A fails with EIO, bytes [0, 32) (chunks "
                                     "0-1) read correctly; npy = the array before the corruption"}
    return over


def build_demo(path):
    from zarr.codecs import BloscCodec, GzipCodec, ZstdCodec
    rng = np.random.default_rng(2024)
    nt, ny, nx = 30, 24, 48
    root = z3_root(path, 3, {
        "title": "zarrfs demo: synthetic regional climate and station data",
        "institution": "zarrfs project (synthetic data, not real observations)",
        "Conventions": "CF-1.10",
        "source": "scripts/make_fixtures.py (numpy random generator, seed 2024)",
        "history": "2024-01-01T00:00:00Z created with zarr-python " + zarr.__version__,
        "time_coverage_start": "2024-01-01", "time_coverage_end": "2024-01-30"})
    coords = root.create_group("coords", attributes={"description": "coordinate variables"})
    time_ = coords.create_array("time", shape=(nt,), chunks=(nt,), dtype="int64",
                                dimension_names=["time"], compressors=ZstdCodec(level=3),
                                attributes={"units": "days since 2024-01-01 00:00:00",
                                            "calendar": "proleptic_gregorian",
                                            "standard_name": "time", "axis": "T"})
    time_[...] = np.arange(nt, dtype="int64")
    lat = (35.0 + np.arange(ny, dtype="float64")).astype("float32")
    lon = -10.0 + np.arange(nx, dtype="float64")
    la = coords.create_array("lat", shape=(ny,), chunks=(ny,), dtype="float32",
                             dimension_names=["lat"], compressors=None,
                             attributes={"units": "degrees_north", "standard_name": "latitude",
                                         "axis": "Y"})
    la[...] = lat
    lo = coords.create_array("lon", shape=(nx,), chunks=(nx,), dtype="float64",
                             dimension_names=["lon"], compressors=None,
                             attributes={"units": "degrees_east", "standard_name": "longitude",
                                         "axis": "X"})
    lo[...] = lon

    T, Y, X = np.meshgrid(np.arange(nt), lat.astype("float64"), lon, indexing="ij")
    sea = ((X < -2) | ((Y < 43) & (X < 6)) | ((Y < 40) & (X > 5))
           | ((Y > 53) & (X > 15) & (X < 25)))
    land = ~sea
    temp = (281.0 - 0.55 * (Y - 35.0) + 2.5 * np.sin(X / 6.0) * np.cos(Y / 5.0)
            + 3.0 * np.sin(2 * np.pi * T / 11.0 + X / 20.0) + np.where(land, -1.5, 1.0)
            + rng.normal(0.0, 0.6, T.shape))
    temp = np.clip(np.round(temp, 2), 250.0, 305.0).astype("float32")
    surf = root.create_group("surface", attributes={"description": "gridded daily means",
                                                    "grid": "regular 1x1 degree"})
    t = surf.create_array("temperature", shape=temp.shape, chunks=(10, 12, 16), dtype="float32",
                          dimension_names=["time", "lat", "lon"], compressors=ZstdCodec(level=5),
                          fill_value=NAN, attributes={
                              "units": "K", "long_name": "Near-surface air temperature",
                              "standard_name": "air_temperature", "cell_methods": "time: mean",
                              "valid_range": [250.0, 305.0]})
    write_chunks(t, temp)
    wet = rng.random(T.shape) < (0.35 + 0.25 * np.sin(2 * np.pi * T / 7.0) ** 2)
    prec = np.where(wet, rng.gamma(0.8, 4.0, T.shape), 0.0)
    prec = np.round(prec, 1).astype("float32")
    p = surf.create_array("precipitation", shape=prec.shape, chunks=(15, 24, 24), dtype="float32",
                          dimension_names=["time", "lat", "lon"], fill_value=0.0,
                          compressors=BloscCodec(cname="zstd", clevel=5, shuffle="bitshuffle"),
                          attributes={"units": "mm day-1", "long_name": "Daily precipitation",
                                      "standard_name": "precipitation_amount"})
    write_chunks(p, prec)
    mask = land[0].astype("uint16")  # chunks that are all sea (0 = fill) are never stored
    m = surf.create_array("land_mask", shape=mask.shape, chunks=(8, 16), dtype="uint16",
                          dimension_names=["lat", "lon"], fill_value=0,
                          compressors=GzipCodec(level=6),
                          attributes={"long_name": "land-sea mask", "flag_values": [0, 1],
                                      "flag_meanings": "sea land"})
    write_chunks(m, mask, skip={idx for idx, sl in chunk_slices(mask.shape, (8, 16))
                                if not mask[sl].any()})

    ns = 12
    st = root.create_group("stations", attributes={"description": "point observations",
                                                   "network": "DEMO-NET"})
    ids = st.create_array("ids", shape=(ns,), chunks=(ns,), dtype="int32",
                          dimension_names=["station"], compressors=None,
                          attributes={"long_name": "WMO-like station id"})
    ids[...] = (10000 + np.sort(rng.choice(9000, ns, replace=False))).astype("int32")
    names = ["Aberdeen", "Bordeaux", "Brest", "Dublin", "Hamburg", "Lyon", "Madrid",
             "Milano", "Oslo", "Praha", "Wien", "Zurich"]
    codes = np.zeros((ns, 16), dtype="uint8")
    for i, nm in enumerate(names):
        codes[i, :len(nm)] = np.frombuffer(nm.encode("ascii"), dtype="uint8")
    nm_arr = st.create_array("names", shape=codes.shape, chunks=codes.shape, dtype="uint8",
                             dimension_names=["station", "strlen"], compressors=None,
                             attributes={"long_name": "station name",
                                         "encoding": "ASCII, NUL-padded to 16 bytes per station"})
    nm_arr[...] = codes
    slat = np.array([57.2, 44.8, 48.4, 53.4, 53.6, 45.7, 40.4, 45.5, 59.9, 50.1, 48.2, 47.4],
                    dtype="float32")
    slon = np.array([-2.1, -0.7, -4.5, -6.3, 10.0, 4.8, -3.7, 9.2, 10.7, 14.4, 16.4, 8.5],
                    dtype="float32")
    for name, vals, units in [("lat", slat, "degrees_north"), ("lon", slon, "degrees_east")]:
        s = st.create_array(name, shape=(ns,), chunks=(ns,), dtype="float32",
                            dimension_names=["station"], compressors=None,
                            attributes={"units": units})
        s[...] = vals
    iy = np.clip(np.round(slat - 35).astype(int), 0, ny - 1)
    ix = np.clip(np.round(slon + 10).astype(int), 0, nx - 1)
    obs = (temp[:, iy, ix] + rng.normal(0, 0.8, (nt, ns))).round(1).astype("float32")
    o = st.create_array("temperature_obs", shape=obs.shape, chunks=(10, 4), dtype="float32",
                        dimension_names=["time", "station"], fill_value=NAN,
                        compressors=ZstdCodec(level=3),
                        attributes={"units": "K", "long_name": "observed 2 m air temperature",
                                    "comment": "stations 4-7 reported nothing on days 10-19 "
                                               "(chunk never written: reads as NaN)"})
    write_chunks(o, obs, skip={(1, 1)})


# =============================================================================
# store walking and manifest
# =============================================================================

def open_z3_store(store_path):
    if store_path.endswith(".zip"):
        return zarr.storage.ZipStore(store_path, mode="r")
    return zarr.storage.LocalStore(store_path, read_only=True)


def store_keys(store_path):
    """(sorted list of keys, reader) for a directory or .zip store."""
    if store_path.endswith(".zip"):
        zf = zipfile.ZipFile(store_path)
        names = [n for n in zf.namelist() if not n.endswith("/")]
        assert len(names) == len(set(names)), f"duplicate zip entries in {store_path}"
        return sorted(names), zf.read
    keys = []
    for dp, dns, fns in os.walk(store_path):
        dns.sort()
        for fn in fns:
            keys.append(os.path.relpath(os.path.join(dp, fn), store_path).replace(os.sep, "/"))

    def read(k):
        with open(os.path.join(store_path, k), "rb") as f:
            return f.read()
    return sorted(keys), read


def discover(store_path, overrides):
    """All nodes of a store, with their expected .json documents built from disk."""
    keys, read = store_keys(store_path)
    keyset = set(keys)
    meta_dirs = {}
    for k in keys:
        d, base = posixpath.split(k)
        if base in (".zarray", ".zgroup", "zarr.json"):
            meta_dirs.setdefault(d, set()).add(base)

    def load(k):
        return json.loads(read(k).decode("utf-8"))

    def attrs(d):
        k = posixpath.join(d, ".zattrs") if d else ".zattrs"
        return load(k) if k in keyset else {}

    nodes = {}
    for d, files in meta_dirs.items():
        j = (lambda name: posixpath.join(d, name) if d else name)
        ov = overrides.get(d, {})
        if ov.get("expect") == "absent":
            nodes[d] = {"path": d, "type": ov["type"]}
            continue
        if "zarr.json" in files:
            assert not files & {".zarray", ".zgroup"}, (store_path, d)
            doc = load(j("zarr.json"))
            doc.pop("consolidated_metadata", None)
            doc.setdefault("attributes", {})
            nodes[d] = {"path": d, "type": doc["node_type"], "fmt": 3, "json": doc}
        elif ".zarray" in files:
            assert ".zgroup" not in files, (store_path, d)
            doc = load(j(".zarray"))
            assert doc.get("zarr_format") == 2
            doc["attributes"] = attrs(d)
            doc["node_type"] = "array"
            nodes[d] = {"path": d, "type": "array", "fmt": 2, "json": doc}
        else:
            assert load(j(".zgroup")).get("zarr_format") == 2
            nodes[d] = {"path": d, "type": "group", "fmt": 2,
                        "json": {"zarr_format": 2, "node_type": "group", "attributes": attrs(d)}}
    fmts = {n["fmt"] for n in nodes.values() if "fmt" in n}
    assert len(fmts) == 1, (store_path, fmts)
    fmt = fmts.pop()
    # implicit groups: ancestors of nodes without metadata of their own
    for d in list(meta_dirs):
        parts = d.split("/") if d else []
        for i in range(len(parts)):
            anc = "/".join(parts[:i])
            if anc not in nodes:
                assert fmt == 2, f"implicit group {anc!r} in a v3 store {store_path}"
                assert anc not in meta_dirs
                nodes[anc] = {"path": anc, "type": "group", "fmt": 2, "implicit": True,
                              "json": {"zarr_format": 2, "node_type": "group", "attributes": {}}}
    for d in nodes:  # nothing may sit inside an array
        parts = d.split("/") if d else []
        for i in range(len(parts)):
            anc = "/".join(parts[:i])
            assert nodes[anc]["type"] == "group", (store_path, d)
    return fmt, [nodes[k] for k in sorted(nodes)]


STORES = []  # filled by main(): dicts describing each store


def add_store(name, store, writer, build, note="", root_name=None, client="zarr3"):
    STORES.append({"name": name, "store": store, "writer": writer, "build": build,
                   "note": note, "root_name": root_name, "client": client})


def clean_outputs():
    os.makedirs(FIXTURES, exist_ok=True)
    for entry in sorted(os.listdir(FIXTURES)):
        if entry in NOT_OURS:
            continue
        p = os.path.join(FIXTURES, entry)
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p)
        else:
            os.unlink(p)
    if os.path.exists(DEMO):
        shutil.rmtree(DEMO)
    os.makedirs(os.path.dirname(DEMO), exist_ok=True)


def save_expected(rel, arr):
    out = to_le(arr)
    full = os.path.join(FIXTURES, rel)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    np.save(full, out, allow_pickle=False)


def main():
    check_versions()
    z2v = json.loads(run_worker("versions"))
    z3w = f"zarr-python {zarr.__version__}"
    z2w = f"zarr-python {z2v['zarr']}"
    clean_outputs()

    add_store("v2_dtypes", "v2_dtypes.zarr", z3w, lambda p: build_v2_dtypes(p),
              "Zarr v2 written by zarr-python 3 (zarr_format=2), no compressor: every dtype in both "
              "byte orders, non-zero fill values (base64 for S/V/structured), chunk (1,1) of each "
              "array left unwritten except the *_fill_null arrays (fill_value null, all chunks "
              "written). No hand-edits.")
    add_store("v2_layout", "v2_layout.zarr", z3w, lambda p: build_v2_layout(p),
              "Zarr v2 by zarr-python 3: dimension_separator '.' and '/', order C and F (2-D, 3-D, "
              "4-D, edge and missing chunks), 0-d arrays (one written, one only fill), 1-element "
              "array, chunk larger than the shape, an array with no chunk at all, implicit groups "
              "(zarr-python 3 writes no .zgroup for 'implicit' and 'implicit/sub' when creating "
              "arrays at nested paths), explicit and empty groups, attributes. No hand-edits.")
    add_store("v2_codecs", "v2_codecs.zarr", z3w, lambda p: build_v2_codecs(p),
              "Zarr v2 by zarr-python 3 with numcodecs: zlib, gzip, zstd, bz2, lz4, blosc "
              "(lz4/lz4hc/blosclz/zlib/zstd x noshuffle/shuffle/bitshuffle), filters shuffle and "
              "delta alone and combined with compressors. No hand-edits.")
    add_store("v2_zarr2", "v2_zarr2.zarr", z2w, None,
              "Zarr v2 by zarr-python 2 (filters: null, no dimension_separator key unless '/', "
              ".zgroup for every intermediate group, sorted keys): structured dtypes incl. sub-array "
              "fields, order F, fill values null/NaN/Infinity/-Infinity/base64, 0-d, codecs. "
              "No hand-edits.", client="zarr2")
    add_store("v2_zip", "v2_zip.zip", z2w, None,
              "Zarr v2 in a ZIP written by zarr-python 2 ZipStore (entries stored uncompressed; "
              "timestamps are the script's frozen clock 2024-01-01). No hand-edits.", client="zarr2")
    add_store("v3_dtypes", "v3_dtypes.zarr", z3w, lambda p: build_v3_dtypes(p),
              "Zarr v3 by zarr-python 3: every core data type, bytes codec little (with zstd) and big "
              "endian (uncompressed), fill values numbers/NaN/Infinity/-Infinity, chunk (1,1) "
              "unwritten. HAND-EDIT: float32_hexfill/zarr.json fill_value \"NaN\" replaced by "
              "\"0x7fc00001\" (zarr-python never writes the hex form); its missing chunks read as "
              "that exact bit pattern.")
    add_store("v3_codecs", "v3_codecs.zarr", z3w, lambda p: build_v3_codecs(p),
              "Zarr v3 by zarr-python 3: chunk_key_encoding default '/' and '.', v2 '.' and '/', "
              "transpose 2-D and 3-D, bytes big endian, gzip, zstd (with checksum), blosc "
              "(several cnames and shuffles), crc32c, missing chunks, 0-d and 1-element arrays, "
              "chunk larger than shape. No hand-edits.")
    add_store("v3_attrs", "v3_attrs.zarr", z3w, lambda p: build_v3_attrs(p),
              "Zarr v3 by zarr-python 3: group and array attributes (nested JSON, unicode, big "
              "integers), dimension_names (with a null), groups without attributes. No hand-edits.")
    add_store("v3_zip", "v3_zip.zip", z3w, lambda p: build_v3_zip(p),
              "Zarr v3 in a ZIP written by zarr.storage.ZipStore (entries stored uncompressed; "
              "timestamps are the script's frozen clock 2024-01-01). No hand-edits.")
    add_store("temp", "temp.zarr", z3w, lambda p: build_temp(p),
              "Zarr v3 store whose root is an array; chunk (1,1) unwritten (fill -999). "
              "No hand-edits.", root_name="temp")
    add_store("temp2", "temp2.zarr", z3w, lambda p: build_temp2(p),
              "Zarr v2 store (zarr-python 3, zarr_format=2) whose root is an array; chunk (1,1) "
              "unwritten (fill 42). No hand-edits.", root_name="temp2")
    add_store("broken", "broken.zarr", z3w, lambda p: build_broken(p, 3),
              "Zarr v3 error cases written by zarr-python 3 then HAND-EDITED (see each node's note): "
              "unknown codec, unknown data type, malformed zarr.json, truncated chunk; 'healthy' and "
              "'grp/healthy2' are untouched and must read normally.")
    add_store("broken_v2", "broken_v2.zarr", z3w, lambda p: build_broken(p, 2),
              "Zarr v2 error cases written by zarr-python 3 (zarr_format=2) then HAND-EDITED (see "
              "each node's note): unknown compressor id, made-up dtype, malformed .zarray, "
              "truncated chunk; 'healthy' and 'grp/healthy2' must read normally.")
    add_store("demo", os.path.relpath(DEMO, FIXTURES), z3w, lambda p: build_demo(p),
              "examples/demo.zarr (README quick start): synthetic climate/station dataset, Zarr v3 "
              "by zarr-python 3. No hand-edits.")

    # ---- write the stores
    run_worker("write", FIXTURES)
    overrides = {}
    for s in STORES:
        if s["build"] is not None:
            full = os.path.normpath(os.path.join(FIXTURES, s["store"]))
            overrides[s["name"]] = s["build"](full) or {}
        else:
            overrides[s["name"]] = {}

    # ---- discover nodes, read back, write expected npy files
    manifest = {
        "generator": "scripts/make_fixtures.py",
        "versions": {"zarr-python 3": versions(), "zarr-python 2": z2v},
        "stores": [],
    }
    z2_dump, z2_verify, z3_verify = [], [], []
    tmp = tempfile.mkdtemp(prefix="zarrfs-fixtures-")
    for s in STORES:
        full = os.path.normpath(os.path.join(FIXTURES, s["store"]))
        over = overrides[s["name"]]
        fmt, nodes = discover(full, over)
        assert set(over) <= {n["path"] for n in nodes}, (s["name"], set(over))
        entry = {"name": s["name"], "store": s["store"], "writer": s["writer"],
                 "zarr_format": fmt, "note": s["note"]}
        if s["root_name"]:
            entry["root_name"] = s["root_name"]
        out_nodes = []
        for n in nodes:
            ov = over.get(n["path"], {})
            node = {"path": n["path"], "type": n["type"]}
            if n.get("implicit"):
                node["implicit"] = True
            if "json" in n:
                node["json"] = n["json"]
            if "expect" in ov:
                node["expect"] = ov["expect"]
            if "ok_range" in ov:
                node["ok_range"] = ov["ok_range"]
            if "note" in ov:
                node["note"] = ov["note"]
            if n["type"] == "array" and ov.get("expect") not in ("eio", "absent"):
                leaf = s["root_name"] if n["path"] == "" else n["path"]
                rel = f"expected/{s['name']}/{leaf}.npy"
                node["npy"] = rel
                if "data" in ov:
                    save_expected(rel, ov["data"])
                elif s["client"] == "zarr3":
                    got = read_expected_z3(full, n["path"], fmt)
                    save_expected(rel, got)
                    z3_verify.append((full, n["path"], fmt, rel))
                else:
                    raw = os.path.join(tmp, f"{len(z2_dump)}.npy")
                    z2_dump.append({"store": full, "path": n["path"], "out": raw, "rel": rel})
                    z2_verify.append({"store": full, "path": n["path"],
                                      "npy": os.path.join(FIXTURES, rel)})
            out_nodes.append(node)
        entry["nodes"] = out_nodes
        manifest["stores"].append(entry)

    jobs = os.path.join(tmp, "dump.json")
    with open(jobs, "w") as f:
        json.dump(z2_dump, f)
    run_worker("dump", jobs)
    for job in z2_dump:
        save_expected(job["rel"], np.load(job["out"], allow_pickle=False))

    # ---- verify: np.load(expected) == a fresh read by the writing client
    for full, path, fmt, rel in z3_verify:
        check_expected(os.path.join(FIXTURES, rel), read_expected_z3(full, path, fmt))
    with open(jobs, "w") as f:
        json.dump(z2_verify, f)
    print(run_worker("verify", jobs).strip())
    print(f"zarr3: verified {len(z3_verify)} arrays")
    # informational only: can zarr-python 3 read what zarr-python 2 wrote?
    disagree = []
    for job in z2_verify:
        try:
            check_expected(job["npy"], read_expected_z3(job["store"], job["path"], 2))
        except Exception as e:  # noqa: BLE001
            disagree.append(f"{os.path.basename(job['store'])}/{job['path']}: {type(e).__name__}")
    if disagree:
        print("note: zarr-python 3 reads these zarr-python 2 arrays differently (not an error):")
        for d in disagree:
            print("  ", d)
    shutil.rmtree(tmp)

    with open(os.path.join(FIXTURES, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1, ensure_ascii=False, allow_nan=False)
        f.write("\n")

    # ---- sizes
    def du(p):
        if os.path.isfile(p):
            return os.path.getsize(p)
        return sum(os.path.getsize(os.path.join(dp, fn)) for dp, _, fns in os.walk(p) for fn in fns)
    ours = sum(du(os.path.join(FIXTURES, e)) for e in os.listdir(FIXTURES) if e not in NOT_OURS)
    print(f"tests/fixtures (ours): {ours / 1e6:.2f} MB; examples/demo.zarr: {du(DEMO) / 1e6:.2f} MB")
    assert ours < 3_000_000 and du(DEMO) < 1_000_000


# manifest.json schema (tests/fixtures/manifest.json):
# {"generator": ..., "versions": {...},
#  "stores": [{"name": id, "store": path rel. to tests/fixtures (dir or .zip), "writer": client,
#              "zarr_format": 2|3, "note": hand-edits / coverage, "root_name": only if root is array,
#              "nodes": [{"path": "a/b" ("" = root), "type": "group"|"array",
#                         "implicit": true (v2 group without .zgroup), "json": expected <node>.json
#                         (a group's is .group.json), "npy": expected/<store>/<path>.npy,
#                         "expect": "eio"|"absent"|"partial_eio", "ok_range": [start, end),
#                         "note": what the node must do}]}]}

if __name__ == "__main__":
    if ZARR2_WORKER:
        i = sys.argv.index("--zarr2-worker")
        zarr2_worker([a for a in sys.argv[i + 1:] if a != "--allow-other-versions"])
    else:
        main()
