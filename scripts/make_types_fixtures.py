#!/usr/bin/env python3
"""Writes tests/fixtures/types/: what zarr-python 3.4 and tensorstore write that older zarrfs
misread (issue 20), with expected values beside them and tests/fixtures/types/manifest.json (the
format of tests/fixtures/manifest.json, read by tests/types.rs).

Writers: tensorstore (`int4`, `int2` with only the low bits meaningful, `bfloat16`; Zarr v3 and
v2), zarr-python 3.4 (the `struct` data type; the `scale_offset` and `cast_value` codecs, with
cast-value-rs; the `rectilinear` chunk grid), GDAL (blosc `snappy`; Debian's gdal-bin). Expected values come from the writer's own reader: tensorstore's read (the small
integers as int8 values, bfloat16 as its uint16 bits, as zarrfs serves them), zarr-python's.

Needs Python >= 3.12: python -m venv /tmp/venv-types && /tmp/venv-types/bin/pip install
'zarr==3.4.*' numcodecs tensorstore ml_dtypes 'cast-value-rs>=0.4.2' and apt-get install gdal-bin; then, from the
repository root: /tmp/venv-types/bin/python scripts/make_types_fixtures.py

With arguments (generator names: tensorstore, struct, scale_offset, rectilinear, gdal, float16,
repaired, sharded_scale_offset), only those generators' stores are written again and the other
stores of the manifest are kept: the later generators need only zarr-python and numcodecs.
"""
import json
import os
import shutil
import subprocess
import sys
from importlib.metadata import version

import numcodecs
import numpy as np
import zarr
from zarr.codecs import BloscCodec, BytesCodec, CastValue, ScaleOffset, ShardingCodec

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "tests", "fixtures", "types")
STORES = []


def save_npy(rel, arr):
    full = os.path.join(OUT, rel)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    np.save(full, np.asarray(arr), allow_pickle=False)
    return rel


def array_node(store_dir, name, path, expected, keys):
    node = {"path": path, "type": "array",
            "npy": save_npy(f"expected/{name}/{path}.npy", expected)}
    if keys:
        meta_file = os.path.join(store_dir, path, "zarr.json")
        if not os.path.exists(meta_file):
            meta_file = os.path.join(store_dir, path, ".zarray")
        with open(meta_file) as f:
            doc = json.load(f)
        node["json"] = {k: doc[k] for k in keys}
    return node


def add(name, writer, note, nodes):
    """Lists a store in the manifest, in place of an earlier listing of the same name."""
    entry = {"name": name, "store": f"{name}.zarr", "writer": writer, "note": note,
             "nodes": nodes}
    for i, old in enumerate(STORES):
        if old["name"] == name:
            STORES[i] = entry
            return
    STORES.append(entry)


def fresh(name):
    """The path of store `name`, with it and its expected values removed."""
    shutil.rmtree(os.path.join(OUT, "expected", name), ignore_errors=True)
    p = os.path.join(OUT, f"{name}.zarr")
    shutil.rmtree(p, ignore_errors=True)
    return p


def write_group(path, fmt):
    os.makedirs(path)
    if fmt == 3:
        with open(os.path.join(path, "zarr.json"), "w") as f:
            json.dump({"zarr_format": 3, "node_type": "group", "attributes": {}}, f)
    else:
        with open(os.path.join(path, ".zgroup"), "w") as f:
            json.dump({"zarr_format": 2}, f)


def tensorstore_types():
    """int4/int2 (only the low bits meaningful: -8 is 0x08) and bfloat16, in v3 and v2."""
    import tensorstore as ts
    cases = [("int4", [-8, -1, 0, 7, 3, -3, 5], -3, np.int8),
             ("int2", [-2, -1, 0, 1, 1, -2, 0], -1, np.int8),
             ("bfloat16", [1.0, -2.5, 0.0, 3.140625, 1e30, -0.0, float("inf")], 1.5, np.uint16)]
    for fmt in (3, 2):
        name = f"tensorstore_v{fmt}"
        p = fresh(name)
        write_group(p, fmt)
        nodes = [{"path": "", "type": "group"}]
        for dt, vals, fill, served in cases:
            if fmt == 3:
                spec = {"driver": "zarr3", "metadata": {
                    "shape": [10], "data_type": dt, "fill_value": fill,
                    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}}}}
                keys = ["data_type", "fill_value"]
            else:
                spec = {"driver": "zarr", "metadata": {
                    "shape": [10], "chunks": [4], "dtype": dt, "fill_value": fill,
                    "compressor": {"id": "zlib", "level": 1}}}
                keys = ["dtype", "fill_value"]
            spec.update(kvstore={"driver": "file", "path": os.path.join(p, dt)}, create=True)
            t = ts.open(spec).result()
            # Elements 7..9 (chunk 2 partly, and nothing of it written) stay the fill value.
            t[:7].write(np.array(vals).astype(t.dtype.numpy_dtype)).result()
            got = t.read().result()
            expected = got.view(np.uint16) if served == np.uint16 else got.astype(np.int8)
            nodes.append(array_node(p, name, dt, expected, keys))
        add(name, f"tensorstore {version('tensorstore')}",
            f"tensorstore's int4, int2 and bfloat16 (zarr_format {fmt}): int4/int2 stored one "
            "element a byte with only the low bits set (-8 is 0x08); the last chunk unwritten "
            "(fill value). Expected values from tensorstore's read: the small integers as int8, "
            "bfloat16 as its uint16 bits. No hand-edits.", nodes)


