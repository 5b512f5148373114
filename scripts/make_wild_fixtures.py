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
view shows (one element per line). Needs: zarr 3.1, numcodecs 0.16, pcodec, zfpy, msgpack,
ncgen, zip. Run from the repository root: python3 scripts/make_wild_fixtures.py
"""
import json
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
    p = os.path.join(OUT, f"{name}.zarr")
    os.makedirs(p)
    with open(os.path.join(p, "zarr.json"), "w") as f:
        json.dump({"zarr_format": 3, "node_type": "group", "attributes": {}}, f, indent=2)
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
             ("zfpy_f8", "<f8", numcodecs.ZFPY(mode=4, tolerance=-1), "eio")]
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
        "v2 arrays with numcodecs compressors lzma, pcodec and zfpy (zfpy reads EIO: no decoder), "
        "rows 40.. unwritten (fill 3); bare NaN/Infinity in .zattrs. No hand-edits.", nodes)


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


def main():
    if os.path.exists(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    times()
    v3_types()
    ext_types()
    compressors()
    object_codecs()
    nczarr()
    manifest = {"generator": "scripts/make_wild_fixtures.py",
                "versions": {"zarr": zarr.__version__, "numcodecs": numcodecs.__version__,
                             "numpy": np.__version__},
                "stores": STORES}
    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    sys.exit(main())
