#!/usr/bin/env python3
"""Generate the "every Zarr dialect in the wild" fixtures of zarrfs.

Writes tests/fixtures/dialects/ (deleted and rewritten on every run): one store per dialect, the
expected served bytes (expected/<store>/<node>.npy, .txt for variable-length strings) and
manifest.json, the contract the Rust tests read. The tests never run this script; run it by hand
after changing it, twice, and check that the second run changes nothing (`git status`).

    python3 scripts/make_dialect_fixtures.py
    python3 scripts/make_dialect_fixtures.py --only draft2019,nczarr_fill

`--only` rebuilds the stores of the named builders and keeps every other store and its manifest
entry as they are: for a machine that has the writers of those builders only.

Each store is written by the tool users really have, read back with that same tool (the reference
reader), and the reference reader's values are what the .npy files hold. Where no writer exists
the store is made by hand from the spec and says so in its manifest "note".

Writers and how to get them (all from package registries or from netCDF-c's own source):

* main interpreter: python3 with zarr-python 3 (3.1.x), numcodecs, numpy, netCDF4-python 1.7.x
  (its PyPI wheel bundles netCDF-c 4.10.x and the NCZarr filter plugins), tensorstore.
    pip install 'zarr>=3.1,<3.2' netCDF4 numcodecs numpy tensorstore
* zarr-python 2.18 (v3 draft stores, v2 consolidated and vlen stores):
    python3 -m venv /work/venvs/zarr2 && /work/venvs/zarr2/bin/pip install 'zarr==2.18.*' 'numpy<2'
* NCZarr generations 1-3 need old netCDF-c releases. No PyPI wheel bundles 4.8.x, and the 4.9.x
  wheels bundle no NCZarr filter plugins, so build netCDF-c from its git tags and netCDF4-python
  1.6.5 from source against each:
    apt-get install -y cmake m4 libhdf5-dev zlib1g-dev libzstd-dev libblosc-dev libbz2-dev \
        libaec-dev libxml2-dev libcurl4-openssl-dev
    # for TAG in v4.8.0 v4.9.0 v4.9.2 (source: github.com/Unidata/netcdf-c at that tag)
    cmake $SRC -DCMAKE_INSTALL_PREFIX=/work/venvs/netcdf-c-$VER -DENABLE_DAP=OFF \
        -DENABLE_TESTS=OFF -DENABLE_NCZARR=ON -DENABLE_NCZARR_S3=OFF -DENABLE_BYTERANGE=OFF \
        -DENABLE_EXAMPLES=OFF -DHDF5_VERSION=1.10.8 \
        -DHDF5_C_LIBRARY=/usr/lib/x86_64-linux-gnu/hdf5/serial/libhdf5.so \
        -DHDF5_HL_LIBRARY=/usr/lib/x86_64-linux-gnu/hdf5/serial/libhdf5_hl.so \
        -DHDF5_INCLUDE_DIR=/usr/include/hdf5/serial -DENABLE_PLUGINS=ON \
        -DPLUGIN_INSTALL_DIR=/work/venvs/netcdf-c-$VER/plugins   # 4.9.0: =YES with
        # HDF5_PLUGIN_PATH=/work/venvs/netcdf-c-4.9.0/plugins in the environment
    make -j2 && make install
    python3 -m venv /work/venvs/netcdf4-c$VER
    NETCDF4_DIR=/work/venvs/netcdf-c-$VER HDF5_INCDIR=/usr/include/hdf5/serial \
        HDF5_LIBDIR=/usr/lib/x86_64-linux-gnu/hdf5/serial \
        /work/venvs/netcdf4-c$VER/bin/pip install --no-cache-dir --no-binary netCDF4 \
        'netCDF4==1.6.5' 'numpy<2'
  Generation map (checked against the source): 4.8.0 writes generation 1 (.nczarr, .nczgroup,
  .nczvar, .nczattr; the names .nczarray/.nczattrs only ever appear in the v1 *readers* of
  4.8.1+, no release wrote them); 4.8.1 and 4.9.0 write generation 2 (_NCZARR_* keys); 4.9.1
  and 4.9.2 generation 3 (_nczarr_* keys in .zgroup/.zarray); 4.9.3+/4.10 generation 4 (all in
  .zattrs; a scalar is {"scalar": 1, "storage": "chunked"}, not "storage": "scalar"; an
  unlimited dimension is {"size": n, "unlimited": 1}).
  A snapshot of the netCDF-c repository may lack some large test-data blobs: only the library,
  ncdump/ncgen sources and plugins are needed.
  Debian 12's netcdf-bin (1:4.9.0-3) writes generation 2 too, but has no NCZarr filter plugins.
  Override the interpreter paths with ZARRFS_ZARR2_PYTHON, ZARRFS_NC{1,2,3,4}_PYTHON and the
  plugin directories with ZARRFS_NC{2,3}_PLUGINS.

Known writer bugs worked around here (all in the netCDF-c releases, not in this script):
  4.8.0 and 4.9.0 crash OPENING a store that holds a scalar variable (segfault / assertion
  `NCJlength(jdimrefs) == rank`): their reference read is made on a copy without the scalar,
  whose value is taken from its raw chunk; 4.8.0 never stores a scalar's data (the chunk holds
  the default fill value, which is what zarrfs must serve); 4.8.0 fails writing root data once
  a subgroup exists (so subgroups are created after the root's data); 4.8.0 cannot write
  NC_STRING variables (assertion) and 4.9.0 aborts (double free) on them, and neither can store
  an NC_STRING attribute (netCDF4-python writes non-ASCII text attributes as NC_STRING); 4.9.2
  trips a chunk-cache assertion (zxcache.c constraincache) when a variable is written after an
  NC_STRING variable (so NC_STRING comes last); no NCZarr before 4.9.3 has unlimited
  dimensions; 4.8.0 has no NCZarr filters. netCDF-c 4.9.2 cannot open the generation 1-2 stores
  and 4.10.1 cannot open generations 1-3 (error or segfault): zarrfs reading them matters.
"""

import argparse
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "tests" / "fixtures" / "dialects"
EXP = OUT / "expected"

ZARR2_PY = os.environ.get("ZARRFS_ZARR2_PYTHON", "/work/venvs/zarr2/bin/python")
NC_ENVS = {
    1: (os.environ.get("ZARRFS_NC1_PYTHON", "/work/venvs/netcdf4-c4.8.0/bin/python"), None),
    2: (os.environ.get("ZARRFS_NC2_PYTHON", "/work/venvs/netcdf4-c4.9.0/bin/python"),
        os.environ.get("ZARRFS_NC2_PLUGINS", "/work/venvs/netcdf-c-4.9.0/plugins")),
    3: (os.environ.get("ZARRFS_NC3_PYTHON", "/work/venvs/netcdf4-c4.9.2/bin/python"),
        os.environ.get("ZARRFS_NC3_PLUGINS", "/work/venvs/netcdf-c-4.9.2/plugins")),
    4: (os.environ.get("ZARRFS_NC4_PYTHON", sys.executable), None),
}
# What each netCDF-c release can write (see the module docstring).
NC_CAPS = {
    1: {"strings": False, "filters": False, "unlimited": False, "scalar_open_crash": True,
        "string_attr": False},
    2: {"strings": False, "filters": True, "unlimited": False, "scalar_open_crash": True,
        "string_attr": False},
    3: {"strings": True, "filters": True, "unlimited": False, "scalar_open_crash": False,
        "string_attr": True},
    4: {"strings": True, "filters": True, "unlimited": True, "scalar_open_crash": False,
        "string_attr": True},
}

# Fixed timestamp for zip entries (determinism).
ZIP_DATE = (2020, 1, 1, 0, 0, 0)


# --------------------------------------------------------------------------------------------
# Helpers shared by the main process and the workers (numpy imported lazily: the workers run
# under other interpreters with numpy 1.26).


def le_c(arr):
    """A C-ordered, little-endian copy of `arr` (0-d stays 0-d)."""
    import numpy as np

    a = np.asarray(arr)
    if a.dtype.byteorder == ">" or a.dtype.fields is not None:
        a = a.astype(a.dtype.newbyteorder("<"))
    return a.copy(order="C")


def save_npy(path, arr):
    """numpy.save of the served array; checks it loads back identical."""
    import numpy as np

    a = le_c(arr)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        np.save(f, a, allow_pickle=False)
    b = np.load(path, allow_pickle=False)
    assert b.dtype == a.dtype and b.shape == a.shape, (path, b.dtype, a.dtype, b.shape, a.shape)
    assert a.tobytes() == b.tobytes(), path
    return a


def escape_element(b):
    return b.replace(b"\\", b"\\\\").replace(b"\n", b"\\n") + b"\n"