def struct_types():
    """zarr-python 3.4's `struct` data type: nested, with bytes fields, a missing chunk."""
    name = "struct_v3"
    p = fresh(name)
    root = zarr.open_group(p, mode="w", zarr_format=3)
    point = np.dtype([("x", "<f4"), ("y", "<f4")])
    cases = [
        ("flat", np.dtype([("id", "<i4"), ("flags", "u1"), ("value", "<f8"), ("tag", "S3")]),
         [(1, 2, 0.5, b"a"), (-2, 255, np.nan, b"bcd"), (3, 0, 1e300, b""), (4, 7, -0.0, b"x"),
          (5, 1, 2.0, b"yz")], (9, 1, -1.5, b"f")),
        ("nested", np.dtype([("p", point), ("v", "<f8"), ("t", "<M8[s]")]),
         [((1, 2), 3.5, 10), ((-1, 0.25), -2.0, 0), ((0, 0), 1.0, -5), ((7, 8), 9.0, 1),
          ((1.5, 2.5), 0.0, 2)], ((-1, -1), 0.5, 100)),
    ]
    nodes = [{"path": "", "type": "group"}]
    for arr_name, dt, vals, fill in cases:
        a = root.create_array(arr_name, shape=(7,), chunks=(2,), dtype=dt,
                              fill_value=np.array(fill, dtype=dt)[()])
        a[:5] = np.array(vals, dtype=dt)  # chunk 2 half written, chunk 3 missing: fill value
        nodes.append(array_node(p, name, arr_name, a[...], ["data_type", "fill_value"]))
    add(name, f"zarr-python {zarr.__version__}",
        "zarr-python 3.4's default v3 encoding of numpy structured dtypes: the `struct` data "
        "type (fields as objects, a nested struct, bytes and datetime fields), fill values as "
        "objects, the last chunks unwritten. No hand-edits.", nodes)


def scale_offset_codecs():
    """zarr-python 3.4's `scale_offset` + `cast_value` codecs (zarr-extensions)."""
    name = "scale_offset_v3"
    p = fresh(name)
    root = zarr.open_group(p, mode="w", zarr_format=3)
    nan_map = {"encode": [("NaN", -32768)], "decode": [(-32768, "NaN")]}
    cases = [
        # float64 packed into int16, NaN mapped both ways, out-of-range values clamped.
        ("f8_i2_nan", "float64", float("nan"),
         [ScaleOffset(offset=10, scale=100),
          CastValue(data_type="int16", out_of_range="clamp", scalar_map=nan_map)],
         [10.0, 10.5, 11.234, -400.0, float("nan"), 12.0]),
        # The spec's example: float64 into uint8 with 0 reserved for NaN.
        ("f8_u1", "float64", float("nan"),
         [ScaleOffset(offset=-10, scale=0.1),
          CastValue(data_type="uint8", rounding="nearest-even",
                    scalar_map={"encode": [("NaN", 0)], "decode": [(0, "NaN")]})],
         [0.0, 25.0, 2540.0, 1234.5, float("nan"), 15.0]),
        # uint16 range reduction, integer arithmetic only.
        ("u2_u1", "uint16", 1000, [ScaleOffset(offset=1000), CastValue(data_type="uint8")],
         [1000, 1255, 1100, 1001, 1002, 1003]),
        # int32 scaled by 4: decoding divides exactly.
        ("i4_scale", "int32", 8, [ScaleOffset(offset=-3, scale=4)],
         [-3, 0, 5, 1000, -1000, 7]),
        # float32 through towards-zero rounding and wrapping into int8.
        ("f4_i1_wrap", "float32", 0.0,
         [CastValue(data_type="int8", rounding="towards-zero", out_of_range="wrap")],
         [1.9, -1.9, 127.0, 200.0, -129.5, 3.0]),
        # float64 stored as float32.
        ("f8_f4", "float64", -1.0, [CastValue(data_type="float32")],
         [0.1, 1e30, -2.5, float("inf"), float("nan"), 1e-40]),
    ]
    nodes = [{"path": "", "type": "group"}]
    for arr_name, dt, fill, filters, vals in cases:
        a = root.create_array(arr_name, shape=(8,), chunks=(3,), dtype=dt, fill_value=fill,
                              filters=filters,
                              compressors=[BloscCodec(cname="zstd", clevel=3, shuffle="shuffle")])
        a[:6] = np.array(vals, dtype=dt)  # element 6, 7 (chunk 2 half written) and fill
        nodes.append(array_node(p, name, arr_name, a[...], ["data_type", "fill_value", "codecs"]))
    add(name, f"zarr-python {zarr.__version__} (cast-value-rs)",
        "zarr-python 3.4's scale_offset and cast_value codecs (zarr-extensions) with blosc: "
        "float64 packed into int16 and uint8 with NaN in scalar_map, integer range reduction, "
        "integer scaling, towards-zero rounding with wrapping, float64 stored as float32. "
        "No hand-edits.", nodes)


