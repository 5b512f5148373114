#!/usr/bin/env python3
"""Datasets for scripts/bench.sh, written with zarr-python 3.

    python3 scripts/bench_data.py arrays DIR --size-mib 256
    python3 scripts/bench_data.py tree DIR --groups 100 --arrays 100
    python3 scripts/bench_data.py meta-tree DIR --groups 1000 --arrays 100
    python3 scripts/bench_data.py plain DIR --raw RAW --shape T,Y,X
    python3 scripts/bench_data.py shard DIR --raw RAW --shape T,Y,X
    python3 scripts/bench_data.py upload DIR s3://BUCKET/PREFIX --endpoint URL
    python3 scripts/bench_data.py consolidate STORE

`arrays` writes DIR/arrays.zarr (Zarr v3) holding the same noisy float32 volume of shape
(T, 1024, 1024), T = size/4 MiB, chunks 8x256x256, three times:

    zstd   zstd level 3
    blosc  blosc lz4, clevel 5, byte shuffle
    gzip   gzip level 5

plus a frame stack of the first min(T, 32) frames, zstd, twice:

    stack/by_frame  chunks (1, 1024, 1024): one chunk per frame
    stack/by_block  chunks (8, 256, 256):   a frame is a quarter of the 8-frame depth of 16 chunks

and DIR/raw.bin, the same volume uncompressed (C order, little-endian), byte for byte what the
mounted file `zstd` holds.

`tree` writes DIR/tree.zarr (Zarr v3): a root group with G groups of A small int32 arrays each
(shape (32,), chunks (16,), two chunk files per array).

`meta-tree` writes DIR/tree.zarr with the same layout, metadata only (no chunks): the `zarr.json`
of one group and one array as zarr-python writes them, copied to every node; for hierarchies
too large to write array by array (the scale section).

`plain` writes DIR/plain.zarr: the volume of RAW (a raw.bin of `arrays`) as the array `plain`,
uncompressed, same chunks: what moving the bytes through FUSE costs with nothing to decode.

`shard` writes DIR/sharded.zarr: the volume of RAW as the array `one`, stored as a single shard
of inner chunks 8x256x256 (zstd level 3), read by byte ranges.

`upload` puts the files under DIR to an S3 endpoint, as objects.

`consolidate` adds consolidated metadata to STORE (the remote section mounts the tree both ways).

A directory is reused when DIR/params.json matches the requested parameters; it is written last,
so an interrupted run is redone.
"""

import argparse
import json
import multiprocessing
import os
import shutil
import sys
import time

import numpy as np
import zarr
from zarr.codecs import BloscCodec, GzipCodec, ZstdCodec

FORMAT_VERSION = 1
Y = X = 1024
CHUNKS = (8, 256, 256)


def codecs():
    return {
        "zstd": ZstdCodec(level=3),
        "blosc": BloscCodec(cname="lz4", clevel=5, shuffle="shuffle"),
        "gzip": GzipCodec(level=5),
    }