def vlen_expected(values, exp_root, rel):
    """Writes <rel>.txt and <rel>.npy for an object array of str or bytes; returns the paths
    relative to the fixtures directory."""
    import numpy as np

    flat = list(np.asarray(values, dtype=object).reshape(-1))
    shape = np.asarray(values, dtype=object).shape
    is_bytes = all(isinstance(v, bytes) for v in flat)
    assert is_bytes or all(isinstance(v, str) for v in flat), flat
    raw = [v if is_bytes else v.encode("utf-8") for v in flat]
    text = b"".join(escape_element(b) for b in raw)
    txt = Path(exp_root) / (rel + ".txt")
    txt.parent.mkdir(parents=True, exist_ok=True)
    txt.write_bytes(text)
    maxlen = max([len(v) for v in flat] + [1])
    dt = f"|S{maxlen}" if is_bytes else f"<U{maxlen}"
    arr = np.array(flat, dtype=dt).reshape(shape)
    # numpy strips trailing NULs: make sure the test data has none, so the npy is exact.
    assert all(not v.endswith(b"\0" if is_bytes else "\0") for v in flat)
    save_npy(Path(exp_root) / (rel + ".npy"), arr)
    return rel + ".txt", rel + ".npy"


def write_json(path, obj):
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, ensure_ascii=False)
        f.write("\n")


def read_json(path):
    with open(path, "rb") as f:
        return json.loads(f.read().decode("utf-8"))


def files_under(root):
    out = []
    for r, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            out.append(Path(r) / name)
    return sorted(out)


# --------------------------------------------------------------------------------------------
# NCZarr worker (runs under the interpreter of each netCDF-c generation).


def nc_build(ds, caps, np, netCDF4):
    """Builds the same netCDF content for every generation, in the one order all the old
    releases survive: the root's variables, the root's data, the subgroups, NC_STRING last.
    Returns the scalar values written, by variable path."""
    ds.setncattr("title", "NCZarr dialect fixture")
    ds.setncattr("version", np.int32(3))
    ds.setncattr("scale", np.float64(0.5))
    ds.setncattr("vec", np.array([1, 2, 3], "i4"))
    ds.setncattr("fvec", np.array([0.25, -1.5], "f4"))
    ds.createDimension("time", None if caps["unlimited"] else 4)
    ds.createDimension("lat", 3)
    ds.createDimension("lon", 5)
    ds.createDimension("station", 2)
    ds.createDimension("name_len", 8)
    ds.createDimension("my dim", 2)

    temp = ds.createVariable("temp", "f4", ("time", "lat", "lon"), chunksizes=(2, 3, 5),
                             fill_value=np.float32(-999.0))
    temp.units = "K"
    temp.valid_range = np.array([200.0, 330.0], "f4")
    counts = ds.createVariable("counts", "i4", ("lat", "lon"), chunksizes=(2, 2),
                               fill_value=np.int32(-1))
    counts.long_name = "partially written: chunk (0,0) full, chunk (1,2) one element"
    pkw = dict(zlib=True, complevel=4, shuffle=True) if caps["filters"] else {}
    pressure = ds.createVariable("pressure", "f8", ("time", "lat"), chunksizes=(2, 3), **pkw)
    pressure.units = "hPa"
    t0 = ds.createVariable("t0", "f8", ())
    t0.long_name = "reference temperature (scalar)"
    names = ds.createVariable("names", "S1", ("station", "name_len"), chunksizes=(2, 8))
    flags = ds.createVariable("flags", "i1", ("lon",))
    flags.flag_meanings = "a b c d e"
    big = ds.createVariable("big", "i8", ("station",))
    wind_speed = ds.createVariable("wind speed", "u2", ("my dim", "lon"))
    temperature = ds.createVariable("température", "f4", ("time",), chunksizes=(2,))
    temperature.units = "°C" if caps["string_attr"] else "degC"

    # ---- data
    temp[0:4] = (250.0 + 0.5 * np.arange(60).reshape(4, 3, 5)).astype("f4")
    counts[0:2, 0:2] = np.array([[1, 2], [3, 4]], "i4")
    counts[2, 4] = np.int32(99)
    pressure[0:4] = (1000.0 + np.arange(12).reshape(4, 3) / 8.0)
    t0.assignValue(273.15)
    names[:] = netCDF4.stringtochar(np.array(["alpha", "bravo123"], "S8"))
    flags[:] = np.array([-3, -2, -1, 0, 1], "i1")
    big[:] = np.array([2 ** 40, -5], "i8")
    wind_speed[:] = np.arange(10, dtype="u2").reshape(2, 5) * 1000
    temperature[0:4] = np.array([-1.5, 0.0, 21.25, 37.0], "f4")

    # ---- the subgroups, defined after the root's data is written (netCDF-c 4.8.0 fails
    # writing root data once a subgroup exists)
    fc = ds.createGroup("forecast")
    fc.source = "model run"
    fc.members_count = np.int32(2)
    fc.createDimension("step", 3)
    wind = fc.createVariable("wind", "f4", ("time", "step"), chunksizes=(2, 3))
    wind.units = "m/s"
    level = fc.createVariable("level", "i2", ("step",), chunksizes=(1,),
                              fill_value=np.int16(-9))
    wind[0:4] = np.arange(12, dtype="f4").reshape(4, 3) / 4
    level[0:1] = np.array([10], "i2")
    mem = fc.createGroup("members")
    mem.comment = "nested group"
    ens = mem.createVariable("ens", "i4", ("station", "step"))
    ens[:] = np.arange(6, dtype="i4").reshape(2, 3) - 3

    # ---- NC_STRING last: netCDF-c 4.9.2 trips an assertion in its chunk cache
    # (zxcache.c constraincache) when another variable is written after one
    if caps["strings"]:
        labels = ds.createVariable("labels", str, ("station",))
        labels.comment = "NC_STRING"
        labels[0] = "first"
        labels[1] = "sécond ✓"
    return {"t0": 273.15}


def nc_build_char_fill(ds, caps, np, netCDF4):
    """NC_CHAR and NC_STRING variables with fill values, parts of them never written.
    netCDF-c writes such a fill as the text itself, not as zarr's base64: `"fill_value": "-"`,
    a digit as a JSON number (`5`), `"\\""` for a double quote; an NC_STRING's as its text."""
    ds.setncattr("title", "NCZarr char and string fill values")
    ds.createDimension("n", 5)
    ds.createDimension("len", 3)
    code = ds.createVariable("code", "S1", ("n",), chunksizes=(2,), fill_value=b"-")
    code[0:2] = np.array([b"a", b"b"])
    digit = ds.createVariable("digit", "S1", ("n",), chunksizes=(2,), fill_value=b"5")
    digit[0:1] = np.array([b"z"])
    quote = ds.createVariable("quote", "S1", ("n",), chunksizes=(2,), fill_value=b'"')
    quote[4:5] = np.array([b"q"])
    names = ds.createVariable("names", "S1", ("n", "len"), chunksizes=(2, 3), fill_value=b"x")
    names[0] = netCDF4.stringtochar(np.array(["abc"], "S3"))[0]
    names[1, 0:2] = np.array([b"d", b"e"])
    label = ds.createVariable("label", str, ("n",), chunksizes=(2,), fill_value="NA")
    label[0] = "hello"
    return {}


NC_BUILDS = {"standard": nc_build, "char_fill": nc_build_char_fill}


def nc_strip_scalars(store, gen, scalars):
    """Removes scalar variables from a copy of a generation 1/2 store (their readers crash on
    opening a store that has one)."""
    for path in scalars:
        grp, _, name = path.rpartition("/")
        shutil.rmtree(os.path.join(store, path))
        gdir = os.path.join(store, grp)
        if gen == 1:
            meta = read_json(os.path.join(gdir, ".nczgroup"))
            meta["vars"].remove(name)
            write_json(os.path.join(gdir, ".nczgroup"), meta)
        else:
            meta = read_json(os.path.join(gdir, ".zgroup"))
            key = "_NCZARR_GROUP" if "_NCZARR_GROUP" in meta else "_nczarr_group"
            meta[key]["vars"].remove(name)
            write_json(os.path.join(gdir, ".zgroup"), meta)