def rectilinear():
    """zarr-python 3.4's `rectilinear` chunk grid (array.rectilinear_chunks): explicit and
    run-length edge lengths, missing chunks, uneven shards of regular inner chunks."""
    name = "rectilinear_v3"
    p = fresh(name)
    with zarr.config.set({"array.rectilinear_chunks": True}):
        root = zarr.open_group(p, mode="w", zarr_format=3)
        nodes = [{"path": "", "type": "group"}]
        a = root.create_array("grid2d", shape=(10, 7), chunks=[[3, 3, 4], [2, 5]], dtype="int32",
                              fill_value=-1)
        a[:6, :] = np.arange(42).reshape(6, 7)  # the last row of chunks stays unwritten
        a[7, 1] = 99
        r = root.create_array("runs", shape=(20,), chunks=[[2, 2, 2, 4, 4, 6]],
                              dtype="float64", fill_value=float("nan"),
                              compressors=[zarr.codecs.GzipCodec(level=5)])
        r[:6] = np.linspace(-1, 1, 6)
        r[14:] = np.arange(6) * 0.5  # chunks 6..10 and 10..14 stay unwritten
        o = root.create_array("thin", shape=(5, 6), chunks=[[1, 4], [3, 3]], dtype="uint8",
                              fill_value=7)
        o[:, :4] = np.arange(20).reshape(5, 4)
        s = root.create_array("sharded", shape=(12, 8), chunks=(2, 4), shards=[[4, 8], [4, 4]],
                              dtype="uint16", fill_value=3)
        s[:4, :] = np.arange(32).reshape(4, 8)
        s[6:10, 4:] = 500  # shard (1, 1) partly written, shard (1, 0) missing
        for arr in ("grid2d", "runs", "thin", "sharded"):
            nodes.append(array_node(p, name, arr, root[arr][...], ["chunk_grid", "fill_value"]))
    add(name, f"zarr-python {zarr.__version__}",
        "zarr-python 3.4's rectilinear chunk grid (array.rectilinear_chunks): explicit edge "
        "lengths, run-length [size, count] entries, a one-row chunk, uneven shards of regular "
        "inner chunks; unwritten chunks and shards read as "
        "the fill value. No hand-edits.", nodes)


