#!/usr/bin/env python3
"""Timed reads for scripts/bench.sh: one measurement per process, one JSON line on stdout.

    bench_read.py zarr  ARRAY_PATH SEL [--warmup OTHER_ARRAY] [--barrier DIR] [--endpoint URL]
                        [--concurrency N]
    bench_read.py fetch s3://BUCKET/PREFIX --endpoint URL [--in-flight N]
                        [--decode zstd|blosc|gzip]
                        (every object under PREFIX fetched whole, N at once, not decoded;
                        with --decode, each decoded as it arrives on a thread per core)
    bench_read.py file  FILE SEL --shape T,Y,X [--method memmap|read|slice] [--warmup] [--barrier DIR]
    bench_read.py list  GROUP_PATH                 (zarr-python: open a hierarchy, list every node)
    bench_read.py decode ARRAY_PATH [--threads N]  (numcodecs: decode every chunk, no FUSE)
    bench_read.py aggregate JSON_FILE...           (parallel readers: total bytes / wall time)

SEL is numpy-like: ":" (everything), "5", "16:32", ":,:,515", ":,300,515", "0:64,100:900:7". --method slice reads
the selection file FILE[SEL] of the mount (zarrfs's slices by name) whole with np.fromfile; its
warm-up reads the selection file of the first element, FILE[0,0,0]. For zarr and --method slice,
SEL may be several selections separated by ";", read one after another in the one process (one
mount): the time and sum are those of all of them.

Timing covers opening the array (zarr.open_array, or np.memmap / open of the mounted file) and
reading the selection into a numpy array; it excludes interpreter start-up and imports. With
--warmup OTHER_ARRAY, zarr-python first reads the first element of OTHER_ARRAY (bench.sh passes
the measured array itself), so its one-time costs (event loop, thread pool, codec set-up) are not
charged to the measurement. With --warmup, the file side likewise first reads the file's first
element, which on a fresh mount warms the daemon's threads, decoders and memory the same way. The
chunks of that element are not among those measured, except for the full-column memmap, which
gets 4 of its 128 chunks from it (zarr-python's warm-up chunk is not among its own).
With --barrier, the process gets ready, creates DIR/ready.<pid>, and waits for DIR/go before
starting, so that parallel readers start together.

An ARRAY_PATH s3://bucket/key is read through zarr's ObjectStore on obstore's S3Store, at the
S3-compatible server --endpoint URL, with credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY.
--concurrency N sets zarr's async.concurrency (requests in flight; zarr's default otherwise).
fetch lists PREFIX first (not timed), then times fetching every object with N requests in
flight (default 64) through obstore: the network-side limit of a cold read, with no decoding.
It also reports how many of the machine's cores were busy meanwhile (busy_cores, /proc/stat).
With --decode, each object is also decoded as it arrives, on a pool of one thread per core: the
machine's limit for any reader that fetches and decodes (zarrfs adds FUSE on top).

Output: {"seconds", "bytes", "sum" (float64 sum of the values, to compare the two sides),
"start", "end" (time.monotonic(), comparable across processes)}.
"""

import argparse
import json
import os
import sys
import time

import numpy as np


def parse_sel(text):
    out = []
    for part in text.split(","):
        part = part.strip()
        if part == ":" or part == "":
            out.append(slice(None))
        elif ":" in part:
            out.append(slice(*(int(v) if v else None for v in part.split(":"))))
        else:
            out.append(int(part))
    return tuple(out)


def barrier(d):
    if not d:
        return
    open(os.path.join(d, f"ready.{os.getpid()}"), "w").close()
    go = os.path.join(d, "go")
    deadline = time.monotonic() + 120
    while not os.path.exists(go):
        if time.monotonic() > deadline:
            sys.exit("bench_read: barrier timed out")
        time.sleep(0.0005)


def emit(t0, t1, *xs):
    print(
        json.dumps(
            {
                "seconds": t1 - t0,
                "bytes": sum(int(x.nbytes) for x in xs),
                "sum": sum(float(np.sum(x, dtype=np.float64)) for x in xs),
                "start": t0,
                "end": t1,
            }
        )
    )


