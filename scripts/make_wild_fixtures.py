#!/usr/bin/env python3
"""Writes tests/fixtures/wild/: stores as real writers produce them, for issue 10 ("every store
in the wild"), with expected values beside them and tests/fixtures/wild/manifest.json (the format
of tests/fixtures/manifest.json, read by tests/wild.rs).

Writers: zarr-python 3.1 (datetimes, v3 string/bytes/structured types, NaN attributes, numcodecs
compressors lzma/pcodec/zfpy in v2 arrays), numcodecs (object codecs json2/msgpack2/vlen-array/
pickle: chunk bytes by numcodecs, .zarray in zarr-python 2's form, written here because
zarr-python 3 no longer writes object arrays with these codecs), netCDF-c (`ncgen` from Debian's
netcdf-bin writing NCZarr, zipped with `zip -r` as one top folder).

Expected values come from reading each store back with zarr-python (an independent reader) or,
for the object codecs, from the Python objects encoded; text files hold what zarrfs's `A` text
view shows (one element per line). Needs: zarr 3.1, numcodecs 0.16, pcodec, zfpy 1.0.1, msgpack,
ml_dtypes, netCDF4 (its bundled netCDF-c writes the NCZarr strings store), ncgen, zip. Run from the repository root: python3 scripts/make_wild_fixtures.py

tests/fixtures/wild/zarrs/ (zarrs' own `zfp` codec, with its manifest) is written by zarrs itself,
not by this script, which keeps it: cargo run --manifest-path scripts/zarrs_writer/Cargo.toml
(needs cmake, for the libzfp that zfp-sys builds).
"""
import json
import lzma
import os
import shutil
import subprocess
import sys

import numcodecs
import numpy as np
import zarr

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "tests", "fixtures", "wild")
STORES = []


def le(arr):
    """The array in little-endian byte order (what zarrfs serves)."""
    if arr.dtype.fields is None and arr.dtype.byteorder == ">":
        return arr.astype(arr.dtype.newbyteorder("<"))
    return arr


def save_npy(rel, arr):
    full = os.path.join(OUT, rel)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    np.save(full, le(np.asarray(arr)), allow_pickle=False)
    return rel


def save_text(rel, lines):
    full = os.path.join(OUT, rel)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(line.replace("\\", "\\\\").replace("\n", "\\n") + "\n")
    return rel


def read_json(path):
    # Python's json reads the bare NaN/Infinity tokens zarr-python writes.
    with open(path) as f:
        return json.load(f)


def array_node(store_dir, name, path, expected=None, keys=(), expect=None, text=None, json_extra=None):
    """A manifest node for the array at `path`, expected values read back with zarr-python."""
    meta_file = os.path.join(store_dir, path, "zarr.json")
    if not os.path.exists(meta_file):
        meta_file = os.path.join(store_dir, path, ".zarray")
    doc = read_json(meta_file)
    node = {"path": path, "type": "array", "json": {k: doc[k] for k in keys}}
    node["json"].update(json_extra or {})
    if expect:
        node["expect"] = expect
        return node
    if expected is None:
        expected = zarr.open_array(os.path.join(store_dir, path), mode="r")[...]
    node["npy"] = save_npy(f"expected/{name}/{path}.npy", expected)
    if text is not None:
        node["text"] = save_text(f"expected/{name}/{path}.txt", text)
    return node


def new_v3_store(name):
    """An empty v3 store (a root group) written by this script; returns its path."""
    p = os.path.join(OUT, f"{name}.zarr")
    os.makedirs(p)
    with open(os.path.join(p, "zarr.json"), "w") as f:
        json.dump({"zarr_format": 3, "node_type": "group", "attributes": {}}, f, indent=2)
    return p


def add(name, store, writer, note, nodes):
    STORES.append({"name": name, "store": store, "writer": writer, "note": note, "nodes": nodes})


def times():
    """datetime64/timedelta64 in v2 (both byte orders, several units) and v3 (scale factor)."""
    for fmt in (2, 3):
        name = f"times_v{fmt}"
        p = os.path.join(OUT, f"{name}.zarr")
        root = zarr.open_group(p, mode="w", zarr_format=fmt)
        nodes = [{"path": "", "type": "group"}]
        cases = [("ns", "<M8[ns]"), ("s_big", ">M8[s]"), ("D", "<M8[D]"), ("ms_delta", "<m8[ms]"),
                 ("us_delta_big", ">m8[us]"), ("scaled", "<M8[10s]")]
        for arr_name, dt in cases:
            if fmt == 3 and dt.startswith(">"):
                continue
            a = root.create_array(arr_name, shape=(5,), chunks=(2,), dtype=dt,
                                  fill_value=np.array("NaT", dtype=dt)[()])
            vals = np.array([0, 1, -7, 1_700_000_000, 12], dtype="<i8").astype(dt[0] + "i8")
            a[:4] = vals.view(dt)[:4]  # chunk 2 (element 4) stays unwritten: NaT fill
            keys = ["dtype", "fill_value"] if fmt == 2 else ["data_type", "fill_value"]
            nodes.append(array_node(p, name, arr_name, keys=keys))
        add(name, f"{name}.zarr", f"zarr-python {zarr.__version__}",
            f"datetime64/timedelta64 arrays written by zarr-python (zarr_format={fmt}), NaT fill, "
            "last chunk unwritten. No hand-edits.", nodes)