def w_nczarr(args):
    import numpy as np
    import netCDF4

    gen, store, exp_root, caps = args["gen"], args["store"], args["expected"], args["caps"]
    shutil.rmtree(store, ignore_errors=True)
    ds = netCDF4.Dataset(f"file://{store}#mode=nczarr,file", "w")
    scalar_values = NC_BUILDS[args.get("build", "standard")](ds, caps, np, netCDF4)
    ds.close()

    read_store = store
    tmp = None
    if caps["scalar_open_crash"]:
        tmp = tempfile.mkdtemp()
        read_store = os.path.join(tmp, "copy.zarr")
        shutil.copytree(store, read_store)
        nc_strip_scalars(read_store, gen, list(scalar_values))
    ds = netCDF4.Dataset(f"file://{read_store}#mode=nczarr,file", "r")
    ds.set_auto_maskandscale(False)
    ds.set_auto_chartostring(False)
    nodes = []

    def walk(g):
        gpath = g.path.strip("/")
        nodes.append({"path": gpath, "type": "group",
                      "json": {"dimensions": {n: len(d) for n, d in g.dimensions.items()}}})
        for vname, v in g.variables.items():
            vpath = (gpath + "/" + vname).strip("/")
            arr = v[...]
            if v.dtype == str:
                zarray = read_json(os.path.join(store, vpath, ".zarray"))
                n = int(zarray["dtype"][2:])
                flat = ["" if s is None else s for s in np.asarray(arr, dtype=object).reshape(-1)]
                arr = np.array([s.encode("utf-8") for s in flat], dtype=f"|S{n}").reshape(v.shape)
            arr = np.asarray(arr)
            assert arr.shape == v.shape, (vpath, arr.shape, v.shape)
            rel = f"{args['name']}/{vpath}.npy"
            save_npy(os.path.join(exp_root, rel), arr)
            nodes.append({"path": vpath, "type": "array", "npy": "expected/" + rel,
                          "json": {"shape": list(v.shape),
                                   "dimension_names": [d.name for d in v.get_dims()]}})
        for sub in g.groups.values():
            walk(sub)

    walk(ds)
    ds.close()
    if tmp:
        shutil.rmtree(tmp)
        # The scalars, from their raw (uncompressed, single) chunk: shape [1] on disk.
        for vpath, value in scalar_values.items():
            zarray = read_json(os.path.join(store, vpath, ".zarray"))
            assert zarray["compressor"] is None and zarray["shape"] == [1], zarray
            raw = open(os.path.join(store, vpath, "0"), "rb").read()
            arr = np.frombuffer(raw, dtype=zarray["dtype"]).reshape(())
            why = ("raw chunk: the netCDF-c of this generation crashes on opening a store "
                   "with a scalar variable")
            if arr != value:
                fill = zarray["fill_value"]
                fill = fill[0] if isinstance(fill, list) else fill
                # .zarray rounds the fill to 6 digits; the chunk holds netCDF's exact default
                assert np.isclose(arr, fill, rtol=1e-6), (vpath, arr, value, fill)
                why += (f"; the chunk holds netCDF's default fill value {arr!r}, not the "
                        f"{value} written: this netCDF-c never stores a scalar's data")
            rel = f"{args['name']}/{vpath}.npy"
            save_npy(os.path.join(exp_root, rel), arr)
            nodes.append({"path": vpath, "type": "array", "npy": "expected/" + rel,
                          "json": {"shape": [], "dimension_names": []}, "reference": why})
    return {"nodes": nodes, "netcdf_c": netCDF4.__netcdf4libversion__,
            "netcdf4_python": netCDF4.__version__}


# --------------------------------------------------------------------------------------------
# zarr-python 2.18 worker: v3 draft stores, v2 consolidated / stale / vlen stores.


def w_zarr2(args):
    import numpy as np
    import numcodecs
    import zarr

    kind, store, exp_root, name = args["kind"], args["store"], args["expected"], args["name"]
    shutil.rmtree(store, ignore_errors=True)
    nodes = []

    def expect_array(path, arr, extra=None):
        rel = f"{name}/{path}.npy"
        save_npy(os.path.join(exp_root, rel), arr)
        node = {"path": path, "type": "array", "npy": "expected/" + rel}
        node.update(extra or {})
        nodes.append(node)

    if kind == "draft2019":
        st = zarr.DirectoryStoreV3(store)
        root = zarr.group(store=st, zarr_version=3)
        root.attrs.update({"title": "zarr v3 draft store (2019 protocol)", "answer": 42,
                           "list": [1, 2, 3]})
        sub = root.create_group("sub")
        sub.attrs["kind"] = "explicit group"
        a = sub.create_dataset("a", shape=(5, 4), chunks=(2, 3), dtype=">i4",
                               compressor=numcodecs.GZip(5), fill_value=0)
        a[:] = np.arange(20, dtype=">i4").reshape(5, 4) - 7
        a.attrs["units"] = "m"
        b = zarr.create(store=st, path="imp/deep/b", shape=(6,), chunks=(4,), dtype="<f8",
                        order="F", compressor=numcodecs.Zstd(3), fill_value=1.5, zarr_version=3)
        b[:3] = [1.0, 2.0, 3.0]
        c = zarr.create(store=st, path="c", shape=(4, 5), chunks=(3, 2), dtype="<u2", order="F",
                        compressor=numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE),
                        zarr_version=3)
        c[:] = np.arange(20, dtype="u2").reshape(4, 5) * 3
        f = zarr.create(store=st, path="sub/fmiss", shape=(5, 6), chunks=(2, 4), dtype=">f4",
                        order="F", compressor=numcodecs.GZip(1), fill_value=np.nan,
                        zarr_version=3)
        f[0:2, 0:4] = np.arange(8, dtype="f4").reshape(2, 4) + 0.5
        fl = zarr.create(store=st, path="flags", shape=(7,), chunks=(3,), dtype=bool,
                         compressor=None, fill_value=True, zarr_version=3)
        fl[0:3] = [False, True, False]
        i8 = zarr.create(store=st, path="imp/i8", shape=(3, 3), chunks=(2, 2), dtype="<i8",
                         compressor=numcodecs.Blosc("zstd", 3, numcodecs.Blosc.BITSHUFFLE),
                         zarr_version=3)
        i8[:] = np.arange(9, dtype="i8").reshape(3, 3) * (2 ** 33)
        # Filters: zarr-python 2.18 keeps a v3 draft array's filters in its attributes
        # ("filters"), applied after the array's bytes and before the compressor. The last
        # chunk is never written.
        dl = zarr.create(store=st, path="sub/delta", shape=(8,), chunks=(3,), dtype=">i4",
                         filters=[numcodecs.Delta(dtype=">i4"), numcodecs.Shuffle(4)],
                         compressor=numcodecs.Zlib(1), fill_value=-1, zarr_version=3)
        dl[:6] = [10, 12, 9, 100000, -50, 7]
        # A 0-d array: zarr-python 2.18 keys its one chunk `c0` (_chunk_key((0,))).
        zd = zarr.create(store=st, path="imp/scalar", shape=(), dtype="<f8", compressor=None,
                         fill_value=0, zarr_version=3)
        zd[...] = 2.5
        # Types the draft has no name for, written as {"extension": ..., "type": <numpy>}:
        # a structured type of mixed byte order, and strings (an object array whose object
        # codec is its first filter); the strings' last chunk is never written.
        rec_t = np.dtype([("a", ">i2"), ("b", "<f4")])
        rec = zarr.create(store=st, path="sub/rec", shape=(3,), chunks=(2,), dtype=rec_t,
                          compressor=None, fill_value=np.array((7, 0.25), rec_t)[()],
                          zarr_version=3)
        rec[:2] = np.array([(1, 0.5), (-2, 1.5)], dtype=rec_t)
        txt = zarr.create(store=st, path="sub/text", shape=(5,), chunks=(2,), dtype=object,
                          object_codec=numcodecs.VLenUTF8(), fill_value="NA", zarr_version=3)
        txt[:3] = np.array(["", "é", "line1\nline2"], dtype=object)
        # Hand edits: copies of two arrays with an `extensions` entry each.
        meta = os.path.join(store, "meta", "root")
        data = os.path.join(store, "data", "root")
        for src, dst, ext in [
            ("sub/a", "ext_must", {"extension": "https://example.org/zarr/ext/unknown-must",
                                   "must_understand": True, "configuration": {"x": 1}}),
            ("c", "ext_may", {"extension": "https://example.org/zarr/ext/unknown-may",
                              "must_understand": False, "configuration": {"x": 2}}),
        ]:
            m = read_json(os.path.join(meta, src + ".array.json"))
            m["extensions"] = [ext]
            with open(os.path.join(meta, dst + ".array.json"), "w") as fh:
                fh.write(json.dumps(m, indent=4, sort_keys=True))
            shutil.copytree(os.path.join(data, src), os.path.join(data, dst))
        st = zarr.DirectoryStoreV3(store)
        root = zarr.open_group(store=st, mode="r", zarr_version=3)
        nodes.append({"path": "", "type": "group"})
        nodes.append({"path": "sub", "type": "group"})
        nodes.append({"path": "imp", "type": "group", "implicit": True})
        nodes.append({"path": "imp/deep", "type": "group", "implicit": True})
        for p in ["sub/a", "imp/deep/b", "c", "sub/fmiss", "flags", "imp/i8", "ext_may",
                  "sub/delta", "imp/scalar", "sub/rec"]:
            expect_array(p, root[p][...])
        t, n = vlen_expected(root["sub/text"][...], exp_root, f"{name}/sub/text")
        nodes.append({"path": "sub/text", "type": "array", "text": "expected/" + t,
                      "npy": "expected/" + n})
        nodes.append({"path": "ext_must", "type": "array", "expect": "eio"})
    elif kind == "draft2019_suffix":
        os.makedirs(store)
        entry = {"zarr_format": "https://purl.org/zarr/spec/protocol/core/3.0",
                 "metadata_encoding": "https://purl.org/zarr/spec/protocol/core/3.0",
                 "metadata_key_suffix": ".meta",
                 "extensions": [{"extension": "https://example.org/zarr/ext/ignorable",
                                 "must_understand": False, "configuration": {}}]}
        with open(os.path.join(store, "zarr.json"), "w") as fh:
            fh.write(json.dumps(entry, indent=4, sort_keys=True))
        st = zarr.DirectoryStoreV3(store)
        root = zarr.open_group(store=st, mode="a", zarr_version=3)
        root.attrs["suffix"] = ".meta"
        a = zarr.create(store=st, path="grp/arr", shape=(3, 4), chunks=(2, 2), dtype="<i2",
                        compressor=numcodecs.Zlib(1), zarr_version=3)
        a[:] = np.arange(12, dtype="i2").reshape(3, 4)
        g = root.create_group("explicit")
        g.attrs["x"] = 1
        root = zarr.open_group(store=zarr.DirectoryStoreV3(store), mode="r", zarr_version=3)
        nodes += [{"path": "", "type": "group"},
                  {"path": "grp", "type": "group", "implicit": True},
                  {"path": "explicit", "type": "group"}]
        expect_array("grp/arr", root["grp/arr"][...])
    elif kind in ("v2_consolidated", "v2_stale"):
        st = zarr.DirectoryStore(store)
        root = zarr.group(store=st)
        if kind == "v2_consolidated":
            root.attrs.update({"title": "consolidated by zarr-python 2.18", "n": 1})
            g1 = root.create_group("g1")
            g1.attrs["level"] = 1
            x = g1.create_dataset("x", shape=(4, 6), chunks=(3, 4), dtype="<f8",
                                  compressor=numcodecs.Zlib(3))
            x[:] = np.arange(24).reshape(4, 6) / 3.0
            x.attrs["_ARRAY_DIMENSIONS"] = ["row", "col"]
            y = root.create_dataset("y", shape=(5,), chunks=(2,), dtype=">i2", fill_value=-1,
                                    compressor=None)
            y[0:2] = [7, 8]
            z = g1.create_group("g2").create_dataset("z", shape=(2, 3), chunks=(2, 3),
                                                     dtype="u1", order="F")
            z[:] = np.arange(6, dtype="u1").reshape(2, 3)
            zarr.consolidate_metadata(st)
            nodes += [{"path": "", "type": "group"}, {"path": "g1", "type": "group"},
                      {"path": "g1/g2", "type": "group"}]
            for p in ["g1/x", "y", "g1/g2/z"]:
                expect_array(p, zarr.open_consolidated(st, mode="r")[p][...])
        else:
            root.attrs.update({"version": 1, "state": "as consolidated"})
            d = root.create_dataset("data", shape=(3,), chunks=(2,), dtype="<i4",
                                    compressor=None)
            d[:] = [1, 2, 3]
            d.attrs.update({"version": 1, "units": "m"})
            zarr.consolidate_metadata(st)
            # Changed after consolidating: .zmetadata is now stale.
            root.attrs.update({"version": 2, "state": "changed after consolidation"})
            d.attrs.update({"version": 2, "units": "km"})
            nodes += [{"path": "", "type": "group"}]
            expect_array("data", zarr.open_group(st, mode="r")["data"][...])
    elif kind == "v2_vlen":
        root = zarr.group(store=zarr.DirectoryStore(store))
        root.attrs["writer"] = "zarr-python 2.18"
        s = root.create_dataset("strings", shape=(3, 4), chunks=(2, 2), dtype=object,
                                object_codec=numcodecs.VLenUTF8(), fill_value="NA")
        s[0:2, :] = np.array(VLEN_STRINGS, dtype=object)
        b = root.create_dataset("raw", shape=(5,), chunks=(2,), dtype=object,
                                object_codec=numcodecs.VLenBytes())
        b[:] = np.array(VLEN_BYTES[:5], dtype=object)
        u = root.create_dataset("plain", shape=(4,), chunks=(4,), dtype=str,
                                compressor=None)
        u[:] = np.array(["a", "bb", "", "dddd"], dtype=object)
        root = zarr.open_group(zarr.DirectoryStore(store), mode="r")
        nodes.append({"path": "", "type": "group"})
        for p in ["strings", "raw", "plain"]:
            txt, npy = vlen_expected(root[p][...], exp_root, f"{name}/{p}")
            nodes.append({"path": p, "type": "array", "text": "expected/" + txt,
                          "npy": "expected/" + npy})
    else:
        raise ValueError(kind)
    return {"nodes": nodes, "zarr": zarr.__version__, "numcodecs": numcodecs.__version__}