def open_array(path, endpoint):
    """zarr.open_array of a local path, or of s3://bucket/key through obstore."""
    import zarr

    if not path.startswith("s3://"):
        return zarr.open_array(path, mode="r")
    from obstore.store import S3Store
    from zarr.storage import ObjectStore

    bucket, _, key = path[len("s3://"):].partition("/")
    s3 = S3Store(bucket, endpoint=endpoint, client_options={"allow_http": True})
    return zarr.open_array(ObjectStore(s3, read_only=True), path=key, mode="r")


def cmd_zarr(args):
    sels = [parse_sel(s) for s in args.sel.split(";")]
    if args.concurrency:
        import zarr

        zarr.config.set({"async.concurrency": args.concurrency})
    if args.warmup:
        w = open_array(args.warmup, args.endpoint)
        w[(0,) * w.ndim]
    barrier(args.barrier)
    t0 = time.monotonic()
    a = open_array(args.path, args.endpoint)
    xs = [np.asarray(a[sel]) for sel in sels]
    t1 = time.monotonic()
    emit(t0, t1, *xs)


def machine_ticks():
    """The whole machine's busy and total CPU time so far, in clock ticks (/proc/stat)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return v[0] + v[1] + v[2] + v[5] + v[6] + v[7], sum(v)


def cmd_fetch(args):
    import asyncio

    import obstore
    from obstore.store import S3Store

    bucket, _, prefix = args.prefix[len("s3://"):].partition("/")
    s3 = S3Store(bucket, endpoint=args.endpoint, client_options={"allow_http": True})
    keys = [m["path"] for batch in obstore.list(s3, prefix=prefix) for m in batch]

    decode = None
    if args.decode:
        import numcodecs
        from concurrent.futures import ThreadPoolExecutor

        codec = {"zstd": numcodecs.Zstd, "blosc": numcodecs.Blosc, "gzip": numcodecs.GZip}[args.decode]()
        pool = ThreadPoolExecutor(os.cpu_count())
        decode = lambda body: len(codec.decode(body))

    async def fetch_all():
        gate = asyncio.Semaphore(args.in_flight)

        async def one(key):
            async with gate:
                got = await obstore.get_async(s3, key)
                body = await got.bytes_async()
            if decode is None:
                return len(body)
            return await asyncio.get_running_loop().run_in_executor(pool, decode, memoryview(body))

        return sum(await asyncio.gather(*(one(k) for k in keys)))

    busy0, all0 = machine_ticks()
    t0 = time.monotonic()
    total = asyncio.run(fetch_all())
    t1 = time.monotonic()
    busy1, all1 = machine_ticks()
    busy = os.cpu_count() * (busy1 - busy0) / (all1 - all0) if all1 > all0 else None
    print(json.dumps({"seconds": t1 - t0, "bytes": total, "objects": len(keys), "busy_cores": busy}))


def contiguous_range(shape, sel):
    """(offset, count, out_shape) in elements when sel picks a contiguous run of leading-axis
    indices (an int or a slice on axis 0, everything else full), else None."""
    if any(s != slice(None) for s in sel[1:]):
        return None
    inner = int(np.prod(shape[1:]))
    s = sel[0]
    if isinstance(s, int):
        return s * inner, inner, tuple(shape[1:])
    start, stop, step = s.indices(shape[0])
    if step != 1:
        return None
    return start * inner, (stop - start) * inner, (stop - start,) + tuple(shape[1:])


def cmd_file(args):
    shape = tuple(int(v) for v in args.shape.split(","))
    sel = None if args.method == "slice" else parse_sel(args.sel)
    if args.warmup and args.method == "slice":
        # Through a selection file of the first element: warms the daemon the same way without
        # the kernel's readahead of `A` (and the read-ahead it sets off) running into the timing.
        np.fromfile(f"{args.path}[{','.join('0' * len(shape))}]", dtype="<f4")
    elif args.warmup:
        np.fromfile(args.path, dtype="<f4", count=1)
    barrier(args.barrier)
    if args.method == "read":
        r = contiguous_range(shape, sel)
        if r is None:
            sys.exit("bench_read: --method read needs a contiguous selection")
        off, count, out_shape = r
        t0 = time.monotonic()
        x = np.fromfile(args.path, dtype="<f4", count=count, offset=off * 4).reshape(out_shape)
        t1 = time.monotonic()
    elif args.method == "slice":
        texts = args.sel.split(";")
        shapes = [np.empty(shape, dtype="u1")[parse_sel(t)].shape for t in texts]
        t0 = time.monotonic()
        xs = [np.fromfile(f"{args.path}[{t}]", dtype="<f4").reshape(s) for t, s in zip(texts, shapes)]
        t1 = time.monotonic()
        emit(t0, t1, *xs)
        return
    else:
        t0 = time.monotonic()
        mm = np.memmap(args.path, dtype="<f4", mode="r", shape=shape)
        x = np.array(mm[sel])
        t1 = time.monotonic()
        del mm
    emit(t0, t1, x)


def cmd_list(args):
    import zarr

    t0 = time.monotonic()
    g = zarr.open_group(args.path, mode="r")
    members = list(g.members(max_depth=None))
    t1 = time.monotonic()
    print(json.dumps({"seconds": t1 - t0, "nodes": len(members) + 1}))


def cmd_aggregate(args):
    rows = []
    for path in args.files:
        with open(path) as f:
            rows.append(json.loads(f.read().strip().splitlines()[-1]))
    start = min(r["start"] for r in rows)
    end = max(r["end"] for r in rows)
    total = sum(r["bytes"] for r in rows)
    print(json.dumps({"seconds": end - start, "bytes": total, "sum": sum(r["sum"] for r in rows)}))


def cmd_decode(args):
    """Decodes every chunk file of the Zarr v3 array at PATH (one bytes-to-bytes codec: zstd,
    blosc or gzip) on THREADS threads, no FUSE: the decoding half of a cold read's limit."""
    from concurrent.futures import ThreadPoolExecutor

    import numcodecs

    with open(os.path.join(args.path, "zarr.json")) as f:
        meta = json.load(f)
    spec = next(c for c in meta["codecs"] if c["name"] in ("zstd", "blosc", "gzip"))
    conf = spec.get("configuration", {})
    codec = {
        "zstd": lambda: numcodecs.Zstd(level=conf.get("level", 0)),
        "blosc": lambda: numcodecs.Blosc(),
        "gzip": lambda: numcodecs.GZip(level=conf.get("level", 1)),
    }[spec["name"]]()
    files = [os.path.join(d, n) for d, _, ns in os.walk(os.path.join(args.path, "c")) for n in ns]
    blobs = []
    for name in files:
        with open(name, "rb") as f:
            blobs.append(f.read())
    t0 = time.monotonic()
    with ThreadPoolExecutor(args.threads) as pool:
        total = sum(pool.map(lambda b: len(codec.decode(b)), blobs))
    t1 = time.monotonic()
    print(json.dumps({"seconds": t1 - t0, "bytes": total, "chunks": len(blobs)}))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    z = sub.add_parser("zarr")
    z.add_argument("path")
    z.add_argument("sel")
    z.add_argument("--warmup")
    z.add_argument("--barrier")
    z.add_argument("--endpoint")
    z.add_argument("--concurrency", type=int)
    fe = sub.add_parser("fetch")
    fe.add_argument("prefix")
    fe.add_argument("--endpoint", required=True)
    fe.add_argument("--in-flight", type=int, default=64)
    fe.add_argument("--decode", choices=["zstd", "blosc", "gzip"])
    f = sub.add_parser("file")
    f.add_argument("path")
    f.add_argument("sel")
    f.add_argument("--shape", required=True)
    f.add_argument("--method", choices=["memmap", "read", "slice"], default="memmap")
    f.add_argument("--warmup", action="store_true")
    f.add_argument("--barrier")
    ls = sub.add_parser("list")
    ls.add_argument("path")
    de = sub.add_parser("decode")
    de.add_argument("path")
    de.add_argument("--threads", type=int, default=os.cpu_count())
    ag = sub.add_parser("aggregate")
    ag.add_argument("files", nargs="+")
    args = p.parse_args()
    {"zarr": cmd_zarr, "fetch": cmd_fetch, "file": cmd_file, "list": cmd_list,
     "decode": cmd_decode, "aggregate": cmd_aggregate}[args.cmd](args)


if __name__ == "__main__":
    main()
