"""Writes the kerchunk reference fixtures under tests/fixtures/references/ and their manifest.

Run with Python 3.12 and: kerchunk h5py netCDF4 fsspec pandas pyarrow zarr==3.*
(scripts/make_icechunk_fixtures.py writes the Icechunk ones).

netCDF4 writes two small netCDF-4 files; kerchunk 0.2 makes the references: one file
(version 1 refs with inline data and missing chunks), the same as version 0 with base64 data,
version 1 with templates and a `gen` entry over a raw binary file, the two files combined along
time (MultiZarrToZarr), and that combination as a Parquet directory with several record files
per array. Expected values: fsspec's ReferenceFileSystem read by zarr-python, checked against
netCDF4 reading the .nc files. Target paths are relative to the reference files (kerchunk is run
from the fixture directory), so the fixtures work wherever the repository is.
"""

import base64
import json
import os
import shutil
import sys
from importlib.metadata import version

import fsspec
import kerchunk.df
import netCDF4
import numpy as np
import zarr
from kerchunk.combine import MultiZarrToZarr
from kerchunk.hdf import SingleHdf5ToZarr

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "references")


def write_nc(path, day):
    """One day of a small gridded dataset; `sparse` has chunks never written (missing)."""
    with netCDF4.Dataset(path, "w") as d:
        d.title = f"zarrfs kerchunk fixture, day {day}"
        d.createDimension("time", 2)
        d.createDimension("lat", 8)
        d.createDimension("lon", 10)
        t = d.createVariable("time", "i4", ("time",))
        t.units = "hours since 2026-01-01"
        t[:] = [day * 24, day * 24 + 12]
        lat = d.createVariable("lat", "f4", ("lat",))
        lat[:] = np.arange(8) * 0.5 + 10
        lon = d.createVariable("lon", "f8", ("lon",))
        lon[:] = np.linspace(-3.0, 1.5, 10)
        temp = d.createVariable("temp", "f4", ("time", "lat", "lon"), chunksizes=(1, 4, 10),
                                zlib=True, shuffle=True)
        temp.units = "K"
        rng = np.random.default_rng(day)
        temp[:] = (280 + rng.normal(0, 3, (2, 8, 10))).astype("f4")
        sparse = d.createVariable("sparse", "i2", ("time", "lat", "lon"), chunksizes=(1, 4, 10),
                                  fill_value=-99)
        sparse[0, 0:4, :] = np.arange(40, dtype="i2").reshape(4, 10) + day
        counts = d.createVariable("counts", "u2", ("lat", "lon"))
        counts[:] = (np.arange(80, dtype="u2") * 797).reshape(8, 10)


def single(path):
    return SingleHdf5ToZarr(path, inline_threshold=50).translate()


def to_v0(refs):
    """Version 0 of a version 1 set, inline data as base64."""
    out = {}
    for k, v in refs["refs"].items():
        if isinstance(v, str) and not v.startswith("base64:") and not k.endswith((".zarray", ".zattrs", ".zgroup")):
            v = "base64:" + base64.b64encode(v.encode("latin-1")).decode()
        out[k] = v
    return out


def templated(refs):
    """Version 1 with the target as a template, and a `gen` entry over raw/block.bin."""
    out = {"version": 1, "templates": {"f": "nc/day1.nc", "r": "raw/block.bin"}, "refs": {}}
    for k, v in refs["refs"].items():
        if isinstance(v, list) and v[0] == "nc/day1.nc":
            v = ["{{f}}"] + v[1:]
        out["refs"][k] = v
    out["refs"]["raw/.zarray"] = json.dumps({
        "shape": [6, 10], "chunks": [1, 10], "dtype": "<u4", "fill_value": 0, "order": "C",
        "filters": None, "compressor": None, "zarr_format": 2})
    out["refs"]["raw/.zattrs"] = json.dumps({"_ARRAY_DIMENSIONS": ["row", "col"]})
    out["gen"] = [{"key": "raw/{{i}}.0", "url": "{{r}}", "offset": "{{ i * 40 }}",
                   "length": "40", "dimensions": {"i": {"stop": 6}}}]
    return out


def read_group(fo):
    fs = fsspec.filesystem("reference", fo=fo, asynchronous=True, simple_templates=False,
                           remote_protocol="file")
    store = zarr.storage.FsspecStore(fs, read_only=True, path="")
    return zarr.open_group(store, mode="r", zarr_format=2)