def frames_for(size_mib):
    """T for a (T, 1024, 1024) float32 volume of about size_mib MiB, a multiple of 8."""
    t = max(8, (size_mib // 4) // 8 * 8)
    return t


def noisy_slab(t0, t1, rng):
    """A smooth field plus Gaussian noise, quantized to 1/32: compresses to about 40 %."""
    t = np.arange(t0, t1, dtype=np.float32)[:, None, None]
    y = np.linspace(0, 2 * np.pi, Y, dtype=np.float32)[None, :, None]
    x = np.linspace(0, 2 * np.pi, X, dtype=np.float32)[None, None, :]
    f = 10 * np.sin(2 * y + 0.1 * t) * np.cos(3 * x - 0.05 * t) + 3 * np.sin(5 * x + 7 * y)
    f = f.astype(np.float32)
    f += rng.standard_normal(f.shape, dtype=np.float32)
    return (np.round(f * 32) / 32).astype(np.float32)


def done(path, params):
    try:
        with open(os.path.join(path, "params.json")) as f:
            return json.load(f) == params
    except (OSError, ValueError):
        return False


def start(path, params):
    """False when `path` already holds the dataset described by `params`; else empties `path`
    for a new one and returns True."""
    if done(path, params):
        print(f"bench_data: reusing {path}")
        return False
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return True


def finish(path, params):
    with open(os.path.join(path, "params.json"), "w") as f:
        json.dump(params, f, indent=1)


def make_arrays(path, size_mib):
    T = frames_for(size_mib)
    ts = min(T, 32)
    params = {
        "kind": "arrays",
        "format": FORMAT_VERSION,
        "shape": [T, Y, X],
        "stack_frames": ts,
        "zarr": zarr.__version__,
    }
    if not start(path, params):
        return
    started = time.time()
    store = os.path.join(path, "arrays.zarr")
    root = zarr.open_group(store, mode="w", zarr_format=3)
    arrays = {
        name: root.create_array(name, shape=(T, Y, X), chunks=CHUNKS, dtype="<f4", compressors=c)
        for name, c in codecs().items()
    }
    stack = root.create_group("stack")
    by_frame = stack.create_array(
        "by_frame", shape=(ts, Y, X), chunks=(1, Y, X), dtype="<f4", compressors=ZstdCodec(level=3)
    )
    by_block = stack.create_array(
        "by_block", shape=(ts, Y, X), chunks=CHUNKS, dtype="<f4", compressors=ZstdCodec(level=3)
    )
    rng = np.random.default_rng(20240601)
    with open(os.path.join(path, "raw.bin"), "wb") as raw:
        for t0 in range(0, T, 8):
            t1 = min(T, t0 + 8)
            slab = noisy_slab(t0, t1, rng)
            for a in arrays.values():
                a[t0:t1] = slab
            if t0 < ts:
                by_frame[t0 : min(t1, ts)] = slab[: min(t1, ts) - t0]
                by_block[t0 : min(t1, ts)] = slab[: min(t1, ts) - t0]
            raw.write(slab.astype("<f4", copy=False).tobytes())
    sizes = {}
    for name in list(arrays) + ["stack/by_frame", "stack/by_block"]:
        n = 0
        for d, _, files in os.walk(os.path.join(store, name)):
            n += sum(os.path.getsize(os.path.join(d, f)) for f in files)
        sizes[name] = n
    params_out = dict(params)
    finish(path, params_out)
    with open(os.path.join(path, "sizes.json"), "w") as f:
        json.dump(sizes, f, indent=1)
    print(
        f"bench_data: wrote {store} ({T}x{Y}x{X} float32, {T * Y * X * 4 >> 20} MiB per array; "
        f"stored bytes {sizes}) in {time.time() - started:.1f} s"
    )


def _tree_worker(args):
    store, groups, n_arrays = args
    root = zarr.open_group(store, mode="r+")
    data = np.arange(32, dtype="<i4")
    for gname in groups:
        g = root[gname]
        for j in range(n_arrays):
            a = g.create_array(f"a{j:03d}", shape=(32,), chunks=(16,), dtype="<i4")
            a[:] = data + j
    return len(groups)


def make_tree(path, n_groups, n_arrays, metadata_only=False):
    params = {
        "kind": "meta-tree" if metadata_only else "tree",
        "format": FORMAT_VERSION,
        "groups": n_groups,
        "arrays_per_group": n_arrays,
        "zarr": zarr.__version__,
    }
    if not start(path, params):
        return
    started = time.time()
    store = os.path.join(path, "tree.zarr")
    if metadata_only:
        write_meta_tree(path, store, n_groups, n_arrays)
    else:
        root = zarr.open_group(store, mode="w", zarr_format=3)
        names = [f"g{i:03d}" for i in range(n_groups)]
        for n in names:
            root.create_group(n, attributes={"index": n})
        workers = max(1, min(4, os.cpu_count() or 1))
        parts = [(store, names[i::workers], n_arrays) for i in range(workers)]
        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            pool.map(_tree_worker, parts)
    finish(path, params)
    print(
        f"bench_data: wrote {store} ({n_groups} groups x {n_arrays} arrays = "
        f"{1 + n_groups + n_groups * n_arrays} nodes{', metadata only' if metadata_only else ''}) "
        f"in {time.time() - started:.1f} s"
    )


def write_meta_tree(path, store, n_groups, n_arrays):
    """The `zarr.json` of one group and one array as zarr-python writes them, copied to every
    node of `store`."""
    template = os.path.join(path, "template.zarr")
    root = zarr.open_group(template, mode="w", zarr_format=3)
    root.create_group("g").create_array("a", shape=(32,), chunks=(16,), dtype="<i4")
    docs = {}
    for key in ("zarr.json", "g/zarr.json", "g/a/zarr.json"):
        with open(os.path.join(template, key), "rb") as f:
            docs[key] = f.read()
    shutil.rmtree(template)
    os.makedirs(store)
    with open(os.path.join(store, "zarr.json"), "wb") as f:
        f.write(docs["zarr.json"])
    for i in range(n_groups):
        group = os.path.join(store, f"g{i:04d}")
        os.makedirs(group)
        with open(os.path.join(group, "zarr.json"), "wb") as f:
            f.write(docs["g/zarr.json"])
        for j in range(n_arrays):
            array = os.path.join(group, f"a{j:03d}")
            os.makedirs(array)
            with open(os.path.join(array, "zarr.json"), "wb") as f:
                f.write(docs["g/a/zarr.json"])


def make_copy(path, raw, shape, kind):
    """The volume of `raw` again, as DIR/plain.zarr (uncompressed, chunks CHUNKS) or as
    DIR/sharded.zarr (one shard of inner chunks CHUNKS, zstd: a single object the reader reaches
    by byte ranges)."""
    params = {"format": FORMAT_VERSION, "shape": list(shape), "raw_size": os.path.getsize(raw)}
    if not start(path, params):
        return
    data = np.memmap(raw, dtype="<f4", mode="r", shape=tuple(shape))
    store = os.path.join(path, f"{kind}.zarr")
    root = zarr.open_group(store, mode="w", zarr_format=3)
    if kind == "plain":
        a = root.create_array("plain", shape=shape, chunks=CHUNKS, dtype="<f4", compressors=None)
        for t in range(0, shape[0], CHUNKS[0]):
            a[t:t + CHUNKS[0]] = data[t:t + CHUNKS[0]]
    else:
        a = root.create_array(
            "one", shape=shape, chunks=CHUNKS, shards=shape, dtype="<f4", compressors=ZstdCodec(level=3)
        )
        a[...] = data
    finish(path, params)
    print(f"bench_data: wrote {store}")


def upload(src, url, endpoint):
    """Puts every file under `src` to `url` (s3://bucket/prefix), as a writer puts objects to
    object storage: s3s-fs then keeps each object's ETag instead of hashing the whole object on
    every GET, which on one large shard read by ranges would be most of the server's work."""
    import obstore
    from obstore.store import S3Store

    bucket, _, prefix = url[len("s3://"):].partition("/")
    s3 = S3Store(bucket, endpoint=endpoint, client_options={"allow_http": True})
    n = 0
    for d, _, files in os.walk(src):
        for f in files:
            local = os.path.join(d, f)
            key = f"{prefix}/{os.path.relpath(local, src)}"
            with open(local, "rb") as fh:
                obstore.put(s3, key, fh.read())
            n += 1
    print(f"bench_data: put {n} objects under {url}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("arrays")
    a.add_argument("dir")
    a.add_argument("--size-mib", type=int, default=256)
    t = sub.add_parser("tree")
    t.add_argument("dir")
    t.add_argument("--groups", type=int, default=100)
    t.add_argument("--arrays", type=int, default=100)
    m = sub.add_parser("meta-tree")
    m.add_argument("dir")
    m.add_argument("--groups", type=int, default=1000)
    m.add_argument("--arrays", type=int, default=100)
    for name in ("plain", "shard"):
        copy = sub.add_parser(name)
        copy.add_argument("dir")
        copy.add_argument("--raw", required=True)
        copy.add_argument("--shape", required=True)
    u = sub.add_parser("upload")
    u.add_argument("src")
    u.add_argument("url")
    u.add_argument("--endpoint", required=True)
    c = sub.add_parser("consolidate")
    c.add_argument("store")
    args = p.parse_args()
    if args.cmd == "arrays":
        make_arrays(args.dir, args.size_mib)
    elif args.cmd in ("plain", "shard"):
        kind = "plain" if args.cmd == "plain" else "sharded"
        make_copy(args.dir, args.raw, [int(n) for n in args.shape.split(",")], kind)
    elif args.cmd == "upload":
        upload(args.src, args.url, args.endpoint)
    elif args.cmd == "tree":
        make_tree(args.dir, args.groups, args.arrays)
    elif args.cmd == "meta-tree":
        make_tree(args.dir, args.groups, args.arrays, metadata_only=True)
    else:
        zarr.consolidate_metadata(args.store)
        print(f"bench_data: consolidated the metadata of {args.store}")


if __name__ == "__main__":
    sys.exit(main())