def gdal_snappy():
    """GDAL's Zarr driver (Debian's gdal-bin, whose c-blosc has snappy) writing blosc `snappy`,
    as Zarr v2 and as its Zarr v3 (the 2022 draft layout); expected values from GDAL's own
    reading (`gdalmdiminfo -detailed`)."""
    asc = os.path.join(OUT, "snappy.asc")
    with open(asc, "w") as f:
        f.write("ncols 7\nnrows 5\nxllcorner 0\nyllcorner 0\ncellsize 1\nNODATA_value -9999\n")
        for r in range(5):
            f.write(" ".join(str((r * 37 + c * 11) % 200 - 50) for c in range(7)) + "\n")
    version = subprocess.run(["gdalinfo", "--version"], capture_output=True, text=True,
                             check=True).stdout.split(",")[0]
    for fmt, tag in (("ZARR_V2", "v2"), ("ZARR_V3", "v3_draft")):
        name = f"gdal_snappy_{tag}"
        p = fresh(name)
        subprocess.run(["gdal_translate", "-q", "-of", "ZARR", "-ot", "Int16", "-co",
                        f"FORMAT={fmt}", "-co", "COMPRESS=BLOSC", "-co", "BLOSC_CNAME=snappy",
                        "-co", "BLOSC_SHUFFLE=BYTE", "-co", "BLOCKSIZE=2,3", asc, p], check=True)
        info = json.loads(subprocess.run(["gdalmdiminfo", "-detailed", p], capture_output=True,
                                         text=True, check=True).stdout)
        nodes = [{"path": "", "type": "group"}]
        for arr_name, arr in sorted(info["arrays"].items()):
            dtype = {"Int16": "<i2", "Float64": "<f8"}[arr["datatype"]]
            nodes.append(array_node(p, name, arr_name, np.array(arr["values"], dtype=dtype),
                                    ["compressor"] if fmt == "ZARR_V2" and dtype == "<i2" else []))
        add(name, version,
            f"GDAL's Zarr driver, FORMAT={fmt}, COMPRESS=BLOSC BLOSC_CNAME=snappy, an int16 "
            "raster in chunks of 2x3 and its X/Y coordinate arrays (uncompressed). No "
            "hand-edits.", nodes)
    os.remove(asc)