def little(a):
    a = np.asarray(a)
    return np.ascontiguousarray(a.astype(a.dtype.newbyteorder("<")))


def case(name, store, fo, nc_files, options=None):
    """A manifest entry: every node of the reference set, its expected npy from zarr-python
    reading the reference set `fo` (for the Parquet directory: the JSON set it was made from, as
    fsspec 2026.9 with pandas 3 reads a missing chunk's null path as NaN and fails)."""
    g = read_group(fo)
    nodes = [{"path": "", "type": "group", "json": {"zarr_format": 2, "node_type": "group"}}]
    os.makedirs(os.path.join(OUT, "expected", name), exist_ok=True)
    for path, arr in sorted(g.arrays()):
        data = little(arr[...])
        if nc_files and path in netCDF4.Dataset(nc_files[0]).variables:
            # Cross-check against netCDF4 on the files themselves.
            parts = [np.ma.filled(netCDF4.Dataset(f)[path][...], arr.fill_value) for f in nc_files]
            whole = parts[0] if len(parts) == 1 or path in ("lat", "lon", "counts") else np.concatenate(parts)
            assert np.array_equal(whole, data), (name, path)
        npy = f"expected/{name}/{path}.npy"
        np.save(os.path.join(OUT, npy), data)
        nodes.append({"path": path, "type": "array", "npy": npy,
                      "json": {"shape": list(arr.shape), "chunks": list(arr.chunks),
                               "zarr_format": 2, "node_type": "array"}})
    entry = {"name": name, "store": store, "nodes": nodes}
    if options:
        entry["options"] = options
    return entry


def main():
    if os.path.exists(OUT):
        shutil.rmtree(OUT)
    os.makedirs(os.path.join(OUT, "nc"))
    os.makedirs(os.path.join(OUT, "raw"))
    os.chdir(OUT)
    write_nc("nc/day1.nc", 1)
    write_nc("nc/day2.nc", 2)
    np.arange(60, dtype="<u4").reshape(6, 10).__mul__(1001).astype("<u4").tofile("raw/block.bin")

    day1, day2 = single("nc/day1.nc"), single("nc/day2.nc")
    # One array whose only chunk is a whole file (`[url]`; in Parquet offset and size 0).
    day1["refs"]["whole/.zarray"] = json.dumps({
        "shape": [60], "chunks": [60], "dtype": "<u4", "fill_value": 0, "order": "C",
        "filters": None, "compressor": None, "zarr_format": 2})
    day1["refs"]["whole/.zattrs"] = json.dumps({"_ARRAY_DIMENSIONS": ["n"]})
    day1["refs"]["whole/0"] = ["raw/block.bin"]
    combined = MultiZarrToZarr([day1, day2], concat_dims=["time"],
                               identical_dims=["lat", "lon", "counts", "whole"],
                               inline_threshold=50).translate()
    sets = {"single.json": day1, "v0.json": to_v0(day1), "templated.json": templated(day1),
            "combined.json": combined}
    for name, refs in sets.items():
        with open(name, "w") as f:
            json.dump(refs, f, indent=1)
    kerchunk.df.refs_to_dataframe(combined, "combined.parq", record_size=3)

    stores = [
        case("single", "single.json", "single.json", ["nc/day1.nc"]),
        case("v0", "v0.json", "v0.json", ["nc/day1.nc"]),
        case("templated", "templated.json", "templated.json", ["nc/day1.nc"]),
        case("combined", "combined.json", "combined.json", ["nc/day1.nc", "nc/day2.nc"]),
        case("parquet", "combined.parq", "combined.json", ["nc/day1.nc", "nc/day2.nc"]),
    ]
    for name in ("single", "v0", "combined", "parquet"):
        assert np.array_equal(np.load(f"expected/{name}/whole.npy"),
                              np.fromfile("raw/block.bin", "<u4")), name
    raw = np.load("expected/templated/raw.npy")
    assert np.array_equal(raw, np.fromfile("raw/block.bin", "<u4").reshape(6, 10))
    manifest = {
        "generator": "scripts/make_reference_fixtures.py",
        "versions": {p: version(p) for p in ("kerchunk", "fsspec", "zarr", "netCDF4", "h5py", "pyarrow", "numpy")},
        "python": sys.version.split()[0],
        "stores": stores,
    }
    with open("manifest.json", "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