# Shared vlen test content: row 0-1 of a (3, 4) array, chunks (2, 2); row 2 is never written.
VLEN_STRINGS = [["", "é", "日本語", "🎉 party"],
                ["line1\nline2", "back\\slash", "tab\tsep", "trailing space "]]
VLEN_BYTES = [b"x", b"", b"\xff\xfe\n", b"back\\slash", b"\x00lead", b"six", b"seven"]

WORKERS = {"nczarr": w_nczarr, "zarr2": w_zarr2}


def run_worker(python, kind, args, env_extra=None):
    env = dict(os.environ)
    env.update(env_extra or {})
    with tempfile.TemporaryDirectory() as tmp:
        a = os.path.join(tmp, "args.json")
        r = os.path.join(tmp, "result.json")
        write_json(a, args)
        proc = subprocess.run([python, __file__, "--worker", kind, a, r], env=env,
                              capture_output=True, text=True)
        if proc.returncode != 0:
            sys.stderr.write(proc.stdout + proc.stderr)
            raise SystemExit(f"worker {kind} {args.get('name')} failed ({proc.returncode})")
        return read_json(r)


def pin_gzip_mtime():
    """numcodecs' GZip (used by zarr-python 2 and 3) stamps the current time into every gzip
    header; pin it to 0 so that the fixtures are byte-for-byte reproducible."""
    import gzip

    if getattr(gzip.GzipFile, "_zarrfs_pinned", False):
        return
    orig = gzip.GzipFile.__init__

    def init(self, *a, **kw):
        if len(a) < 5:
            kw.setdefault("mtime", 0)
        orig(self, *a, **kw)

    gzip.GzipFile.__init__ = init
    gzip.GzipFile._zarrfs_pinned = True


# --------------------------------------------------------------------------------------------
# Expected node documents (the subset of A.json / .group.json the tests check), read from disk.


def v2_json(store, path, kind, consolidated=None):
    prefix = (path + "/") if path else ""
    if consolidated is not None:
        md = consolidated["metadata"]
        meta = md[prefix + (".zarray" if kind == "array" else ".zgroup")]
        attrs = md.get(prefix + ".zattrs", {})
    else:
        d = Path(store, path)
        meta = read_json(d / (".zarray" if kind == "array" else ".zgroup"))
        attrs = read_json(d / ".zattrs") if (d / ".zattrs").exists() else {}
    assert meta["zarr_format"] == 2
    j = {"zarr_format": 2, "attributes": attrs}
    if kind == "array":
        j["shape"] = meta["shape"]
    return j


def v3_json(store, path, kind, consolidated=None):
    if consolidated is not None and path:
        meta = consolidated["metadata"][path]
    else:
        meta = read_json(Path(store, path, "zarr.json"))
    assert meta["zarr_format"] == 3 and meta["node_type"] == kind, (store, path, meta)
    j = {"zarr_format": 3, "node_type": kind, "attributes": meta.get("attributes", {})}
    if kind == "array":
        j["shape"] = meta["shape"]
        if meta.get("dimension_names") is not None:
            j["dimension_names"] = meta["dimension_names"]
    return j


def draft_json(store, path, kind, suffix=".json"):
    key = "meta/root" + (("/" + path) if path else "") + "." + kind + suffix
    meta = read_json(Path(store, key))
    j = {"attributes": meta.get("attributes", {})}
    if kind == "array":
        j["shape"] = meta["shape"]
    return j


def nczarr_json(store, gen, node):
    d = Path(store, node["path"])
    attrs = read_json(d / ".zattrs") if (d / ".zattrs").exists() else {}
    j = {"zarr_format": 2, "attributes": attrs}
    if node["type"] == "group":
        if gen == 1:
            dims = read_json(d / ".nczgroup")["dims"]
        elif gen == 2:
            dims = read_json(d / ".zgroup")["_NCZARR_GROUP"]["dims"]
        elif gen == 3:
            dims = read_json(d / ".zgroup")["_nczarr_group"]["dims"]
        else:
            dims = attrs["_nczarr_group"]["dimensions"]
        dims = {k: (v["size"] if isinstance(v, dict) else v) for k, v in dims.items()}
        assert dims == node["json"]["dimensions"], (store, node, dims)
        j["dimensions"] = dims
    else:
        zarray = read_json(d / ".zarray")
        if gen == 1:
            nv = read_json(d / ".nczvar")
        elif gen == 2:
            nv = zarray["_NCZARR_ARRAY"]
        elif gen == 3:
            nv = zarray["_nczarr_array"]
        else:
            nv = attrs["_nczarr_array"]
        refs = nv.get("dimrefs", nv.get("dimension_references"))
        # netCDF-c <= 4.9.2 marks a scalar with "storage": "scalar"; 4.9.3+ with "scalar": 1
        # (and "storage": "chunked"). Either way it is stored with shape [1].
        scalar = nv.get("storage") == "scalar" or bool(nv.get("scalar"))
        if scalar:
            assert zarray["shape"] == [1], zarray
        shape = [] if scalar else zarray["shape"]
        # Served as netCDF's short names; the fully qualified references stay in the metadata.
        names = [r.rsplit("/", 1)[-1] for r in refs]
        assert names == node["json"]["dimension_names"], (store, node, refs)
        assert shape == node["json"]["shape"], (store, node, shape)
        j["shape"] = shape
        j["dimension_names"] = names
    return j