def v3_types():
    """zarr-python 3.1's fixed-size string/bytes/structured types and bare NaN tokens."""
    name = "types_v3"
    p = os.path.join(OUT, f"{name}.zarr")
    root = zarr.open_group(p, mode="w", zarr_format=3,
                           attributes={"nan": float("nan"), "inf": [float("inf"), -float("inf")]})
    nodes = [{"path": "", "type": "group",
              "json": {"attributes": {"nan": "NaN", "inf": ["Infinity", "-Infinity"]}}}]
    st = np.dtype([("a", "<i4"), ("b", "<f8"), ("c", "S3")])
    cases = [("utf32", "<U5", np.array(["a", "héllo", "", "xyz", "🙂🙂"], dtype="<U5")),
             ("nullbytes", "S4", np.array([b"ab", b"abcd", b"", b"\x01\x02", b"z"], dtype="S4")),
             ("raw", "V3", np.array([b"abc", b"\x00\x01\x02", b"xyz", b"\xff\xfe\xfd", b"q\x00r"],
                                    dtype="V3")),
             ("structured", st, np.array([(1, 0.5, b"a"), (-2, np.nan, b"bcd"), (3, 1e300, b""),
                                          (4, -0.0, b"x"), (5, 2.0, b"yz")], dtype=st))]
    for arr_name, dt, vals in cases:
        a = root.create_array(arr_name, shape=(6,), chunks=(2,), dtype=dt,
                              attributes={"missing": float("nan")})
        a[:5] = vals  # chunk 2 is half written: element 5 is the fill value
        nodes.append(array_node(p, name, arr_name, keys=["data_type", "fill_value"],
                                json_extra={"attributes": {"missing": "NaN"}}))
    add(name, f"{name}.zarr", f"zarr-python {zarr.__version__}",
        "zarr-python 3.1's fixed_length_utf32, null_terminated_bytes, raw_bytes and structured "
        "data types; bare NaN/Infinity/-Infinity tokens in zarr.json attributes (served as the "
        "strings \"NaN\", \"Infinity\", \"-Infinity\"). No hand-edits.", nodes)


EXT_FLOATS = ["float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4", "float8_e4m3",
              "float8_e4m3fn", "float8_e4m3fnuz", "float8_e4m3b11fnuz", "float8_e5m2",
              "float8_e5m2fnuz", "float8_e8m0fnu"]
EXT_INTS = {"int2": ([-2, -1, 0, 1], -1), "int4": ([-8, -3, 0, 7], -3),
            "uint2": ([0, 1, 2, 3], 2), "uint4": ([0, 9, 15, 4], 9)}


def ext_types():
    """zarrs' fixed-size extension types with the bytes codec (one element a byte), written by
    this script from the zarr-extensions specs; values and expected bits from ml_dtypes."""
    import ml_dtypes
    name = "ext_types_v3"
    p = new_v3_store(name)
    nodes = [{"path": "", "type": "group"}]
    cases = [(t, ml_dtypes.finfo(getattr(ml_dtypes, t)), None) for t in EXT_FLOATS]
    cases += [(t, None, v) for t, v in EXT_INTS.items()]
    for type_name, finfo, ints in cases:
        if ints is None:
            mt = getattr(ml_dtypes, type_name)
            values = np.array([0.5, -1.0, 2.0, 0.0], dtype=np.float32)
            if type_name == "float8_e8m0fnu":
                values = np.array([0.5, 1.0, 2.0, 0.25], dtype=np.float32)
            bits = values.astype(mt).view(np.uint8)
            fill_bits = np.array(1.0, dtype=mt).view(np.uint8)
            fill, served = 1.0, np.uint8
        else:
            values, fill = ints
            bits = np.array(values, dtype=np.int8).view(np.uint8)
            fill_bits = np.array(fill, dtype=np.int8).view(np.uint8)
            served = np.int8 if type_name.startswith("int") else np.uint8
        d = os.path.join(p, type_name)
        os.makedirs(os.path.join(d, "c"))
        meta = {"zarr_format": 3, "node_type": "array", "shape": [6], "data_type": type_name,
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
                "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
                "fill_value": fill, "codecs": [{"name": "bytes"}], "attributes": {}}
        with open(os.path.join(d, "zarr.json"), "w") as f:
            json.dump(meta, f, indent=2)
        with open(os.path.join(d, "c", "0"), "wb") as f:
            f.write(bits.tobytes())  # chunk 1 unwritten: elements 4 and 5 are the fill value
        expected = np.concatenate([bits, np.repeat(fill_bits, 2)]).view(served)
        nodes.append(array_node(p, name, type_name, keys=["data_type", "fill_value"],
                                expected=expected))
    add(name, f"{name}.zarr", f"scripts/make_wild_fixtures.py with ml_dtypes {ml_dtypes.__version__}",
        "zarrs' extension data types (zarr-extensions specs) with the bytes codec, one element a "
        "byte, written by this script (zarr-python does not write them); values and fill bits "
        "from ml_dtypes. Served as int8 (int2/int4), uint8 (uint2/uint4) and the floats' bits "
        "as uint8.", nodes)