def float16_codecs():
    """float16 decoded by numcodecs' fixedscaleoffset (Zarr v2, and zarr-python 3's
    numcodecs.fixedscaleoffset in v3) and by zarr-python's scale_offset: values whose decoding
    rounds a float64 result to float16 next to a tie, where rounding through float32 first
    gives the neighbour."""
    fso = dict(offset=273.15, scale=10, dtype="<f2", astype="<i4")
    codec = numcodecs.FixedScaleOffset(**fso)
    halves = np.arange(0, 1 << 16, dtype=np.uint16).view(np.float16)
    halves = halves[np.isfinite(halves) & (np.abs(halves.astype(np.float64)) < 3000)]
    stored = codec.encode(halves)
    twice = (stored.astype(np.float64) / 10 + 273.15).astype(np.float32).astype(np.float16)
    near = halves[codec.decode(stored).view(np.uint16) != twice.view(np.uint16)]
    values = np.concatenate([near, np.linspace(-2000, 2000, 60).astype(np.float16)])
    n = len(values) + 60  # the last chunk unwritten: the fill value
    for fmt in (2, 3):
        name = f"float16_v{fmt}"
        p = fresh(name)
        root = zarr.open_group(p, mode="w", zarr_format=fmt)
        nodes = [{"path": "", "type": "group"}]
        if fmt == 2:
            a = root.create_array("fixedscaleoffset", shape=(n,), chunks=(50,), dtype="<f2",
                                  fill_value=-1.5, filters=[codec],
                                  compressors=[numcodecs.Zlib(level=1)])
            keys = ["dtype", "filters", "fill_value"]
        else:
            from zarr.codecs.numcodecs import FixedScaleOffset
            a = root.create_array("fixedscaleoffset", shape=(n,), chunks=(50,),
                                  dtype="float16", fill_value=-1.5,
                                  filters=[FixedScaleOffset(**fso)], compressors=None)
            keys = ["data_type", "codecs", "fill_value"]
        a[: len(values)] = values
        nodes.append(array_node(p, name, "fixedscaleoffset", a[...], keys))
        if fmt == 3:
            spread = halves[:: max(1, len(halves) // 500)]
            b = root.create_array("scale_offset", shape=(len(spread) + 40,), chunks=(128,),
                                  dtype="float16", fill_value=0.5,
                                  filters=[ScaleOffset(offset=-3.3, scale=0.1)],
                                  compressors=None)
            b[: len(spread)] = spread
            nodes.append(array_node(p, name, "scale_offset", b[...], keys))
        add(name, f"zarr-python {zarr.__version__}, numcodecs {numcodecs.__version__}",
            f"float16 arrays (zarr_format {fmt}) through numcodecs' fixedscaleoffset (offset "
            "273.15, scale 10, stored as int32): the values whose decoding rounds a float64 "
            "to float16 next to a tie (rounding through float32 first gives the neighbour), "
            "then others; in v3 also zarr-python's scale_offset on float16. The last chunk "
            "unwritten. Expected values from zarr-python's read. No hand-edits.", nodes)


def edit_json(path, change):
    """Rewrites the JSON document at `path` with `change` applied to it."""
    with open(path) as f:
        doc = json.load(f)
    change(doc)
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)


def repaired_metadata():
    """Metadata that zarr-python 3.4 reads through core/metadata/repair.py (chunk sizes 0 and
    `true`, a regular grid with edge lists in some axes as zarr 3.2 wrote it, rectilinear edge
    lengths written as floats), float fills as hex of another width: each written valid by
    zarr-python 3.4, then edited into the invalid form, and read back by zarr-python 3.4 for
    the expected values."""
    import warnings
    for fmt in (2, 3):
        name = f"repaired_v{fmt}"
        p = fresh(name)
        nodes = [{"path": "", "type": "group"}]
        with zarr.config.set({"array.rectilinear_chunks": True}):
            root = zarr.open_group(p, mode="w", zarr_format=fmt)
            cases = []  # (path, the edit of its metadata document)
            z = root.create_array("zero_chunks", shape=(5,), chunks=(1,), dtype="<i2",
                                  fill_value=7)
            z[3] = 42
            cases.append(("zero_chunks", ["chunks"] if fmt == 2 else
                          ["chunk_grid", "configuration", "chunk_shape"], [0]))
            root.create_array("empty_zero", shape=(0, 3), chunks=(1, 3), dtype="<f4",
                              fill_value=1.0)
            cases.append(("empty_zero", ["chunks"] if fmt == 2 else
                          ["chunk_grid", "configuration", "chunk_shape"], [0, 3]))
            t = root.create_array("true_chunks", shape=(4, 3), chunks=(1, 3), dtype="<u2",
                                  fill_value=9)
            t[:3] = np.arange(9).reshape(3, 3)
            cases.append(("true_chunks", ["chunks"] if fmt == 2 else
                          ["chunk_grid", "configuration", "chunk_shape"], [True, 3]))
            if fmt == 3:
                s = root.create_array("sharded_zero", shape=(8,), chunks=(2,), shards=(2,),
                                      dtype="<i4", fill_value=-1)
                s[2:5] = [1, 2, 3]
                cases.append(("sharded_zero", ["chunk_grid", "configuration", "chunk_shape"],
                              [0]))
                r = root.create_array("regular_edges", shape=(6, 4), chunks=[[4, 2], [2, 2]],
                                      dtype="<i2", fill_value=-5)
                r[:5, :] = np.arange(20).reshape(5, 4)
                cases.append(("regular_edges", ["chunk_grid"],
                              {"name": "regular",
                               "configuration": {"chunk_shape": [[4, 2], 2]}}))
                e = root.create_array("float_edges", shape=(8,), chunks=[[1, 3, 4]],
                                      dtype="<f8", fill_value=0.25)
                e[:4] = [1.5, 2.5, 3.5, 4.5]
                cases.append(("float_edges", ["chunk_grid", "configuration", "chunk_shapes"],
                              [[True, 3.0, 4.0]]))
                for dt, fill in (("float64", "0x7fc00000"), ("float32", "0x3ff8000000000000"),
                                 ("float16", "0x40400000")):
                    h = root.create_array(f"hex_fill_{dt}", shape=(3,), chunks=(2,), dtype=dt)
                    h[0] = 2.0
                    cases.append((f"hex_fill_{dt}", ["fill_value"], fill))
        for path, keys, value in cases:
            meta = os.path.join(p, path, ".zarray" if fmt == 2 else "zarr.json")

            def change(doc, keys=keys, value=value):
                for k in keys[:-1]:
                    doc = doc[k]
                doc[keys[-1]] = value
            edit_json(meta, change)
        with zarr.config.set({"array.rectilinear_chunks": True}), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            root = zarr.open_group(p, mode="r")
            for path, _, _ in cases:
                nodes.append(array_node(p, name, path, root[path][...], []))
        add(name, f"zarr-python {zarr.__version__}",
            f"Invalid metadata (zarr_format {fmt}) that zarr-python 3.4 reads "
            "(core/metadata/repair.py): arrays written valid by zarr-python, then their "
            "documents hand-edited: chunk sizes 0 (read as 1, or as the inner chunk size of "
            "a shard) and true (read as 1)" + (
                "; a regular grid with edge lists in one axis (read as rectilinear, as zarr "
                "3.2 wrote them); rectilinear edges true, 3.0, 4.0; float fills as hex of "
                "another width (\"0x7fc00000\" for float64)" if fmt == 3 else "") +
            ". Expected values from zarr-python 3.4's read of the edited documents.", nodes)


def sharded_scale_offset():
    """zarr-python 3.4's scale_offset before sharding_indexed: at the top level (reading
    inner chunks on their own), and inside a shard before an inner shard, whose absent inner
    chunks hold the fill value encoded by scale_offset."""
    name = "sharded_scale_offset_v3"
    p = fresh(name)
    root = zarr.open_group(p, mode="w", zarr_format=3)
    nodes = [{"path": "", "type": "group"}]
    top = root.create_array(
        "top", shape=(14,), chunks=(6,), dtype="float64", fill_value=10.5,
        serializer=BytesCodec(), compressors=None)
    # Written again below with the codecs zarr-python's create_array does not place.
    root.create_array("inexact", shape=(12,), chunks=(6,), dtype="float64", fill_value=0.0)
    root.create_array("nested", shape=(24,), chunks=(12,), dtype="float64", fill_value=0.0)
    codecs = {
        "top": [ScaleOffset(offset=10, scale=100).to_dict(),
                ShardingCodec(chunk_shape=(2,), codecs=[BytesCodec()]).to_dict()],
        "inexact": [ScaleOffset(offset=0.1, scale=3).to_dict(),
                    ShardingCodec(chunk_shape=(2,), codecs=[BytesCodec()]).to_dict()],
        "nested": [ShardingCodec(chunk_shape=(6,), codecs=[
            ScaleOffset(offset=0.1, scale=3),
            ShardingCodec(chunk_shape=(2,), codecs=[BytesCodec()])]).to_dict()],
    }
    del top
    for path, chain in codecs.items():
        edit_json(os.path.join(p, path, "zarr.json"),
                  lambda doc, chain=chain: doc.update(codecs=chain))
    root = zarr.open_group(p, mode="r+")
    root["top"][0:2] = [1.25, -3.5]
    root["top"][7:9] = [100.0, 0.01]  # shards 0 and 1 partly written, shard 2 absent
    root["inexact"][0:2] = [1.0, 2.0]
    root["nested"][0:2] = [1.0, 2.0]
    root["nested"][8:10] = [3.0, 4.0]  # inner shards with absent inner chunks, one absent
    keys = ["codecs", "fill_value"]
    nodes.append(array_node(p, name, "top", root["top"][...], keys))
    nodes.append({"path": "inexact", "type": "array", "expect": "eio"})
    nodes.append(array_node(p, name, "nested", root["nested"][...], keys))
    add(name, f"zarr-python {zarr.__version__}",
        "scale_offset before sharding_indexed (codec lists set in zarr.json before any chunk "
        "was written; zarr-python's create_array puts filters inside the shard). 'top': at "
        "the top level, fill 10.5, which scale_offset encodes and decodes back exactly; "
        "'inexact': fill 0 with offset 0.1 and scale 3, whose absent inner chunks zarr-python "
        "reads as -1.39e-17, not the fill value (zarrfs refuses it); 'nested': inside a "
        "shard before an inner shard, whose absent inner chunks hold the encoded fill. "
        "Expected values from zarr-python's read.", nodes)


GENERATORS = {
    "tensorstore": tensorstore_types,
    "struct": struct_types,
    "scale_offset": scale_offset_codecs,
    "rectilinear": rectilinear,
    "gdal": gdal_snappy,
    "float16": float16_codecs,
    "repaired": repaired_metadata,
    "sharded_scale_offset": sharded_scale_offset,
}


def main(argv):
    manifest_path = os.path.join(OUT, "manifest.json")
    unknown = [a for a in argv if a not in GENERATORS]
    if unknown:
        sys.exit(f"unknown generators {unknown}; known: {list(GENERATORS)}")
    if argv:
        with open(manifest_path) as f:
            old = json.load(f)
        STORES.extend(old["stores"])
        versions = old["versions"]
    else:
        shutil.rmtree(OUT, ignore_errors=True)
        os.makedirs(OUT)
        versions = {}
    for name in argv or GENERATORS:
        GENERATORS[name]()
    versions.update(zarr=zarr.__version__, numcodecs=numcodecs.__version__,
                    numpy=np.__version__)
    if not argv or "tensorstore" in argv:
        versions["tensorstore"] = version("tensorstore")
    manifest = {"generator": "scripts/make_types_fixtures.py", "versions": versions,
                "stores": STORES}
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