# --------------------------------------------------------------------------------------------
# Zip stores.


def zip_entries_from_dir(src):
    src = Path(src)
    out = {}
    for r, dirs, files in os.walk(src):
        rel = Path(r).relative_to(src).as_posix()
        if rel != ".":
            out[rel + "/"] = None
        for f in files:
            out[(Path(r) / f).relative_to(src).as_posix()] = (Path(r) / f).read_bytes()
    return out


def write_zip(path, entries, compression):
    """Like `zip -r`: directory entries, then files, in sorted order, fixed timestamps."""
    with zipfile.ZipFile(path, "w") as z:
        for name in sorted(entries):
            data = entries[name]
            info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
            info.create_system = 3
            if data is None:
                info.external_attr = (0o40755 << 16) | 0x10
                z.writestr(info, b"", compress_type=zipfile.ZIP_STORED)
            else:
                info.external_attr = 0o100644 << 16
                info.compress_type = compression
                z.writestr(info, data, compress_type=compression)


def add_dirs(entries):
    """Adds the directory entries implied by file keys."""
    out = dict(entries)
    for k in list(entries):
        parts = k.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            out.setdefault("/".join(parts[:i]) + "/", None)
    return out


# --------------------------------------------------------------------------------------------
# Builders run in the main interpreter (zarr-python 3) and the hand-made stores.


def zarr3_versions():
    import numcodecs
    import zarr

    return f"zarr-python {zarr.__version__} (numcodecs {numcodecs.__version__})"


def expect_zarr3(nodes, name, store_path, path, arr=None, **extra):
    import zarr

    if arr is None:
        arr = zarr.open_array(store=str(store_path), path=path, mode="r")[...]
    rel = f"{name}/{path}.npy"
    save_npy(EXP / rel, arr)
    node = {"path": path, "type": "array", "npy": "expected/" + rel}
    node.update(extra)
    nodes.append(node)


def build_sharding():
    import numpy as np
    import zarr
    from zarr.codecs import (BytesCodec, Crc32cCodec, GzipCodec, ShardingCodec, TransposeCodec,
                             ZstdCodec)

    name = "sharding_v3"
    store = OUT / f"{name}.zarr"
    g = zarr.open_group(str(store), mode="w", zarr_format=3,
                        attributes={"title": "sharding_indexed fixtures"})
    nodes = [{"path": "", "type": "group"}]

    # Index at the end (default), inner codecs bytes + zstd, index bytes + crc32c; shape not a
    # multiple of the shard shape -> partial edge shards (inner chunks wholly outside the array
    # are absent from the index).
    a = g.create_array("index_end", shape=(10, 9), chunks=(2, 3), shards=(4, 6), dtype="int32",
                       compressors=[ZstdCodec(level=3)], fill_value=-1,
                       dimension_names=["y", "x"], attributes={"index_location": "end"})
    a[:] = np.arange(90, dtype="int32").reshape(10, 9) * 7 - 100
    expect_zarr3(nodes, name, store, "index_end")

    # Index at the start; inner codecs transpose + big-endian bytes + gzip.
    s = ShardingCodec(chunk_shape=(2, 2),
                      codecs=[TransposeCodec(order=(1, 0)), BytesCodec(endian="big"),
                              GzipCodec(level=5)],
                      index_codecs=[BytesCodec(), Crc32cCodec()], index_location="start")
    b = g.create_array("index_start", shape=(7, 5), chunks=(4, 4), serializer=s,
                       compressors=None, dtype="float64", fill_value=0.5,
                       attributes={"index_location": "start"})
    b[:] = np.arange(35, dtype="float64").reshape(7, 5) / 4 - 2
    expect_zarr3(nodes, name, store, "index_start")

    # Inner chunks missing: only part of the array written, one shard never written at all.
    c = g.create_array("missing_inner", shape=(16, 8), chunks=(2, 2), shards=(8, 8),
                       dtype="uint16", compressors=None, fill_value=7,
                       attributes={"written": "[0:3, 0:3] and [5, 7]; shard (1, 0) absent"})
    c[0:3, 0:3] = np.arange(9, dtype="uint16").reshape(3, 3) + 100
    c[5, 7] = 65535
    expect_zarr3(nodes, name, store, "missing_inner")

    # Sharding nested in sharding, crc32c on the innermost chunks.
    inner = ShardingCodec(chunk_shape=(2, 2), codecs=[BytesCodec(), Crc32cCodec()],
                          index_location="start")
    outer = ShardingCodec(chunk_shape=(4, 4), codecs=[inner],
                          index_codecs=[BytesCodec(), Crc32cCodec()])
    d = g.create_array("nested", shape=(8, 12), chunks=(8, 8), serializer=outer,
                       compressors=None, dtype="int16", fill_value=0)
    d[:, 0:10] = (np.arange(80, dtype="int16").reshape(8, 10) - 40) * 3
    expect_zarr3(nodes, name, store, "nested")

    sub = g.create_group("sub", attributes={"k": "v"})
    nodes.append({"path": "sub", "type": "group"})
    e = sub.create_array("bool_shard", shape=(5, 5), chunks=(1, 5), shards=(5, 5), dtype="bool",
                         fill_value=False)
    e[1:4] = np.eye(5, dtype=bool)[1:4]
    expect_zarr3(nodes, name, store, "sub/bool_shard")
    for n in nodes:
        n["json"] = v3_json(store, n["path"], n["type"])
    return {"name": name, "store": f"{name}.zarr", "writer": zarr3_versions(),
            "dialect": "sharding", "note": "", "options": [], "nodes": nodes}


def build_nczarr(gen):
    name = f"nczarr_gen{gen}"
    store = OUT / f"{name}.zarr"
    py, plugins = NC_ENVS[gen]
    env = {"HDF5_PLUGIN_PATH": plugins} if plugins else {}
    res = run_worker(py, "nczarr", {"gen": gen, "store": str(store), "expected": str(EXP),
                                    "caps": NC_CAPS[gen], "name": name}, env)
    nodes = []
    for n in res["nodes"]:
        j = nczarr_json(store, gen, n)
        node = {"path": n["path"], "type": n["type"]}
        if "npy" in n:
            node["npy"] = n["npy"]
        if "reference" in n:
            node["reference"] = n["reference"]
        node["json"] = j
        nodes.append(node)
    nodes.sort(key=lambda n: n["path"])
    caps = NC_CAPS[gen]
    notes = ["written and read back with netCDF4-python (the reference reader) linked to "
             "this netCDF-c release"]
    if gen in (1, 2, 3):
        notes.append("netCDF-c built from its release tag (see the script's docstring)")
    if caps["scalar_open_crash"]:
        notes.append("this netCDF-c crashes opening a store that holds a scalar variable: "
                     "reference read made on a copy without 't0'; 't0' taken from its raw chunk")
    if not caps["strings"]:
        notes.append("no NC_STRING variable: this netCDF-c cannot write one to NCZarr")
    if not caps["filters"]:
        notes.append("no compressed variable: NCZarr in this netCDF-c has no filters")
    if not caps["string_attr"]:
        notes.append("'température' has units 'degC', not '°C': netCDF4-python writes a "
                     "non-ASCII text attribute as NC_STRING, which this netCDF-c cannot store")
    if not caps["unlimited"]:
        notes.append("'time' is a fixed dimension: NCZarr in this netCDF-c has no unlimited "
                     "dimensions")
    return {"name": name, "store": f"{name}.zarr",
            "writer": f"netCDF4-python {res['netcdf4_python']} / netCDF-c {res['netcdf_c']}",
            "dialect": f"nczarr-{gen}", "note": "; ".join(notes), "options": [], "nodes": nodes}


def build_nczarr_fill():
    """NC_CHAR and NC_STRING fill values as the netCDF-c of generation 4 writes them."""
    name = "nczarr_char_fill"
    store = OUT / f"{name}.zarr"
    py, _ = NC_ENVS[4]
    res = run_worker(py, "nczarr", {"gen": 4, "store": str(store), "expected": str(EXP),
                                    "caps": NC_CAPS[4], "name": name, "build": "char_fill"})
    nodes = []
    for n in res["nodes"]:
        node = {"path": n["path"], "type": n["type"]}
        if "npy" in n:
            node["npy"] = n["npy"]
        node["json"] = nczarr_json(store, 4, n)
        nodes.append(node)
    nodes.sort(key=lambda n: n["path"])
    return {"name": name, "store": f"{name}.zarr",
            "writer": f"netCDF4-python {res['netcdf4_python']} / netCDF-c {res['netcdf_c']}",
            "dialect": "nczarr-4",
            "note": "written and read back with netCDF4-python (the reference reader) linked to "
                    "this netCDF-c release: NC_CHAR fill values '-', '5' (a JSON number), '\"' "
                    "and 'x', an NC_STRING fill value 'NA', stored as netCDF-c writes them (the "
                    "text, not base64); chunks left unwritten read as the fill",
            "options": [], "nodes": nodes}