def compressors():
    """numcodecs compressors in v2 arrays written by zarr-python 3.1."""
    name = "codecs_v2"
    p = os.path.join(OUT, f"{name}.zarr")
    root = zarr.open_group(p, mode="w", zarr_format=2)
    root.attrs["bad_values"] = [float("nan"), float("inf")]
    nodes = [{"path": "", "type": "group",
              "json": {"attributes": {"bad_values": ["NaN", "Infinity"]}}}]
    rng = np.random.default_rng(10)
    cases = [("lzma_i4", "<i4", numcodecs.LZMA(), None),
             ("lzma_f8_big", ">f8", numcodecs.LZMA(preset=1), None),
             ("pcodec_f8", "<f8", numcodecs.PCodec(), None),
             ("pcodec_i8", "<i8", numcodecs.PCodec(level=3), None),
             ("pcodec_u2", "<u2", numcodecs.PCodec(), None),
             ("pcodec_f4", "<f4", numcodecs.PCodec(), None),
             ("lzma_raw_delta_lzma2", "<f8", numcodecs.LZMA(
                 format=lzma.FORMAT_RAW, filters=[{"id": lzma.FILTER_DELTA, "dist": 8},
                                                  {"id": lzma.FILTER_LZMA2, "preset": 1}]), None),
             ("lzma_raw_lzma1", "<i4", numcodecs.LZMA(
                 format=lzma.FORMAT_RAW, filters=[{"id": lzma.FILTER_LZMA1, "preset": 6,
                                                   "dict_size": 1 << 16, "lc": 0, "lp": 2,
                                                   "pb": 2}]), None),
             ("lzma_raw_x86_extreme", "<i8", numcodecs.LZMA(
                 format=lzma.FORMAT_RAW, filters=[{"id": lzma.FILTER_X86},
                                                  {"id": lzma.FILTER_LZMA2,
                                                   "preset": 9 | lzma.PRESET_EXTREME}]), None)]
    for arr_name, dt, comp, expect in cases:
        a = root.create_array(arr_name, shape=(50, 7), chunks=(16, 4), dtype=dt, compressors=comp,
                              fill_value=3)
        if np.dtype(dt).kind == "f":
            data = np.cumsum(rng.normal(size=(50, 7)), axis=0)
        else:
            data = rng.integers(0, 1000, size=(50, 7))
        a[:40] = data[:40].astype(dt)
        nodes.append(array_node(p, name, arr_name, keys=["dtype", "compressor"], expect=expect))
    add(name, f"{name}.zarr", f"zarr-python {zarr.__version__} with numcodecs {numcodecs.__version__}",
        "v2 arrays with numcodecs compressors lzma (xz, and raw streams with filter chains) and "
        "pcodec, "
        "rows 40.. unwritten (fill 3); bare NaN/Infinity in .zattrs. No hand-edits.", nodes)


