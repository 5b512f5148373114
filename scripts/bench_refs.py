#!/usr/bin/env python3
"""Data and zarr-python timings for the references section of scripts/bench.sh.

    bench_refs.py data DIR --size-mib N        netCDF-4 file, kerchunk JSON references to it,
                                               an Icechunk repository of the same values
    bench_refs.py read-refs REFS.json VAR      zarr-python + fsspec reading VAR through REFS
    bench_refs.py read-icechunk REPO VAR       zarr-python + icechunk reading VAR of REPO's main

DIR gets data.nc (netCDF4: variable `t`, float32 (T, 512, 512), chunks 8×256×256, zlib level 1
with shuffle, as netCDF users write), refs.json (kerchunk's SingleHdf5ToZarr, no inlining),
repo/ (icechunk 2: `t` with the same values and chunks, zstd level 3), raw.bin (the values, C
order, little-endian) and params.json. An existing DIR with the same params is reused.

Reads print one JSON line as scripts/bench_read.py does: {"seconds", "bytes", "sum"}. Timing
covers opening the array and reading it whole into numpy, after a warm-up read of its first
element (event loop, thread pool, codec set-up), as bench_read.py's --warmup does.

Needs Python >= 3.12 with zarr 3, icechunk 2, kerchunk, h5py, netCDF4 and fsspec.
"""

import argparse
import json
import os
import shutil
import sys
import time

import numpy as np

Y = X = 512
CHUNKS = (8, 256, 256)
FORMAT = 1


def field(t0, t1, rng):
    """A smooth field plus noise, quantized to 1/32 (compresses to about half)."""
    t = np.arange(t0, t1, dtype=np.float32)[:, None, None]
    y = np.linspace(0, 2 * np.pi, Y, dtype=np.float32)[None, :, None]
    x = np.linspace(0, 2 * np.pi, X, dtype=np.float32)[None, None, :]
    f = (10 * np.sin(2 * y + 0.1 * t) * np.cos(3 * x - 0.05 * t)).astype(np.float32)
    f += rng.standard_normal(f.shape, dtype=np.float32)
    return (np.round(f * 32) / 32).astype(np.float32)


def make(path, size_mib):
    import icechunk
    import netCDF4
    import zarr
    from kerchunk.hdf import SingleHdf5ToZarr

    T = max(8, size_mib * 2**20 // (Y * X * 4) // 8 * 8)
    params = {"format": FORMAT, "shape": [T, Y, X], "chunks": list(CHUNKS)}
    try:
        with open(os.path.join(path, "params.json")) as f:
            if json.load(f) == params:
                print(f"bench_refs: reusing {path}", file=sys.stderr)
                return
    except (OSError, ValueError):
        pass
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    rng = np.random.default_rng(7)
    nc = os.path.join(path, "data.nc")
    with netCDF4.Dataset(nc, "w") as ds, open(os.path.join(path, "raw.bin"), "wb") as raw:
        for name, n in (("time", T), ("y", Y), ("x", X)):
            ds.createDimension(name, n)
        v = ds.createVariable("t", "f4", ("time", "y", "x"), zlib=True, complevel=1,
                              shuffle=True, chunksizes=CHUNKS)
        for t0 in range(0, T, CHUNKS[0]):
            slab = field(t0, t0 + CHUNKS[0], rng)
            v[t0:t0 + CHUNKS[0]] = slab
            raw.write(slab.astype("<f4").tobytes())
    refs = SingleHdf5ToZarr(nc, url=nc, inline_threshold=0).translate()
    with open(os.path.join(path, "refs.json"), "w") as f:
        json.dump(refs, f)

    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(os.path.join(path, "repo")))
    session = repo.writable_session("main")
    root = zarr.group(store=session.store)
    a = root.create_array("t", shape=(T, Y, X), chunks=CHUNKS, dtype="f4",
                          compressors=zarr.codecs.ZstdCodec(level=3))
    values = np.fromfile(os.path.join(path, "raw.bin"), dtype="<f4").reshape(T, Y, X)
    a[:] = values
    session.commit("bench data")
    with open(os.path.join(path, "params.json"), "w") as f:
        json.dump(params, f)


def timed(open_array):
    a = open_array()
    a[(0,) * a.ndim]
    t0 = time.perf_counter()
    a = open_array()
    v = a[:]
    s = time.perf_counter() - t0
    print(json.dumps({"seconds": s, "bytes": v.nbytes, "sum": float(v.sum(dtype=np.float64))}))


def read_refs(refs, var):
    import fsspec
    import zarr

    def open_array():
        fs = fsspec.filesystem("reference", fo=refs, asynchronous=True, remote_protocol="file")
        store = zarr.storage.FsspecStore(fs, read_only=True, path="")
        return zarr.open_array(store, path=var, mode="r", zarr_format=2)

    timed(open_array)


def read_icechunk(repo_path, var):
    import icechunk
    import zarr

    def open_array():
        repo = icechunk.Repository.open(icechunk.local_filesystem_storage(repo_path))
        session = repo.readonly_session(branch="main")
        return zarr.open_array(session.store, path=var, mode="r")

    timed(open_array)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("data")
    d.add_argument("dir")
    d.add_argument("--size-mib", type=int, default=256)
    r = sub.add_parser("read-refs")
    r.add_argument("refs")
    r.add_argument("var")
    i = sub.add_parser("read-icechunk")
    i.add_argument("repo")
    i.add_argument("var")
    a = p.parse_args()
    if a.cmd == "data":
        make(a.dir, a.size_mib)
    elif a.cmd == "read-refs":
        read_refs(a.refs, a.var)
    else:
        read_icechunk(a.repo, a.var)


if __name__ == "__main__":
    main()