def build_implicit_v3():
    """tensorstore's zarr3 driver writes each array's zarr.json and nothing for the groups
    above it: a v3 store with no root zarr.json, its groups all implicit."""
    import importlib.metadata

    import numpy as np
    import tensorstore as ts

    name = "implicit_v3_tensorstore"
    store = OUT / f"{name}.zarr"
    shutil.rmtree(store, ignore_errors=True)

    def create(path, dtype, shape, chunks, fill, **extra):
        metadata = {"shape": shape, "data_type": dtype, "fill_value": fill,
                    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}}}
        metadata.update(extra)
        spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(store / path)},
                "metadata": metadata}
        return ts.open(spec, create=True).result()

    a = create("a", "int16", [3, 4], [2, 2], -1, attributes={"k": 1})
    a[0:2, :] = np.arange(8, dtype="int16").reshape(2, 4)
    b = create("g/b", "float32", [5], [5], 0)
    b[...] = np.arange(5, dtype="float32") / 2
    c = create("g/h/c", "uint8", [2, 3], [2, 2], 7, dimension_names=["y", "x"])
    c[:, 0:2] = np.array([[1, 2], [3, 4]], "u1")
    implicit = {"zarr_format": 3, "node_type": "group", "attributes": {}}
    nodes = [{"path": p, "type": "group", "implicit": True, "json": implicit}
             for p in ["", "g", "g/h"]]
    for path in ["a", "g/b", "g/h/c"]:
        spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(store / path)}}
        arr = ts.open(spec, open=True).result().read().result()
        rel = f"{name}/{path}.npy"
        save_npy(EXP / rel, arr)
        nodes.append({"path": path, "type": "array", "npy": "expected/" + rel,
                      "json": v3_json(store, path, "array")})
    nodes.sort(key=lambda n: n["path"])
    return {"name": name, "store": f"{name}.zarr",
            "writer": f"tensorstore {importlib.metadata.version('tensorstore')}",
            "dialect": "v3-implicit",
            "note": "arrays written by tensorstore's zarr3 driver, which writes no group "
                    "metadata: no root zarr.json, every group implicit (shown as v3 groups). "
                    "Expected values read back with tensorstore.",
            "options": [], "nodes": nodes}


def build_zarr2(kind, name, dialect, note, options=(), json_fn=None):
    store = OUT / f"{name}.zarr"
    res = run_worker(ZARR2_PY, "zarr2", {"kind": kind, "store": str(store), "expected": str(EXP),
                                         "name": name}, {"ZARR_V3_EXPERIMENTAL_API": "1"})
    nodes = res["nodes"]
    for n in nodes:
        n["json"] = json_fn(store, n)
    nodes.sort(key=lambda n: n["path"])
    return {"name": name, "store": f"{name}.zarr",
            "writer": f"zarr-python {res['zarr']} (numcodecs {res['numcodecs']})",
            "dialect": dialect, "note": note, "options": list(options), "nodes": nodes}


def draft2019_json(suffix):
    def f(store, n):
        if n.get("implicit"):
            return {"attributes": {}}
        return draft_json(store, n["path"], n["type"], suffix)
    return f


