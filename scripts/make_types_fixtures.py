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
"""
import json
import os
import shutil
import subprocess
import sys
from importlib.metadata import version

import numcodecs
import numpy as np
import tensorstore as ts
import zarr
from zarr.codecs import BloscCodec, CastValue, ScaleOffset

TS_VERSION = version("tensorstore")

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
    STORES.append({"name": name, "store": f"{name}.zarr", "writer": writer, "note": note,
                   "nodes": nodes})


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
    cases = [("int4", [-8, -1, 0, 7, 3, -3, 5], -3, np.int8),
             ("int2", [-2, -1, 0, 1, 1, -2, 0], -1, np.int8),
             ("bfloat16", [1.0, -2.5, 0.0, 3.140625, 1e30, -0.0, float("inf")], 1.5, np.uint16)]
    for fmt in (3, 2):
        name = f"tensorstore_v{fmt}"
        p = os.path.join(OUT, f"{name}.zarr")
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
        add(name, f"tensorstore {TS_VERSION}",
            f"tensorstore's int4, int2 and bfloat16 (zarr_format {fmt}): int4/int2 stored one "
            "element a byte with only the low bits set (-8 is 0x08); the last chunk unwritten "
            "(fill value). Expected values from tensorstore's read: the small integers as int8, "
            "bfloat16 as its uint16 bits. No hand-edits.", nodes)


def struct_types():
    """zarr-python 3.4's `struct` data type: nested, with bytes fields, a missing chunk."""
    name = "struct_v3"
    p = os.path.join(OUT, f"{name}.zarr")
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
    p = os.path.join(OUT, f"{name}.zarr")
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
    p = os.path.join(OUT, f"{name}.zarr")
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
        p = os.path.join(OUT, f"{name}.zarr")
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


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    tensorstore_types()
    struct_types()
    scale_offset_codecs()
    rectilinear()
    gdal_snappy()
    manifest = {"generator": "scripts/make_types_fixtures.py",
                "versions": {"zarr": zarr.__version__, "numcodecs": numcodecs.__version__,
                             "tensorstore": TS_VERSION, "numpy": np.__version__},
                "stores": STORES}
    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    sys.exit(main())