def zfpy_stores():
    """numcodecs zfpy in every mode, as a v2 compressor and as zarr-python 3's v3 serializer."""
    import zfpy
    rng = np.random.default_rng(11)
    cases = [("rate_f8_2d", "<f8", (50, 7), (16, 4), dict(mode=zfpy.mode_fixed_rate, rate=12)),
             ("precision_f4_3d", "<f4", (9, 10, 11), (4, 5, 6),
              dict(mode=zfpy.mode_fixed_precision, precision=14)),
             ("accuracy_f8_1d", "<f8", (100,), (30,),
              dict(mode=zfpy.mode_fixed_accuracy, tolerance=1e-3)),
             ("reversible_f4_2d", "<f4", (20, 30), (8, 16), dict(mode=zfpy.mode_fixed_accuracy)),
             ("reversible_i4_4d", "<i4", (3, 4, 5, 6), (2, 3, 4, 5),
              dict(mode=zfpy.mode_fixed_accuracy)),
             ("precision_i8_2d", "<i8", (12, 9), (5, 5),
              dict(mode=zfpy.mode_fixed_precision, precision=40)),
             ("rate_i4_1d", "<i4", (70,), (32,), dict(mode=zfpy.mode_fixed_rate, rate=20))]
    for fmt in (2, 3):
        name = f"zfpy_v{fmt}"
        p = os.path.join(OUT, f"{name}.zarr")
        root = zarr.open_group(p, mode="w", zarr_format=fmt)
        nodes = [{"path": "", "type": "group"}]
        for arr_name, dt, shape, chunks, kw in cases:
            if fmt == 2:
                codec = dict(compressors=numcodecs.ZFPY(**kw))
            else:
                codec = dict(serializer=zarr.codecs.numcodecs.ZFPY(**kw), compressors=None)
            a = root.create_array(arr_name, shape=shape, chunks=chunks, dtype=dt, fill_value=3,
                                  **codec)
            if np.dtype(dt).kind == "f":
                data = np.cumsum(rng.normal(size=shape), axis=0)
            else:
                data = np.cumsum(rng.integers(-1000, 1000, size=shape), axis=-1)
            # The last chunk along the first axis stays unwritten (fill 3).
            edge = (shape[0] - 1) // chunks[0] * chunks[0]
            a[:edge] = data[:edge].astype(dt)
            keys = ["dtype", "compressor"] if fmt == 2 else ["data_type", "codecs"]
            nodes.append(array_node(p, name, arr_name, keys=keys))
        add(name, f"{name}.zarr",
            f"zarr-python {zarr.__version__} with numcodecs {numcodecs.__version__} (zfpy)",
            f"numcodecs zfpy (zarr_format={fmt}: as the "
            + ("compressor" if fmt == 2 else "numcodecs.zfpy array→bytes serializer")
            + ") in fixed rate, precision and accuracy modes and reversible (tolerance -1), "
            "int32/int64/float32/float64, 1 to 4 dimensions, last chunk row unwritten (fill 3). "
            "Expected values: zarr-python reading back through numcodecs. No hand-edits.", nodes)


def pack_bits(served, nbytes, first, last, padding):
    """zarr-extensions packbits of the components `served` (as numpy gives them, nbytes each):
    bits first..last of each component, least significant first, then padding."""
    comps = np.ascontiguousarray(served).view(np.uint8).reshape(-1, nbytes)
    bits = np.unpackbits(comps, axis=1, bitorder="little")[:, first:last + 1].ravel()
    packed = np.packbits(bits, bitorder="little").tobytes()
    pad = bytes([(-len(bits)) % 8])
    return {"none": packed, "first_byte": pad + packed, "last_byte": packed + pad}[padding]


def unpack_expected(served, nbytes, first, last, signed):
    """What the spec decodes `served` to: bits first..last kept in place, sign-extended from
    last_bit for signed integers, zero-extended otherwise."""
    width = 8 * nbytes
    v = np.ascontiguousarray(served).view(f"<u{nbytes}").astype(np.uint64)
    mask = np.uint64((1 << (last + 1)) - (1 << first))
    v = v & mask
    if signed:
        neg = (v >> np.uint64(last)) & np.uint64(1) == 1
        v = np.where(neg, v | np.uint64(((1 << width) - 1) & ~((1 << (last + 1)) - 1)), v)
    return v.astype(f"<u{nbytes}").view(np.asarray(served).dtype)