def build_draft2022():
    """Hand-made from zarr-core-spec-v3.0-editors-draft-2022.rst (zarr-specs a56e1f2, codec
    URIs from that revision's docs/codecs.rst): no writer of this form exists."""
    import gzip

    import numcodecs
    import numpy as np

    name = "v3_draft_2022"
    store = OUT / f"{name}.zarr"
    shutil.rmtree(store, ignore_errors=True)
    entry = {"zarr_format": "https://purl.org/zarr/spec/core/3.0",
             "metadata_encoding": "https://purl.org/zarr/spec/core/3.0",
             "metadata_key_suffix": ".json", "extensions": []}
    write_json(store / "zarr.json", entry)
    write_json(store / "meta/root.group.json",
               {"attributes": {"spam": "ham", "eggs": 42, "spec": "editors draft 2022"}})
    write_json(store / "meta/root/g1/g2.group.json", {"attributes": {"depth": 2}})
    nodes = [{"path": "", "type": "group"}, {"path": "g1", "type": "group", "implicit": True},
             {"path": "g1/g2", "type": "group"}]
    np_types = {"bool": "?", "int8": "i1", "int16": "i2", "int32": "i4", "uint8": "u1",
                "uint16": "u2", "uint32": "u4", "float32": "f4", "float64": "f8"}

    def fill_scalar(dtype, fill):
        dt = np.dtype(np_types[dtype])
        if isinstance(fill, str) and fill.startswith("0x"):
            raw = bytes.fromhex(fill[2:])[::-1]  # hex string is the value: big-endian digits
            return np.frombuffer(raw, dtype=dt.newbyteorder("<"))[0]
        if fill == "NaN":
            return dt.type(np.nan)
        return dt.type(fill)

    def encode(codecs, chunk, layout):
        a = chunk.T if layout == "F" else chunk  # F: dimension order reversed
        endian = "<"
        data = None
        for c in codecs:
            t = c["type"].rstrip("/").split("/")
            kind = t[-2] if t[-1] == "1.0" else t[-1]
            if kind == "endian":
                endian = ">" if c["configuration"]["endian"] == "big" else "<"
            elif kind == "gzip":
                if data is None:
                    data = np.ascontiguousarray(a).astype(a.dtype.newbyteorder(endian)).tobytes()
                data = gzip.compress(data, compresslevel=c["configuration"]["level"], mtime=0)
            elif kind == "blosc":
                if data is None:
                    data = np.ascontiguousarray(a).astype(a.dtype.newbyteorder(endian)).tobytes()
                cfg = c["configuration"]
                data = numcodecs.Blosc(cname=cfg["cname"], clevel=cfg["clevel"],
                                       shuffle=cfg["shuffle"], blocksize=cfg["blocksize"]
                                       ).encode(data)
            else:
                raise ValueError(kind)
        if data is None:
            data = np.ascontiguousarray(a).astype(a.dtype.newbyteorder(endian)).tobytes()
        return data

    def array(path, dtype, shape, chunks, layout, codecs, fill, values, written, sep="/",
              attrs=None):
        meta = {"shape": list(shape), "data_type": dtype,
                "chunk_grid": {"type": "regular", "chunk_shape": list(chunks), "separator": sep},
                "chunk_memory_layout": layout}
        if codecs is not None:
            meta["codecs"] = codecs
        meta.update({"fill_value": fill, "extensions": [], "attributes": attrs or {}})
        write_json(store / f"meta/root/{path}.array.json", meta)
        fv = fill_scalar(dtype, fill)
        full = np.full(shape, fv, dtype=np_types[dtype])
        grid = [-(-s // c) for s, c in zip(shape, chunks)]
        for idx in np.ndindex(*grid):
            if not written(idx):
                continue
            sl = tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(idx, chunks, shape))
            chunk = np.full(chunks, fv, dtype=np_types[dtype])
            part = values[sl]
            chunk[tuple(slice(0, n) for n in part.shape)] = part
            full[sl] = part
            key = store / f"data/root/{path}" / ("c" + sep.join(str(i) for i in idx))
            key.parent.mkdir(parents=True, exist_ok=True)
            key.write_bytes(encode(codecs or [], chunk, layout))
        expect = {"path": path, "type": "array"}
        rel = f"{name}/{path}.npy"
        save_npy(EXP / rel, full)
        expect["npy"] = "expected/" + rel
        nodes.append(expect)

    gzip1 = {"type": "https://purl.org/zarr/spec/codec/gzip/1.0", "configuration": {"level": 1}}
    array("grid", "float64", (4, 6), (2, 4), "C", [gzip1], "NaN",
          np.arange(24, dtype="f8").reshape(4, 6) / 8, lambda i: i != (1, 1),
          attrs={"foo": 42, "bar": "apples", "baz": [1, 2, 3, 4]})
    array("big_endian", "int32", (5,), (2,), "C",
          [{"type": "https://purl.org/zarr/spec/codec/endian", "configuration": {"endian": "big"}},
           {"type": "https://purl.org/zarr/spec/codec/gzip", "configuration": {"level": 5}}],
          0, np.array([1, -2, 3 << 20, -(4 << 24), 5], "i4"), lambda i: True)
    array("fortran", "uint16", (3, 5), (2, 2), "F", None, 7,
          np.arange(15, dtype="u2").reshape(3, 5) * 11, lambda i: i not in ((0, 1), (1, 2)),
          attrs={"absent chunks": "(0,1) and (1,2)"})
    array("hexfill", "float32", (4,), (3,), "C", [], "0x3f800000",
          np.array([0.5, -0.5, 2.5, 9.0], "f4"), lambda i: i == (0,),
          attrs={"fill": "0x3f800000 is 1.0"})
    array("flags", "bool", (6,), (4,), "C",
          [{"type": "https://purl.org/zarr/spec/codec/blosc",
            "configuration": {"cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}}],
          True, np.array([False, True, False, False, True, True]), lambda i: i == (0,))
    array("g1/g2/small", "int8", (3, 2), (2, 2), "C", [], -1,
          np.array([[1, -2], [3, -4], [5, -6]], "i1"), lambda i: True, sep=".")
    for n in nodes:
        n["json"] = ({"attributes": {}} if n.get("implicit")
                     else draft_json(store, n["path"], n["type"]))
    nodes.sort(key=lambda n: n["path"])
    return {"name": name, "store": f"{name}.zarr", "writer": "hand-made by this script",
            "dialect": "v3-draft-2022",
            "note": "hand-made from zarr-core-spec-v3.0-editors-draft-2022.rst (zarr-specs "
                    "commit a56e1f2, codec URIs from that revision's codecs.rst: gzip with and "
                    "without '/1.0', endian, blosc): no released writer produced this form. "
                    "Expected values are the generating numpy arrays.",
            "options": [], "nodes": nodes}


def build_consolidated_zarr3(zarr_format):
    import numpy as np
    import zarr

    name = f"consolidated_v{zarr_format}_zarr3"
    store = OUT / f"{name}.zarr"
    g = zarr.open_group(str(store), mode="w", zarr_format=zarr_format,
                        attributes={"title": f"consolidated v{zarr_format} by zarr-python 3"})
    g1 = g.create_group("g1", attributes={"level": 1})
    x = g1.create_array("x", shape=(4, 6), chunks=(3, 4), dtype="float64",
                        attributes={"units": "m"})
    x[:] = np.arange(24).reshape(4, 6) / 3.0
    y = g.create_array("y", shape=(5,), chunks=(2,), dtype="int16", fill_value=-1)
    y[0:2] = [7, 8]
    g1.create_group("g2").create_array("z", shape=(2, 3), chunks=(2, 3), dtype="uint8")[:] = \
        np.arange(6, dtype="u1").reshape(2, 3)
    zarr.consolidate_metadata(str(store))
    nodes = [{"path": "", "type": "group"}, {"path": "g1", "type": "group"},
             {"path": "g1/g2", "type": "group"}]
    cg = zarr.open_consolidated(str(store), mode="r", zarr_format=zarr_format)
    for p in ["g1/x", "y", "g1/g2/z"]:
        expect_zarr3(nodes, name, store, p, arr=cg[p][...])
    if zarr_format == 2:
        cons = read_json(store / ".zmetadata")
        for n in nodes:
            n["json"] = v2_json(store, n["path"], n["type"], cons)
            assert n["json"] == v2_json(store, n["path"], n["type"])
    else:
        cons = read_json(store / "zarr.json")["consolidated_metadata"]
        for n in nodes:
            n["json"] = v3_json(store, n["path"], n["type"], cons)
            assert n["json"] == v3_json(store, n["path"], n["type"])
    nodes.sort(key=lambda n: n["path"])
    return {"name": name, "store": f"{name}.zarr", "writer": zarr3_versions(),
            "dialect": f"consolidated-v{zarr_format}", "note": "", "options": [],
            "nodes": nodes}


def build_vlen_zarr3(zarr_format):
    import numpy as np
    import zarr
    from zarr.dtype import VariableLengthBytes, VariableLengthUTF8

    name = f"vlen_v{zarr_format}_zarr3"
    store = OUT / f"{name}.zarr"
    g = zarr.open_group(str(store), mode="w", zarr_format=zarr_format,
                        attributes={"writer": "zarr-python 3"})
    s = g.create_array("strings", shape=(3, 4), chunks=(2, 2), dtype=VariableLengthUTF8(),
                       fill_value="NA")
    s[0:2, :] = np.array(VLEN_STRINGS, dtype=object)
    b = g.create_array("raw", shape=(7,), chunks=(2,), dtype=VariableLengthBytes())
    b[0:5] = np.array(VLEN_BYTES[:5], dtype=object)
    p = g.create_array("plain", shape=(4,), chunks=(4,), dtype=VariableLengthUTF8(),
                       compressors=None)
    p[:] = np.array(["a", "bb", "", "dddd"], dtype=object)
    paths = ["strings", "raw", "plain"]
    note = ""
    if zarr_format == 3:
        # zarr-python 3.1 names the vlen-bytes type "variable_length_bytes"; the registered
        # name is "bytes" (zarr-python reads both): a copy with the data type renamed.
        shutil.copytree(store / "raw", store / "raw_bytes_name")
        m = read_json(store / "raw_bytes_name/zarr.json")
        assert m["data_type"] == "variable_length_bytes", m["data_type"]
        m["data_type"] = "bytes"
        write_json(store / "raw_bytes_name/zarr.json", m)
        paths.append("raw_bytes_name")
        note = ("'raw_bytes_name' is a hand-edited copy of 'raw' whose data_type is 'bytes' "
                "instead of zarr-python 3.1's 'variable_length_bytes'")
    nodes = [{"path": "", "type": "group"}]
    for path in paths:
        vals = zarr.open_array(store=str(store), path=path, mode="r")[...]
        txt, npy = vlen_expected(vals, EXP, f"{name}/{path}")
        nodes.append({"path": path, "type": "array", "text": "expected/" + txt,
                      "npy": "expected/" + npy})
    fn = v2_json if zarr_format == 2 else v3_json
    for n in nodes:
        n["json"] = fn(store, n["path"], n["type"])
    nodes.sort(key=lambda n: n["path"])
    return {"name": name, "store": f"{name}.zarr", "writer": zarr3_versions(),
            "dialect": "vlen", "note": note, "options": [], "nodes": nodes}


LONG_NAME = "long_" + "é" * 150  # 155 characters, 305 bytes in UTF-8: over NAME_MAX
NAME_250 = "n" * 250  # the longest array name whose A, A.npy and A.json all fit in 255 bytes
GROUP_255 = "g" * 255  # exactly NAME_MAX bytes: a group's directory still fits


def build_names_v2():
    import numpy as np
    import zarr

    name = "names_v2_zarr3"
    store = OUT / f"{name}.zarr"
    g = zarr.open_group(str(store), mode="w", zarr_format=2)
    t = g.create_group("température", attributes={"unité": "°C"})
    a = t.create_array("my array", shape=(2, 3), chunks=(1, 3), dtype="int32")
    a[:] = np.arange(6, dtype="i4").reshape(2, 3)
    b = g.create_array("naïve ünïcode", shape=(3,), chunks=(2,), dtype="float32",
                       attributes={"note": "non-ASCII array name"})
    b[:] = [1.5, 2.5, 3.5]
    nodes = [{"path": "", "type": "group"}, {"path": "température", "type": "group"}]
    expect_zarr3(nodes, name, store, "température/my array")
    expect_zarr3(nodes, name, store, "naïve ünïcode")
    for n in nodes:
        n["json"] = v2_json(store, n["path"], n["type"])
    nodes.sort(key=lambda n: n["path"])
    return {"name": name, "store": f"{name}.zarr", "writer": zarr3_versions(),
            "dialect": "names", "note": "", "options": [], "nodes": nodes}


def build_names_v3_zip():
    """A name longer than 255 bytes cannot exist on a Linux file system, so this store only
    exists as a zip (written through a zarr MemoryStore)."""
    import asyncio

    import numpy as np
    import zarr
    from zarr.core.buffer import default_buffer_prototype

    name = "names_v3"
    mem = zarr.storage.MemoryStore()
    g = zarr.open_group(mem, mode="w", zarr_format=3, attributes={"names": "unicode"})
    t = g.create_group("température", attributes={"unité": "°C"})
    t.create_array("my array", shape=(2, 2), chunks=(2, 2), dtype="uint8")[:] = [[1, 2], [3, 4]]
    g.create_array("日本語 データ", shape=(3,), chunks=(3,), dtype="int16")[:] = [-1, 0, 1]
    g.create_array(NAME_250, shape=(2,), chunks=(2,), dtype="int8")[:] = [5, 6]
    g.create_group(GROUP_255).create_array("x", shape=(1,), dtype="int8")[:] = [4]
    g.create_array(LONG_NAME, shape=(2,), chunks=(2,), dtype="int8")[:] = [7, 8]
    g.create_group("long parent").create_array(LONG_NAME, shape=(1,), dtype="int8")[:] = [9]

    async def dump():
        out = {}
        proto = default_buffer_prototype()
        async for k in mem.list():
            out[k] = (await mem.get(k, prototype=proto)).to_bytes()
        return out

    files = asyncio.run(dump())
    nodes = [{"path": "", "type": "group"}, {"path": "température", "type": "group"},
             {"path": "long parent", "type": "group"}, {"path": GROUP_255, "type": "group"}]
    rg = zarr.open_group(mem, mode="r")
    short = {NAME_250: "name250", GROUP_255 + "/x": "group255/x"}
    for p in ["température/my array", "日本語 データ", NAME_250, GROUP_255 + "/x"]:
        rel = f"{name}/{short.get(p, p)}.npy"
        save_npy(EXP / rel, rg[p][...])
        nodes.append({"path": p, "type": "array", "npy": "expected/" + rel})
    nodes.append({"path": LONG_NAME, "type": "array", "expect": "absent"})
    nodes.append({"path": "long parent/" + LONG_NAME, "type": "array", "expect": "absent"})
    for n in nodes:
        if n.get("expect") == "absent":
            continue
        meta = json.loads(files[(n["path"] + "/" if n["path"] else "") + "zarr.json"])
        j = {"zarr_format": 3, "node_type": n["type"], "attributes": meta.get("attributes", {})}
        if n["type"] == "array":
            j["shape"] = meta["shape"]
        n["json"] = j
    write_zip(OUT / f"{name}.zip", add_dirs(files), zipfile.ZIP_DEFLATED)
    nodes.sort(key=lambda n: n["path"])
    return {"name": name, "store": f"{name}.zip", "writer": zarr3_versions(),
            "dialect": "names",
            "note": "zip only: a 305-byte node name cannot be a Linux file name. Written by "
                    "zarr-python into a MemoryStore and zipped by this script (deflate, fixed "
                    "timestamps, directory entries like zip -r). Names over 255 bytes are "
                    "expected to be skipped ('absent'); a 255-byte group name and a 250-byte "
                    "array name (A.json is then 255 bytes) are kept. Their expected .npy files "
                    "have short names (name250.npy, group255/x.npy).",
            "options": [], "nodes": nodes}


def zip_of(entry, compression, note):
    src = OUT / entry["store"]
    name = entry["name"] + "_zip"
    zpath = OUT / (entry["name"] + ".zip")
    write_zip(zpath, zip_entries_from_dir(src), compression)
    e = copy.deepcopy(entry)
    e.update({"name": name, "store": zpath.name,
              "note": (note + (" " + entry["note"] if entry["note"] else "")).strip()})
    return e


# --------------------------------------------------------------------------------------------


def check_manifest(manifest):
    """Re-reads every expected file the manifest names; checks paths and sizes."""
    import numpy as np

    names = set()
    for s in manifest["stores"]:
        assert s["name"] not in names, s["name"]
        names.add(s["name"])
        assert (OUT / s["store"]).exists(), s["store"]
        paths = [n["path"] for n in s["nodes"]]
        assert len(paths) == len(set(paths)), s["name"]
        for n in s["nodes"]:
            assert n["type"] in ("group", "array"), n
            if n.get("expect") == "absent":
                continue
            assert "json" in n, (s["name"], n["path"])
            if "npy" in n:
                a = np.load(OUT / n["npy"], allow_pickle=False)
                if "shape" in n["json"]:
                    assert list(a.shape) == list(n["json"]["shape"]), (s["name"], n["path"])
            if "text" in n:
                lines = (OUT / n["text"]).read_bytes().count(b"\n")
                assert lines == int(np.prod(n["json"]["shape"])), (s["name"], n["path"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--worker", nargs=3, metavar=("KIND", "ARGS", "RESULT"),
                    help=argparse.SUPPRESS)
    ap.add_argument("--only", help="comma-separated builder names: rebuilds only their stores and "
                    "keeps the others with their manifest entries (for a machine without every "
                    "writer)")
    opts = ap.parse_args()
    pin_gzip_mtime()
    if opts.worker:
        kind, a, r = opts.worker
        write_json(r, WORKERS[kind](read_json(a)))
        return

    import warnings

    warnings.filterwarnings("ignore")
    kept = []
    if opts.only:
        kept = read_json(OUT / "manifest.json")["stores"]
    else:
        shutil.rmtree(OUT, ignore_errors=True)
        OUT.mkdir(parents=True)
        EXP.mkdir()

    builders = {
        "sharding": lambda: [build_sharding()],
        "nczarr": lambda: [build_nczarr(g) for g in (1, 2, 3, 4)],
        "nczarr_fill": lambda: [build_nczarr_fill()],
        "implicit_v3": lambda: [build_implicit_v3()],
        "draft2019": lambda: [
            build_zarr2("draft2019", "v3_draft_2019", "v3-draft-2019",
                        "'ext_must' and 'ext_may' are hand-edited copies of 'sub/a' and 'c' "
                        "with one `extensions` entry each (must_understand true: unreadable; "
                        "false: ignored); zarr-python 2.18 itself ignores both",
                        json_fn=draft2019_json(".json")),
            build_zarr2("draft2019_suffix", "v3_draft_2019_suffix", "v3-draft-2019",
                        "zarr.json written by this script before zarr-python 2.18 created the "
                        "nodes (zarr-python 2.18 reads and honours metadata_key_suffix but has "
                        "no API to set it): suffix '.meta', plus an entry-point extension with "
                        "must_understand false",
                        json_fn=draft2019_json(".meta")),
        ],
        "draft2022": lambda: [build_draft2022()],
        "consolidated": lambda: build_consolidated(),
        "vlen": lambda: [
            build_zarr2("v2_vlen", "vlen_v2_zarr2", "vlen",
                        "zarr-python 2.18 writes fill_value 0 for object arrays (missing "
                        "chunks read back as the integer 0), so its vlen-bytes array is "
                        "written whole; the vlen-utf8 one has fill_value 'NA'",
                        json_fn=lambda st, n: v2_json(st, n["path"], n["type"])),
            build_vlen_zarr3(2), build_vlen_zarr3(3)],
        "names": lambda: [build_names_v2(), build_names_v3_zip()],
    }
    only = opts.only.split(",") if opts.only else list(builders)
    stores = []
    for key in only:
        print(f"building {key} ...", flush=True)
        stores += builders[key]()
    built = [s["name"] for s in stores]
    # Zip variants of directory stores.
    by_name = {s["name"]: s for s in stores}
    if "sharding_v3" in by_name:
        stores.append(zip_of(by_name["sharding_v3"], zipfile.ZIP_STORED,
                             "zip (stored, with directory entries) of sharding_v3.zarr, store "
                             "root at the zip root."))
    if "nczarr_gen4" in by_name:
        stores.append(zip_of(by_name["nczarr_gen4"], zipfile.ZIP_DEFLATED,
                             "zip (deflate, with directory entries) of nczarr_gen4.zarr, store "
                             "root at the zip root."))
    if kept:
        # The rebuilt stores replace their old entries; the others stay as they were.
        fresh = {s["name"]: s for s in stores}
        stores = [fresh.pop(s["name"], s) for s in kept] + list(fresh.values())
        prune_expected(stores, built)
    manifest = {
        "about": (
            "Written by scripts/make_dialect_fixtures.py; do not edit by hand. Paths are "
            "relative to this directory. 'json' lists only the fields a test must check in the "
            "node's A.json / .group.json: zarr_format and node_type where the format defines "
            "them (v2: zarr_format 2, no node_type; v3: both; v3 drafts: neither), attributes "
            "as stored (NCZarr: the .zattrs object verbatim, or {} when absent; consolidated "
            "stores: as the mode in 'options' must show them), shape as served ([] for netCDF "
            "scalars), NCZarr 'dimension_names' (netCDF's short names; the fully qualified "
            "dimension references stay in the NCZarr metadata) and group 'dimensions' ({name: length}, unlimited ones at their "
            "current length). 'npy' is the full served array (little-endian, C order); 'text' "
            "the served A of a vlen array. 'expect': 'eio' (listed, data unreadable) or "
            "'absent' (not shown). 'implicit': group with no metadata document."),
        "stores": stores,
    }
    write_json(OUT / "manifest.json", manifest)
    check_manifest(manifest)
    total = sum(p.stat().st_size for p in files_under(OUT))
    print(f"wrote {len(stores)} store entries, {len(files_under(OUT))} files, {total} bytes")


def prune_expected(stores, built):
    """Removes the expected files of the rebuilt stores `built` that no manifest entry names."""
    named = {n[k] for s in stores for n in s["nodes"] for k in ("npy", "text") if k in n}
    for name in built:
        for path in files_under(EXP / name):
            if path.relative_to(OUT).as_posix() not in named:
                path.unlink()


def build_consolidated():
    out = [
        build_zarr2("v2_consolidated", "consolidated_v2_zarr2", "consolidated-v2", "",
                    json_fn=consolidated_v2_json),
        build_consolidated_zarr3(2),
        build_consolidated_zarr3(3),
    ]
    stale = build_zarr2("v2_stale", "consolidated_v2_stale", "consolidated-v2",
                        "attributes of the root and of 'data' changed with zarr-python after "
                        "zarr.consolidate_metadata: .zmetadata is stale. Default mode shows the "
                        "consolidated values (version 1)",
                        json_fn=consolidated_v2_json)
    fresh = copy.deepcopy(stale)
    store = OUT / stale["store"]
    for n in fresh["nodes"]:
        n["json"] = v2_json(store, n["path"], n["type"])
    fresh["name"] = "consolidated_v2_stale_no_consolidated"
    fresh["options"] = ["--no-consolidated"]
    fresh["note"] = ("same store as consolidated_v2_stale; with --no-consolidated the node "
                     "files are read and show the changed values (version 2)")
    for n in stale["nodes"]:
        assert n["json"]["attributes"]["version"] == 1
    for n in fresh["nodes"]:
        assert n["json"]["attributes"]["version"] == 2
    return out + [stale, fresh]


def consolidated_v2_json(store, n):
    cons = read_json(Path(store) / ".zmetadata")
    assert cons["zarr_consolidated_format"] == 1
    return v2_json(store, n["path"], n["type"], cons)


if __name__ == "__main__":
    main()