def packbits_store():
    """zarr-extensions' packbits codec (zarrs' array→bytes codec for bool and sub-byte types),
    written by this script from the spec with numpy's packbits (bitorder="little")."""
    import ml_dtypes
    name = "packbits_v3"
    p = new_v3_store(name)
    nodes = [{"path": "", "type": "group"}]
    rng = np.random.default_rng(12)
    n, chunk, inner = 13, 5, 4  # unsharded: the last chunk stays unwritten (fill value)

    def ints(lo, hi, dt):
        return rng.integers(lo, hi, n).astype(dt)

    def small_float(t):
        return rng.normal(size=n).astype(np.float32).astype(getattr(ml_dtypes, t)).view(np.uint8)

    complex_vals = (rng.normal(size=n) + 1j * rng.normal(size=n)).astype(np.complex64)
    # (array, data type, its bit width, served values, bytes a component, signed, config, fill)
    cases = [
        ("bool", "bool", 1, ints(0, 2, bool), 1, False, {}, False),
        ("bool_sharded", "bool", 1, ints(0, 2, bool), 1, False,
         {"padding_encoding": "first_byte"}, False),
        ("int2", "int2", 2, ints(-2, 2, np.int8), 1, True, {"padding_encoding": "last_byte"}, -1),
        ("int4", "int4", 4, np.array([-8, -3, 0, 7, 5, -1, 2, -6, 1, 3, -4, 6, -2], np.int8), 1,
         True, {}, 0),
        ("int4_sharded", "int4", 4, ints(-8, 8, np.int8), 1, True, {}, -3),
        ("uint2", "uint2", 2, ints(0, 4, np.uint8), 1, False,
         {"padding_encoding": "first_byte"}, 3),
        ("uint4", "uint4", 4, ints(0, 16, np.uint8), 1, False, {}, 9),
        ("float4_e2m1fn", "float4_e2m1fn", 4, small_float("float4_e2m1fn"), 1, False, {}, 1.0),
        ("float6_e2m3fn", "float6_e2m3fn", 6, small_float("float6_e2m3fn"), 1, False,
         {"padding_encoding": "last_byte"}, 0.5),
        ("float6_e3m2fn", "float6_e3m2fn", 6, small_float("float6_e3m2fn"), 1, False, {}, -2.0),
        ("float8_e4m3fn", "float8_e4m3fn", 8, small_float("float8_e4m3fn"), 1, False, {}, 1.0),
        ("int16_bits_2_11", "int16", 16, ints(-2048, 2048, np.int16) * 4, 2, True,
         {"first_bit": 2, "last_bit": 11}, 0),
        ("uint8_bits_0_4", "uint8", 8, ints(0, 32, np.uint8), 1, False,
         {"first_bit": 0, "last_bit": 4, "padding_encoding": "first_byte"}, 0),
        ("float32_top16", "float32", 32, rng.normal(size=n).astype(np.float32), 4, False,
         {"first_bit": 16, "last_bit": 31}, 0.0),
        ("int32", "int32", 32, ints(-2**31, 2**31, np.int32), 4, True, {}, 7),
        ("complex64_bits_12_31", "complex64", 32, complex_vals, 4, False,
         {"first_bit": 12, "last_bit": 31}, [0.0, 0.0]),
    ]
    for arr_name, dtype_name, width, served, nbytes, signed, config, fill in cases:
        first = config.get("first_bit", 0)
        last = config.get("last_bit", width - 1)
        padding = config.get("padding_encoding", "none")
        if dtype_name == "bool":
            # numpy's own bool packing, least significant bit first, is the same bit sequence.
            assert pack_bits(served, 1, 0, 0, "none") == \
                np.packbits(served, bitorder="little").tobytes()
        expected = unpack_expected(served, nbytes, first, last, signed)
        if "last_bit" not in config:  # lossless: the spec gives the values back
            assert expected.tobytes() == served.tobytes()
        if dtype_name.startswith("float") and hasattr(ml_dtypes, dtype_name):
            fill_served = np.array([fill], dtype=getattr(ml_dtypes, dtype_name)).view(np.uint8)
        elif isinstance(fill, list):
            fill_served = np.array([complex(*fill)], dtype=served.dtype)
        else:
            fill_served = np.array([fill], dtype=served.dtype)
        codec = {"name": "packbits", "configuration": config}
        sharded = arr_name.endswith("_sharded")
        if sharded:
            codecs = [{"name": "sharding_indexed", "configuration": {
                "chunk_shape": [inner], "codecs": [codec],
                "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
                "index_location": "end"}}]
            grid = 2 * inner
        else:
            codecs, grid = [codec], chunk
        d = os.path.join(p, arr_name)
        os.makedirs(os.path.join(d, "c"))
        meta = {"zarr_format": 3, "node_type": "array", "shape": [n], "data_type": dtype_name,
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [grid]}},
                "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
                "fill_value": fill, "codecs": codecs, "attributes": {}}
        with open(os.path.join(d, "zarr.json"), "w") as f:
            json.dump(meta, f, indent=2)
        nchunks = -(-n // grid)
        full = np.concatenate([served, np.repeat(fill_served.view(served.dtype), -n % grid)])
        for ci in range(nchunks if sharded else nchunks - 1):
            block = full[ci * grid:(ci + 1) * grid]
            if sharded:
                blobs = [pack_bits(block[i:i + inner], nbytes, first, last, padding)
                         for i in range(0, grid, inner)]
                offsets = np.cumsum([0] + [len(b) for b in blobs])[:-1]
                index = np.array([[o, len(b)] for o, b in zip(offsets, blobs)], dtype="<u8")
                data = b"".join(blobs) + index.tobytes()
            else:
                data = pack_bits(block, nbytes, first, last, padding)
            with open(os.path.join(d, "c", str(ci)), "wb") as f:
                f.write(data)
        if not sharded:
            tail = (nchunks - 1) * grid
            expected = np.concatenate([expected[:tail],
                                       np.repeat(fill_served.view(expected.dtype), n - tail)])
        nodes.append(array_node(p, name, arr_name, keys=["data_type", "fill_value"],
                                expected=expected))
    add(name, f"{name}.zarr", f"scripts/make_wild_fixtures.py with numpy {np.__version__}",
        "zarr-extensions packbits (zarrs' array→bytes codec) for bool, int2/int4/uint2/uint4, "
        "small floats and standard types with first_bit/last_bit, every padding_encoding, two "
        "inside sharding; encoded from the spec with numpy (np.unpackbits/np.packbits, "
        "bitorder=\"little\"), bool cross-checked against np.packbits of the booleans. "
        "Expected values: the spec's decoding (bits back in place, sign-extended for signed "
        "integers), computed with numpy; the last chunk is unwritten (fill value) except in the "
        "sharded arrays. Small floats are served as their bits (uint8).", nodes)


def object_codecs():
    """Object arrays: chunks by numcodecs, .zarray in zarr-python 2's form."""
    name = "objects_v2"
    p = os.path.join(OUT, f"{name}.zarr")
    os.makedirs(p)
    with open(os.path.join(p, ".zgroup"), "w") as f:
        json.dump({"zarr_format": 2}, f)
    nodes = [{"path": "", "type": "group"}]
    f8 = "<f8"
    ragged = [np.array(x, dtype=f8) for x in ([0.5, -2.0], [], [1.0, 2.0, 3.25], [1e-3], [7.0])]
    grid = [["a", "b\nc"], ["", "z\\"], ["é", "x"]]
    mixed = ["s", 1, [1, 2], {"k": "v"}, None, True]
    cases = [
        ("vlen_array", numcodecs.VLenArray(f8), ragged, (5,), (2,),
         [" ".join(repr(float(v)) for v in x) for x in ragged]),
        ("json2", numcodecs.JSON(), grid, (3, 2), (2, 2), [s for row in grid for s in row]),
        ("json2_mixed", numcodecs.JSON(), mixed, (6,), (4,),
         [x if isinstance(x, str) else json.dumps(x, separators=(",", ":")) for x in mixed]),
        ("msgpack2", numcodecs.MsgPack(), grid, (3, 2), (2, 2), [s for row in grid for s in row]),
        ("pickle", numcodecs.Pickle(), grid, (3, 2), (2, 2), None),
    ]
    for arr_name, codec, values, shape, chunks, lines in cases:
        d = os.path.join(p, arr_name)
        os.makedirs(d)
        zarray = {"chunks": list(chunks), "compressor": None, "dtype": "|O", "fill_value": 0,
                  "filters": [codec.get_config()], "order": "C", "shape": list(shape),
                  "zarr_format": 2}
        with open(os.path.join(d, ".zarray"), "w") as f:
            json.dump(zarray, f, indent=4, sort_keys=True)
        arr = np.empty(shape, dtype=object)
        if len(shape) == 1:
            for i, v in enumerate(values):
                arr[i] = v
        else:
            for i, row in enumerate(values):
                for j, v in enumerate(row):
                    arr[i, j] = v
        grid_idx = np.ndindex(*[-(-s // c) for s, c in zip(shape, chunks)])
        for idx in grid_idx:
            sl = tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(idx, chunks, shape))
            block = np.empty(chunks, dtype=object)
            block[...] = 0  # the fill of the edge
            part = arr[sl]
            block[tuple(slice(0, n) for n in part.shape)] = part
            with open(os.path.join(d, ".".join(map(str, idx))), "wb") as f:
                f.write(codec.encode(block))
        if lines is None:
            nodes.append(array_node(p, name, arr_name, keys=["filters"], expect="eio"))
            continue
        width = max(len(s) for s in lines)
        nodes.append(array_node(p, name, arr_name, keys=["filters"], text=lines,
                                expected=np.array(lines, dtype=f"<U{max(width, 1)}").reshape(shape)))
    add(name, f"{name}.zarr", f"numcodecs {numcodecs.__version__}",
        "Object arrays: chunk bytes encoded by numcodecs (vlen-array <f8, json2, msgpack2, "
        "pickle), .zarray written by this script in zarr-python 2's form. Served as text lines: "
        "strings as they are, other values as compact JSON, vlen-array items as space-separated "
        "numbers. pickle reads EIO (decoding would run code).", nodes)


NCZARR_CDL = r"""netcdf wild {
dimensions:
    time = 4 ;
    x = 3 ;
variables:
    double time(time) ;
        time:units = "days since 2000-01-01" ;
    int temp(time, x) ;
        temp:_FillValue = -99 ;
    int64 big(x) ;
    ubyte u(x) ;
    uint64 ub(x) ;
data:
    time = 0, 1, 2, 3 ;
    temp = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 ;
    big = 1, -2, 3000000000 ;
    u = 1, 2, 255 ;
    ub = 0, 18446744073709551615, 7 ;
group: MyGroup {
  dimensions:
      y = 2 ;
  variables:
      float v(time, y) ;
      short w(y, x) ;
  data:
      v = 0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5 ;
      w = 1, 2, 3, 4, 5, 6 ;
  }
}
"""


def nczarr():
    """netCDF-c's NCZarr (ncgen), zipped as one top folder."""
    name = "nczarr_zip"
    work = os.path.join(OUT, "_nczarr")
    os.makedirs(work)
    cdl = os.path.join(work, "wild.cdl")
    with open(cdl, "w") as f:
        f.write(NCZARR_CDL)
    folder = os.path.join(work, "wild.zarr")
    subprocess.run(["ncgen", "-4", "-o", f"file://{folder}#mode=nczarr,file", cdl], check=True)
    usage = subprocess.run(["ncdump"], capture_output=True, text=True)
    library = [ln for ln in (usage.stdout + usage.stderr).splitlines() if "library version" in ln]
    writer = "ncgen, " + library[0].split(" of ")[0].strip()
    nodes = [{"path": "", "type": "group"}, {"path": "MyGroup", "type": "group"}]
    dims = {"time": ["time"], "temp": ["time", "x"], "big": ["x"], "u": ["x"], "ub": ["x"],
            "MyGroup/v": ["time", "y"],
            "MyGroup/w": ["y", "x"]}
    for path, names in dims.items():
        expected = None
        if path == "u":
            # zarr-python 3.1 refuses netCDF-c's "<u1": the one chunk is read with numpy.
            expected = np.fromfile(os.path.join(folder, "u", "0"), dtype="<u1")
        nodes.append(array_node(folder, name, path, keys=["shape", "dtype"], expected=expected,
                                json_extra={"dimension_names": names}))
    zip_path = os.path.join(OUT, f"{name}.zip")
    for dirpath, dirnames, filenames in os.walk(folder):
        for entry in dirnames + filenames + [""]:
            os.utime(os.path.join(dirpath, entry), (1704067200, 1704067200))  # 2024-01-01
    subprocess.run(["zip", "-q", "-r", "-X", zip_path, "wild.zarr"], cwd=work, check=True)
    shutil.rmtree(work)
    add(name, f"{name}.zip", writer,
        "NCZarr written by ncgen (mode=nczarr,file) from a CDL with a group, shared dimensions "
        "a fill value and netCDF's default fill values (int64, ubyte, uint64), then zipped with `zip -r` so the store is the zip's one top folder. "
        "dimension_names are netCDF's short names. Expected values read with zarr-python.", nodes)


def nczarr_strings():
    """netCDF-c as bundled in netCDF4-python (its NCZarr writer, mode=nczarr,file) with groups,
    shared dimensions, NC_STRING and NC_CHAR variables (Debian's ncgen 4.9.0 double-frees on
    NC_STRING, so this writer is used for strings)."""
    import netCDF4
    name = "nczarr_strings"
    folder = os.path.join(OUT, f"{name}.zarr")
    ds = netCDF4.Dataset(f"file://{folder}#mode=nczarr,file", "w")
    ds.title = "strings"
    ds.createDimension("n", 4)
    ds.createDimension("len", 6)
    names = ds.createVariable("names", str, ("n",))
    names[:] = np.array(["alpha", "", "héllo wörld", "z" * 40], dtype=object)
    chars = ds.createVariable("chars", "S1", ("n", "len"))
    chars[:] = netCDF4.stringtochar(np.array(["abc", "", "defghi", "x"], dtype="S6"))
    chars.long_name = "NC_CHAR array"
    count = ds.createVariable("count", "i4", ("n",), fill_value=-1)
    count[:3] = [1, 2, 3]
    g = ds.createGroup("sub")
    g.createDimension("m", 3)
    labels = g.createVariable("labels", str, ("m",))
    labels[:] = np.array(["x", "yy", "zzz"], dtype=object)
    grid = g.createVariable("grid", "f8", ("n", "m"))
    grid[:] = np.arange(12.0).reshape(4, 3) / 4
    h = g.createGroup("deeper")
    code = h.createVariable("code", "S1", ("m", "len"))  # dimensions from two ancestors
    code[:] = netCDF4.stringtochar(np.array(["ab", "cdefgh", ""], dtype="S6"))
    ds.close()
    # The header as netCDF-c reads the store back (Debian's ncdump 4.9.0 crashes on its strings).
    ds = netCDF4.Dataset(f"file://{folder}#mode=nczarr,file", "r")
    lines = [f"netcdf {name} {{"]
    cdl_group(ds, 0, lines)
    ds.close()
    cdl = os.path.join(OUT, "expected", name, "header.cdl")
    os.makedirs(os.path.dirname(cdl), exist_ok=True)
    with open(cdl, "w") as f:
        f.write("\n".join(lines + ["}"]) + "\n")
    nodes = [{"path": "", "type": "group"}, {"path": "sub", "type": "group"},
             {"path": "sub/deeper", "type": "group"}]
    dims = {"names": ["n"], "chars": ["n", "len"], "count": ["n"], "sub/labels": ["m"],
            "sub/grid": ["n", "m"], "sub/deeper/code": ["m", "len"]}
    for path, dim_names in dims.items():
        expected = None
        if path in ("chars", "sub/deeper/code"):
            # zarr-python 3.1 refuses netCDF-c's ">S1": the one chunk is read with numpy.
            chunk = os.path.join(folder, path, "0.0")
            expected = np.fromfile(chunk, dtype="S1").reshape(-1, 6)
        nodes.append(array_node(folder, name, path, keys=["shape", "dtype"], expected=expected,
                                json_extra={"dimension_names": dim_names}))
    add(name, f"{name}.zarr",
        f"netCDF4-python {netCDF4.__version__} (netCDF-c {netCDF4.__netcdf4libversion__})",
        "NCZarr written by the netCDF-c bundled in netCDF4-python (mode=nczarr,file): NC_STRING "
        "variables (stored as fixed-length |S128), NC_CHAR variables, a fill value, shared "
        "dimensions used from subgroups. Expected values read with zarr-python; header_cdl is "
        "ncdump -h's text built from netCDF-c's own reading of the store. No hand-edits.", nodes)
    STORES[-1]["header_cdl"] = os.path.relpath(cdl, OUT)


CDL_TYPES = {"i1": "byte", "u1": "ubyte", "i2": "short", "u2": "ushort", "i4": "int",
             "u4": "uint", "i8": "int64", "u8": "uint64", "f4": "float", "f8": "double",
             "S1": "char"}


def cdl_value(v):
    """An attribute value as ncdump prints it (the types this script writes: text, int)."""
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    v = np.asarray(v)
    assert v.dtype == np.int32 and v.ndim == 0, v.dtype
    return str(int(v))


def cdl_group(g, depth, lines):
    """ncdump -h's lines for group `g` as netCDF-c (through netCDF4-python) reads it."""
    ind = "  " * depth
    if g.dimensions:
        lines.append(f"{ind}dimensions:")
        lines += [f"{ind}\t{d} = {len(dim)} ;" for d, dim in g.dimensions.items()]
    if g.variables:
        lines.append(f"{ind}variables:")
        for v in g.variables.values():
            t = "string" if v.dtype is str else CDL_TYPES[v.dtype.str[1:]]
            lines.append(f"{ind}\t{t} {v.name}({', '.join(v.dimensions)}) ;")
            lines += [f"{ind}\t\t{v.name}:{a} = {cdl_value(v.getncattr(a))} ;"
                      for a in v.ncattrs()]
    if g.ncattrs():
        lines += ["", ind + ("// global attributes:" if depth == 0 else "// group attributes:")]
        lines += [f"{ind}\t\t:{a} = {cdl_value(g.getncattr(a))} ;" for a in g.ncattrs()]
    for sub in g.groups.values():
        lines += ["", f"{ind}group: {sub.name} {{"]
        cdl_group(sub, depth + 1, lines)
        lines.append(f"{ind}  }} // group {sub.name}")


def main():
    # zarrs/ is scripts/zarrs_writer's (see above): everything else is rewritten.
    os.makedirs(OUT, exist_ok=True)
    for entry in os.listdir(OUT):
        if entry != "zarrs":
            full = os.path.join(OUT, entry)
            shutil.rmtree(full) if os.path.isdir(full) else os.remove(full)
    times()
    v3_types()
    ext_types()
    compressors()
    zfpy_stores()
    packbits_store()
    object_codecs()
    nczarr()
    nczarr_strings()
    manifest = {"generator": "scripts/make_wild_fixtures.py",
                "versions": {"zarr": zarr.__version__, "numcodecs": numcodecs.__version__,
                             "numpy": np.__version__},
                "stores": STORES}
    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    sys.exit(main())
