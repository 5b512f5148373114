#!/usr/bin/env python3
"""Turns the measurements of scripts/bench.sh into the table of ratios (stdout and BENCHMARKS.md).

    bench_report.py RESULTS.tsv --out BENCHMARKS.md [--param key=value ...]

RESULTS.tsv has one measurement per line: KEY<TAB>VALUE, a key repeated once per repetition.
VALUE is a number (seconds, bytes, KiB) or a JSON object (random-read runs). The best repetition
counts (shortest time, most reads per second); every repetition is listed at the end of the file.
"""

import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys

MIB = 1 << 20


def sh(cmd, cwd=None):
    try:
        return subprocess.run(
            cmd, shell=True, cwd=cwd, capture_output=True, text=True, timeout=30
        ).stdout.strip()
    except Exception:
        return ""


def load(path):
    vals = {}
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or "\t" not in line:
                continue
            k, v = line.split("\t", 1)
            try:
                v = json.loads(v)
            except ValueError:
                pass
            vals.setdefault(k, []).append(v)
    return vals


class R:
    def __init__(self, vals):
        self.v = vals

    def all(self, k):
        return self.v.get(k, [])

    def min(self, k):
        xs = [x for x in self.all(k) if isinstance(x, (int, float))]
        return min(xs) if xs else None

    def med(self, k):
        xs = [x for x in self.all(k) if isinstance(x, (int, float))]
        return statistics.median(xs) if xs else None

    def first(self, k):
        xs = self.all(k)
        return xs[0] if xs else None

    def at_best(self, k, other):
        """`other`'s value recorded with the best (smallest) value of `k`, when it is a number."""
        pairs = [(t, o) for t, o in zip(self.all(k), self.all(other)) if isinstance(t, (int, float))]
        o = min(pairs, key=lambda p: p[0])[1] if pairs else None
        return o if isinstance(o, (int, float)) else None

    def best_json(self, k, field):
        xs = [x for x in self.all(k) if isinstance(x, dict) and field in x]
        return max(xs, key=lambda x: x[field]) if xs else None


def fmt_rate(bps):
    if bps is None:
        return "n/a"
    if bps >= 1e9:
        return f"{bps / 1e9:.2f} GB/s"
    return f"{bps / 1e6:.0f} MB/s"


def fmt_time(s):
    if s is None:
        return "n/a"
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.1f} ms"
    return f"{s:.2f} s"


def fmt_iops(j):
    if not j:
        return "n/a"
    return f"{j['iops'] / 1e3:.1f}k/s (p50 {j['p50_us']:.0f} µs, p99 {j['p99_us']:.0f} µs)"


def rows(r, p):
    """(section, workload, zarrfs, baseline, ratio, target text, met) for every measured row."""
    out = []
    nbytes = r.first("bytes.array")

    def rate(k, n=nbytes):
        t = r.min(k)
        return None if t is None or n is None or t <= 0 else n / t

    def busy_note(k):
        busy = r.at_best(k, f"{k}_busy")
        return "" if busy is None else f" (machine {busy:.1f} cores busy)"

    def add(sec, name, zv, bv, ratio, target, met, med=None):
        """med = (zarrfs key, baseline key, lower_is_better): adds the ratio of the medians."""
        rm = None
        if med:
            z, b = r.med(med[0]), r.med(med[1])
            if z and b:
                rm = z / b if med[2] else b / z
        out.append((sec, name, zv, bv, ratio, target, met, rm))

    # 1. full sequential reads
    for codec, tgt in (("zstd", 1.5), ("blosc", 1.0), ("gzip", 1.5)):
        z, b = rate(f"full.{codec}.cold"), rate(f"full.{codec}.zarr")
        if z is None and b is None:
            continue
        ratio = z / b if z and b else None
        zs = fmt_rate(z)
        # daemon CPU use during the best cold read, in cores
        pairs = list(zip(r.all(f"full.{codec}.cold"), r.all(f"full.{codec}.cold_cpu")))
        if pairs:
            t, c = min(pairs)
            if isinstance(t, (int, float)) and isinstance(c, (int, float)) and t > 0:
                zs += f" (daemon {c / t:.1f} cores)"
        add("1 full read", f"cold `dd bs=1M`, {codec} vs zarr-python `a[:]`", zs, fmt_rate(b),
            ratio, f"≥ {tgt}", None if ratio is None else ratio >= tgt,
            med=(f"full.{codec}.cold", f"full.{codec}.zarr", False))
    raw = rate("full.raw.pagecache")
    for codec in ("zstd", "blosc", "gzip"):
        z = rate(f"full.{codec}.warm")
        if z is None:
            continue
        ratio = z / raw if z and raw else None
        add("1 full read", f"warm `dd bs=1M`, {codec} vs uncompressed file from page cache", fmt_rate(z),
            fmt_rate(raw), ratio, "≥ 0.8", None if ratio is None else ratio >= 0.8,
            med=(f"full.{codec}.warm", "full.raw.pagecache", False))
    shm = rate("full.raw.tmpfs")
    z = rate("full.zstd.warm")
    if shm and z:
        add("1 full read", "warm `dd bs=1M`, zstd vs the uncompressed file on tmpfs (4 KiB pages, like FUSE)",
            fmt_rate(z), fmt_rate(shm), z / shm, "—", None)

    # 2. one frame, 3. column slices: speed-up = zarr-python time / zarrfs time
    def speed(sec, name, kz, kb, tgt=1.0):
        z, b = r.min(kz), r.min(kb)
        if z is None and b is None:
            return
        ratio = b / z if z and b else None
        add(sec, name, fmt_time(z), fmt_time(b), ratio, f"≥ {tgt}" if tgt else "—",
            None if ratio is None or not tgt else ratio >= tgt, med=(kz, kb, False))

    speed("2 one frame", "frame `a[t]`, chunks = frames (1×Y×X), cold, vs zarr-python",
          "frame.by_frame.zarrfs", "frame.by_frame.zarr")
    speed("2 one frame", "frame `a[t]`, chunks 8×256×256 ≠ frames, cold, vs zarr-python",
          "frame.by_block.zarrfs", "frame.by_block.zarr")
    speed("3 column", "column slice `a[:, :, x]` via numpy.memmap, cold, vs zarr-python",
          "col.plane.zarrfs", "col.plane.zarr")
    speed("3 column", "pixel series `a[:, y, x]` via numpy.memmap, cold, vs zarr-python",
          "col.pixel.zarrfs", "col.pixel.zarr")

    # 8. selection files (slices by name): speed-up = zarr-python time / zarrfs time
    speed("8 slices", "pixel series file `zstd[:,y,x]` inside a chunk, cold, vs zarr-python `a[:, y, x]`",
          "slice.pixel.zarrfs", "slice.pixel.zarr")
    speed("8 slices", "pixel series file `zstd[:,y,x]` at a chunk's corner, cold, vs zarr-python",
          "slice.pixel_aligned.zarrfs", "slice.pixel_aligned.zarr")
    speed("8 slices", "column file `zstd[:,:,x]` inside a chunk, cold, vs zarr-python `a[:, :, x]`",
          "slice.column.zarrfs", "slice.column.zarr")
    speed("8 slices", "column file `zstd[:,:,x]` at a chunk's first column, cold, vs zarr-python",
          "slice.column_aligned.zarrfs", "slice.column_aligned.zarr")
    speed("8 slices", "frame file `by_frame[t]`, chunks = frames, cold, vs zarr-python `a[t]`",
          "slice.frame.zarrfs", "slice.frame.zarr", tgt=1.3)
    speed("8 slices", "frame file `by_block[t]`, chunks 8×256×256, cold, vs zarr-python `a[t]`",
          "slice.frame_block.zarrfs", "slice.frame_block.zarr", tgt=1.3)
    speed("8 slices", "sub-block file `zstd[t0:t0+16,200:712,300:812]` (18 chunks cut), cold, vs zarr-python",
          "slice.block.zarrfs", "slice.block.zarr", tgt=1.3)
    speed("8 slices", "sub-block file `zstd[8:24,256:768,256:768]` (8 whole chunks), cold, vs zarr-python",
          "slice.block_aligned.zarrfs", "slice.block_aligned.zarr", tgt=1.3)
    speed("8 slices", "row band file `zstd[t0:t0+8,300:400,:]` (rows across 4 chunks), cold, vs zarr-python",
          "slice.rows.zarrfs", "slice.rows.zarr", tgt=1.3)
    speed("8 slices", "the array block by block: aligned sub-blocks `zstd[t:t+16,…]` (8 whole chunks each) "
          "one after another in one mount, cold, vs zarr-python in one process", "slice.blocks_series.zarrfs", "slice.blocks_series.zarr", tgt=1.3)

    # 4. random 4 KiB preads
    base = r.best_json("rand.pagecache", "iops")
    floor = r.best_json("rand.floor", "iops")
    for key, name, tgt in (
        ("rand.incache", "O_DIRECT preads, working set in the chunk cache, 1 reader", 50000),
        ("rand.outcache", "O_DIRECT preads, working set 8× the chunk cache", None),
        ("rand.buffered", "buffered preads, chunk cache warm, page cache dropped first", None),
        ("rand.floor", "FUSE round trip alone: O_DIRECT preads of `zstd.json` (no chunk work)", None),
    ):
        j = r.best_json(key, "iops")
        if j is None:
            continue
        if key == "rand.incache" and floor:
            b, bs = floor, "FUSE floor " + fmt_iops(floor)
        else:
            b, bs = base, "page cache " + fmt_iops(base)
        ratio = j["iops"] / b["iops"] if b else None
        add("4 random 4 KiB", name, fmt_iops(j), bs, ratio, "≥ 50k/s" if tgt else "—",
            None if tgt is None else j["iops"] >= tgt)

    # 5. parallel readers
    nb4 = nbytes

    def prate(k):
        t = r.min(k)
        return None if t is None or not nb4 else nb4 / t

    z, b = prate("par.cold.zarrfs"), prate("par.zarr")
    if z or b:
        ratio = z / b if z and b else None
        add("5 four readers", "4 parallel readers (quarters, zstd), cold mount vs 4 zarr-python processes",
            fmt_rate(z), fmt_rate(b), ratio, "—", None, med=("par.cold.zarrfs", "par.zarr", False))
    z, b = prate("par.warm.zarrfs"), prate("par.raw")
    if z or b:
        ratio = z / b if z and b else None
        add("5 four readers", "4 parallel readers, warm mount vs 4 readers of the uncompressed file (page cache)",
            fmt_rate(z), fmt_rate(b), ratio, "—", None, med=("par.warm.zarrfs", "par.raw", False))

    # 6. metadata
    nodes = p.get("tree_nodes", "?")
    z, b = r.min("meta.mount"), r.min("meta.zarr_list")
    if z is not None:
        ratio = b / z if z and b else None
        add("6 metadata", f"mount time ({nodes} nodes; daemon returns once mounted) vs zarr-python open + list all nodes",
            fmt_time(z), fmt_time(b), ratio, "—", None, med=("meta.mount", "meta.zarr_list", False))
    def walk_row(what, zkey, bkey):
        z, b = r.min(zkey), r.min(bkey)
        if z is None:
            return
        ratio = z / b if z and b else None
        add("6 metadata", f"{what}, vs the same over the store directory (time ratio)",
            fmt_time(z), fmt_time(b), ratio, "≤ 2.0", None if ratio is None else ratio <= 2.0,
            med=(zkey, bkey, True))

    for tool, key in (("`find`", "find"), ("`ls -lR`", "lslr")):
        for state, label in (("fresh", "first walk of a fresh mount"), ("warm", "second walk")):
            walk_row(f"{tool}, {label}", f"meta.{key}.{state}", f"meta.{key}.store")

    # 6. metadata at scale (metadata-only trees)
    sizes = sorted({int(k.split(".")[1]) for k in r.v if k.startswith("scale.") and k.split(".")[1].isdigit()})
    for n in sizes:
        z, b = r.min(f"scale.{n}.mount"), r.min(f"scale.{n}.read_all")
        if z is not None:
            ratio = z / b if z and b else None
            add("6 metadata", f"mount time, {n} nodes (metadata only), vs reading every metadata file once (time ratio)",
                fmt_time(z), fmt_time(b), ratio, "≤ 1.0", None if ratio is None else ratio <= 1.0,
                med=(f"scale.{n}.mount", f"scale.{n}.read_all", True))
        hwm = r.first(f"scale.{n}.hwm_kib")
        if hwm not in (None, ""):
            mib = float(hwm) / 1024
            add("6 metadata", f"daemon peak RSS after a full `find`, {n} nodes (MiB; KiB per node)",
                f"{mib:.0f} MiB", f"{float(hwm) / n:.2f} KiB/node", None, "≤ 256 MiB", mib <= 256)
        for tool, key in (("`find`", "find"), ("`ls -lR`", "lslr")):
            walk_row(f"{tool} of a fresh mount, {n} nodes", f"scale.{n}.{key}", f"scale.{n}.{key}.store")
    s3_sizes = sorted({int(k.split(".")[2]) for k in r.v if k.startswith("scale.s3.") and k.split(".")[2].isdigit()})
    for n in s3_sizes:
        first, walk = r.min(f"scale.s3.{n}.first_ls"), r.min(f"scale.s3.{n}.find")
        q1, q2 = r.first(f"scale.s3.{n}.first_ls.requests"), r.first(f"scale.s3.{n}.find.requests")
        if first is not None and walk is not None:
            add("6 metadata", f"S3 without consolidated metadata, {n} nodes: mount + first answered `ls` of the root "
                f"({q1} requests) vs mount + full `find` ({q2} requests), from the mount command's start",
                fmt_time(first), fmt_time(walk), first / walk if walk else None, "—", None,
                med=(f"scale.s3.{n}.first_ls", f"scale.s3.{n}.find", True))

    # 7. remote (loopback S3 server)
    z, b, loc = rate("remote.full.zstd.cold"), rate("remote.full.zstd.zarr"), rate("full.zstd.cold")
    if z or b:
        ratio = z / b if z and b else None
        add("7 remote", "cold `dd bs=1M` over S3 (loopback s3s-fs), zstd, vs zarr-python + obstore `a[:]`",
            fmt_rate(z), fmt_rate(b), ratio, "≥ 1.5", None if ratio is None else ratio >= 1.5,
            med=("remote.full.zstd.cold", "remote.full.zstd.zarr", False))
    if z and loc:
        add("7 remote", "cold `dd bs=1M` over S3, zstd, vs zarrfs's own cold read of the local store",
            fmt_rate(z), fmt_rate(loc), z / loc, "≥ 0.8", z / loc >= 0.8,
            med=("remote.full.zstd.cold", "full.zstd.cold", False))
    # The latency knob: the same cold read through the delay proxy, against zarr-python + obstore
    # (its default settings, and 64 requests in flight), a plain 64-in-flight fetch, and that
    # fetch decoding what it gets: the machine's limit for any reader that decodes.
    for delay in (0, 100, 200):
        key = "remote.full.zstd" if delay == 0 else f"remote.d{delay}.zstd"
        z = rate(f"{key}.cold")
        if z is None:
            continue
        where = "over S3" if delay == 0 else f"over S3 + {delay} ms per response (delay proxy)"
        for base, what, target in (
            ("zarr", "zarr-python + obstore (default settings)", 1.5),
            ("zarr64", "zarr-python + obstore with 64 requests in flight", None),
            ("fetch64", "a plain fetch of the chunk objects, 64 in flight, no decoding", 0.8),
            ("fetchdec64", "the same fetch decoding each object as it arrives (no FUSE)", None),
        ):
            b = rate(f"{key}.{base}")
            if b is None or (delay == 0 and base == "zarr"):
                continue
            ratio = z / b
            zs, bs = fmt_rate(z), fmt_rate(b)
            if base == "fetch64":
                # How much of the machine each side had to itself: the S3 server and the proxy
                # run on the same cores.
                zs, bs = zs + busy_note(f"{key}.cold"), bs + busy_note(f"{key}.fetch64")
            add("7 remote", f"cold `dd bs=1M` {where}, zstd, vs {what}",
                zs, bs, ratio,
                "—" if target is None or delay == 0 else f"≥ {target}",
                None if target is None or delay == 0 else ratio >= target,
                med=(f"{key}.cold", f"{key}.{base}", False))
        # The same volume as one shard, read by byte ranges.
        shard = "remote.full.shard" if delay == 0 else f"remote.d{delay}.shard"
        z, b = rate(f"{shard}.cold"), rate(f"{shard}.zarr")
        if z and b:
            add("7 remote", f"cold `dd bs=1M` {where}, the same volume stored as one shard (inner chunks "
                "8×256×256, zstd), vs zarr-python + obstore (default settings)", fmt_rate(z), fmt_rate(b),
                z / b, "—", None, med=(f"{shard}.cold", f"{shard}.zarr", False))
        # The same volume uncompressed: the latency hiding alone, with no decoding to share the cores.
        plain = "remote.full.plain" if delay == 0 else f"remote.d{delay}.plain"
        z, b = rate(f"{plain}.cold"), rate(f"{plain}.fetch64")
        if z and b:
            add("7 remote", f"cold `dd bs=1M` {where}, the same volume uncompressed, vs a plain fetch of "
                "its chunk objects, 64 in flight", fmt_rate(z), fmt_rate(b), z / b, "—", None,
                med=(f"{plain}.cold", f"{plain}.fetch64", False))
    # The same reads with the S3 server and the proxy on a core of their own and the readers on
    # the others (bench.sh remote_apart): a server elsewhere, not competing for the decoding's cores.
    for delay in (100, 200):
        key = f"remote.apart.d{delay}.zstd"
        z = rate(f"{key}.cold")
        if z is None:
            continue
        for base, what, target in (
            ("fetch64", "a plain fetch of the chunk objects, 64 in flight, no decoding", 0.8),
            ("zarr", "zarr-python + obstore (default settings)", 1.5),
        ):
            b = rate(f"{key}.{base}")
            if b is None:
                continue
            add("7 remote", f"cold `dd bs=1M` over S3 + {delay} ms per response, the S3 server and the "
                f"proxy on a core of their own (readers on the others), zstd, vs {what}",
                fmt_rate(z), fmt_rate(b), z / b, f"≥ {target}", z / b >= target,
                med=(f"{key}.cold", f"{key}.{base}", False))
    for kind, label in (("consolidated", "with consolidated metadata"), ("listed", "without (listing)")):
        t, base = r.min(f"remote.mount.{kind}"), r.min("meta.mount")
        if t is None:
            continue
        reqs = r.first(f"remote.mount.{kind}.requests")
        zs = fmt_time(t) + (f" ({reqs} requests)" if reqs not in (None, "") else "")
        add("7 remote", f"mount time over S3, {nodes} nodes {label}, vs mounting the local directory",
            zs, fmt_time(base), base / t if base else None, "—", None)
        for what, key in (("first `ls` of the root", "ls"), ("a full `find`", "find")):
            w = r.min(f"remote.{key}.{kind}")
            if w is not None:
                add("7 remote", f"mount time plus {what} over S3, {nodes} nodes {label}",
                    fmt_time(t + w), "—", None, "—", None)

    # 9. decode once (--cache-dir)
    page = rate("backing.raw.pagecache")
    move = r.min("limit.move")
    for codec in ("zstd", "blosc", "gzip"):
        for key, what in (("warm", "warm re-read"), ("remount", "a remount's first read")):
            z = rate(f"backing.{codec}.{key}")
            if z is None:
                continue
            ratio = z / page if page else None
            add("8 decode once", f"{what} with --cache-dir, {codec}, vs uncompressed file from page cache",
                fmt_rate(z), fmt_rate(page), ratio, "≥ 0.8", None if ratio is None else ratio >= 0.8,
                med=(f"backing.{codec}.{key}", "backing.raw.pagecache", False))
        on, off = rate(f"backing.{codec}.first_on"), rate(f"backing.{codec}.first_off")
        if on and off:
            add("8 decode once", f"first read, {codec}, --cache-dir on vs off (writing costs ≤ 10 %)",
                fmt_rate(on), fmt_rate(off), on / off, "≥ 0.91", on / off >= 1 / 1.1,
                med=(f"backing.{codec}.first_on", f"backing.{codec}.first_off", False))
        dec = r.min(f"limit.{codec}.decode")
        if off and dec and move:
            limit = nbytes / (dec + move)
            add("8 decode once", f"cold read, {codec}, share of the machine's limit "
                f"1/(1/decode + 1/move) (decode {fmt_rate(nbytes / dec)} on all cores, "
                f"move {fmt_rate(nbytes / move)} through FUSE)",
                fmt_rate(off), fmt_rate(limit), off / limit, "≥ 0.9", off / limit >= 0.9)
    opens, mode = r.first("backing.passthrough_opens"), r.first("backing.mode")
    if mode is not None:
        add("8 decode once", f"cache dir mode: {mode or '?'}; opens answered with passthrough",
            str(opens), "—", None, "—", None)

    # 10. Icechunk and kerchunk references
    nref = r.first("bytes.refs")
    for kind, name in (
        ("kerchunk", "cold `dd bs=1M` through kerchunk JSON references to a netCDF-4 file "
                     "(zlib + shuffle), vs zarr-python + fsspec reading the same references `a[:]`"),
        ("icechunk", "cold `dd bs=1M` of an Icechunk array (zstd), vs zarr-python + icechunk `a[:]`"),
    ):
        z, b = rate(f"refs.{kind}.zarrfs", nref), rate(f"refs.{kind}.zarr", nref)
        if z is None and b is None:
            continue
        ratio = z / b if z and b else None
        add("10 references", name, fmt_rate(z), fmt_rate(b), ratio, "—", None,
            med=(f"refs.{kind}.zarrfs", f"refs.{kind}.zarr", False))

    # peak RSS
    hwm, cache = r.first("rss.hwm_kib"), r.first("rss.cache_bytes")
    if hwm is not None and cache:
        hwm_b = hwm * 1024
        add("RSS", f"daemon peak RSS (VmHWM) reading {p.get('rss_read_mib', '?')} MiB in parallel, vs --cache-size",
            f"{hwm_b / MIB:.0f} MiB", f"{cache / MIB:.0f} MiB", hwm_b / cache, "≤ cache + 100 MiB",
            hwm_b <= cache + 100 * MIB)
    return out


def machine(repo, p):
    info = {}
    model = re.search(r"Model name:\s*(.*)", sh("LC_ALL=C lscpu"))
    info["cpu"] = model.group(1).strip() if model else platform.processor()
    info["cores"] = str(os.cpu_count())
    try:
        with open("/proc/meminfo") as f:
            kb = int(re.search(r"MemTotal:\s*(\d+)", f.read()).group(1))
        info["ram"] = f"{kb / (1 << 20):.1f} GiB"
    except Exception:
        info["ram"] = "?"
    info["kernel"] = platform.release()
    osr = re.search(r'PRETTY_NAME="?([^"\n]*)', sh("cat /etc/os-release"))
    info["os"] = osr.group(1) if osr else "?"
    hyp = re.search(r"Hypervisor vendor:\s*(.*)", sh("LC_ALL=C lscpu"))
    virt = [f"{hyp.group(1).strip()} guest" if hyp else "no hypervisor"]
    container = sh("systemd-detect-virt --container 2>/dev/null")
    if container and container != "none":
        virt.append(f"in a {container} container")
    info["virtualization"] = ", ".join(virt)
    info["date"] = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    if p.get("commit"):
        info["zarrfs commit"] = p["commit"]
    else:
        commit = sh("git rev-parse --short=12 HEAD", cwd=repo) or "?"
        if sh("git status --porcelain --untracked-files=no -- src Cargo.toml Cargo.lock", cwd=repo):
            commit += " (with uncommitted changes to src/)"
        if p.get("binary_given") == "1":
            commit += " (repository HEAD; the binary was given with ZARRFS_BIN)"
        info["zarrfs commit"] = commit
    info["zarrfs binary"] = p.get("binary", "?")
    info["rustc"] = sh("rustc --version") or "?"
    info["python"] = platform.python_version()
    for mod in ("zarr", "numcodecs", "numpy"):
        try:
            info[mod] = __import__(mod).__version__
        except Exception:
            info[mod] = "?"
    return info


def fmt_ratio(ratio, rm):
    if ratio is None:
        return "n/a"
    return f"{ratio:.2f}" + ("" if rm is None else f" (med {rm:.2f})")


def table_md(rs):
    lines = ["| workload | zarrfs | baseline | ratio | target | met? |", "|---|---|---|---|---|---|"]
    for sec, name, z, b, ratio, tgt, met, rm in rs:
        rt = fmt_ratio(ratio, rm)
        m = "—" if met is None else ("yes" if met else "**NO**")
        lines.append(f"| {sec}: {name} | {z} | {b} | {rt} | {tgt} | {m} |")
    return "\n".join(lines)


def table_text(rs):
    hdr = ("workload", "zarrfs", "baseline", "ratio", "target", "met?")
    body = []
    for sec, name, z, b, ratio, tgt, met, rm in rs:
        name = re.sub(r"`", "", f"{sec}: {name}")
        body.append((name, z, b, fmt_ratio(ratio, rm), tgt,
                     "-" if met is None else ("yes" if met else "NO")))
    w = [max(len(r[i]) for r in [hdr] + body) for i in range(6)]
    w[0] = min(w[0], 70)
    out = []
    for r in [hdr] + body:
        name = r[0] if len(r[0]) <= w[0] else r[0][: w[0] - 1] + "…"
        out.append("  ".join([name.ljust(w[0])] + [r[i].ljust(w[i]) for i in range(1, 6)]).rstrip())
        if r is hdr:
            out.append("  ".join("-" * x for x in w))
    return "\n".join(out)


def raw_section(r):
    lines = []
    for k in sorted(r.v):
        vs = r.v[k]
        parts = []
        for v in vs:
            if isinstance(v, float):
                parts.append(f"{v:.6g}")
            elif isinstance(v, dict):
                parts.append(json.dumps(v, separators=(",", ":")))
            else:
                parts.append(str(v))
        lines.append(f"{k}: {', '.join(parts)}")
    return "\n".join(lines)


NOTES = """\
## Reading the numbers

* Warm reads come from the kernel page cache and never reach the daemon. ext4, where `raw.bin`
  lives, caches it in large folios; the kernel caches FUSE files in 4 KiB pages (the
  `filemap:mm_filemap_add_to_page_cache` tracepoint shows order 0 for every zarrfs page and orders
  up to 9 for `raw.bin`), as does tmpfs here (huge pages off). A warm read of a zarrfs file running
  at about the tmpfs row's speed means the remaining gap to the ext4 baseline is the kernel's
  per-page cost, not zarrfs's.
* `a[:, :, x]` through `numpy.memmap` touches every 4 KiB page of the file: a page holds one row of
  {x} elements, which crosses {xchunks} chunks of width 256, so a page-granular reader makes zarrfs
  decode every chunk of the array, {xchunks}× the chunks zarr-python decodes for the same slice. The
  kernel's readahead around each page fault (the mount's `read_ahead_kb`: zarrfs sets 1 MiB,
  `--read-ahead 128K` makes it smaller) does the same to the pixel series
  `a[:, y, x]`.
* A cold read is bounded by CPU on 2 cores: decoding (zstd 1.05 GB/s per core, the same libzstd
  as numcodecs) plus moving the bytes through FUSE (about 2 GB/s with nothing to decode: our copy
  into the reply, the kernel's copy into fresh page-cache pages, the reader's copy out). For zstd
  that is about 0.45 CPU-seconds per 256 MiB, at best 1.2 GB/s with both cores busy all the time.
  Memory touched for the first time is also expensive on this VM (1.5–2 GB/s with 4 KiB pages,
  0.5 GB/s with huge pages); zarrfs drops chunks behind a sequential reader and reuses their
  buffers so that a stream touches little fresh memory.
* zarr-python's own times vary a lot from run to run on a shared machine (it decodes with a thread
  pool); the best of the repetitions is used on both sides.
* Figures behind the daemon's memory and decoder choices, taken on this VM while building them
  (not by `scripts/bench.sh`): a fresh 4 MiB buffer costs 1,024 page faults with 4 KiB pages
  (1.3 ms to touch) and two with huge pages (0.07 ms), against 3 ms to decode a 4 MiB frame,
  hence the allocator of 2 MiB-aligned blocks (`huge_pages`); on a VM whose balloon reports free
  memory to the host, getting a freed huge page back costs 4–10 ms per 4 MiB, hence the memory it
  keeps ready; a fresh 1.6 MB fetch buffer costs 400 page faults, about as long as decoding the
  chunk it holds, hence reused fetch buffers; libdeflate's one-call inflate decodes a whole gzip or
  zlib buffer about 1.5× faster than a streaming inflater, so a read that needs only the
  first part of such a chunk decodes step by step only when that saves at least a third of it.
"""

METHOD = """\
## How it was measured

Everything above comes from one run of `scripts/bench.sh` (datasets written by zarr-python 3 under
`$BENCH_DIR`, default `/tmp/zarrfs-bench`, and reused by later runs). Each number is the best of
{reps} repetitions (random reads: the repetition with the most reads per second); all repetitions
are listed under "Raw measurements". The machine is shared, so only ratios between numbers of this
run mean much.

* **Data**: noisy float32 (smooth field + Gaussian noise, quantized to 1/32), shape {shape},
  chunks 8×256×256, Zarr v3; the same values stored three times: zstd level 3, blosc lz4 clevel 5
  with byte shuffle, gzip level 5. {sizes}
  The frame stack holds the first {stack_frames} frames, chunked (1, 1024, 1024) and (8, 256, 256).
* **Cold, zarrfs**: a fresh mount (new daemon, default `--cache-size 1G`, empty chunk cache) after
  `echo 3 > /proc/sys/vm/drop_caches`; the store's chunk files are then read back into the page cache,
  so zarrfs and zarr-python both start from compressed bytes in memory and the comparison is about
  decoding and data movement, not the disk. **Cold, zarr-python**: a fresh Python process with the
  store's files in the page cache; only `zarr.open_array(...)` plus the read is timed (not interpreter
  start-up or imports), and before it the process reads one element of the array, so zarr-python's
  one-time set-up (event loop, thread pool, codec objects) is not charged to it. zarr-python uses its
  default configuration (its own thread pool for decoding).
* **Warm**: a second `dd` through the same mount (the kernel page cache, kept across opens).
  **Page-cache baseline**: `dd bs=1M` of `raw.bin`, an uncompressed file with the same bytes, after
  reading it once (what `cat` does, with the same request size as the zarrfs reads). The tmpfs row
  reads a copy of `raw.bin` in `/dev/shm`, whose page cache is made of 4 KiB pages like a FUSE file's
  (ext4 files get large folios), to separate the kernel's share of a warm read from zarrfs's.
  "Daemon N cores" is the daemon's CPU time (user + system, from `/proc/PID/stat`) over the read's
  wall time.
* **Frames and columns** are read in a fresh Python process: a frame with `np.fromfile(offset=...)`
  (one contiguous read), columns with `np.array(np.memmap(...)[sel])`; zarr-python with `a[sel]`.
  Both sides' values are compared (float64 sums). Each side first reads one element outside the
  timing (zarr-python of the array, the file side the file's first element, on its fresh mount),
  so neither is charged its one-time set-up.
* **Random reads**: a C driver (compiled at bench time) doing 4 KiB-aligned `pread`s at uniformly
  random offsets over the whole zstd array and timing each call; one reader. `O_DIRECT` makes every
  read reach the daemon (without it the page cache answers after the first touch). "In the chunk
  cache": the array was read once with `O_DIRECT` (a page-cached sequential reader would leave
  its chunks to the page cache) through a mount with a cache larger than the array; its baseline
  is the FUSE floor, the same driver reading the first 4 KiB of `zstd.json` (answered from memory,
  no chunk work), so the ratio is the share of the floor zarrfs reaches. "8× the chunk cache":
  `--cache-size` = 1/8 of the array, so most reads decode a chunk. "Buffered": plain `pread`s after
  dropping the page cache, the chunk cache warm (kernel readahead applies). The other rows' baseline
  is buffered `pread`s of `raw.bin` from the page cache.
* **Parallel readers**: 4 `dd bs=1M` processes, each a quarter of the zstd array, on a fresh mount
  (cold) and again (warm); against 4 zarr-python processes each reading a quarter (started together
  after their imports) and 4 `dd` readers of `raw.bin`. Throughput = total bytes / wall time.
* **Metadata**: {tree}. Mount time is how long `zarrfs STORE MNT` takes to return (it returns once the
  mount answers). `find MNT` and `ls -lR MNT` on a fresh mount (no kernel dentries yet) and again,
  vs the same command over the store directory (warm dentry cache). The walks see {mount_entries}
  entries on the mount and {store_entries} in the store.
* **Remote**: s3s-fs 0.14 on 127.0.0.1 serves hard links to the same store files (its objects are
  plain files, kept in the page cache as for the local cold reads). zarrfs mounts `s3://bench/...`
  with `--endpoint`; zarr-python 3 reads the same bucket through `zarr.storage.ObjectStore` on
  obstore's `S3Store` (default settings), timed as in the full read. **Latency**: the same reads
  again through `scripts/delay_proxy.py`, a TCP proxy in front of s3s-fs that holds every byte of
  every response 100 or 200 ms before passing it on, at the pace it came (bandwidth kept; requests
  pass at once), as over a distant link (`tc netem` is not available on the VM). Each delay is
  measured against zarr-python + obstore with its default settings and with
  `async.concurrency` 64, and against the network-side limit: `bench_read.py fetch`, obstore
  fetching every chunk object of the array whole, 64 requests in flight, without decoding (the
  listing before it is not timed). "Machine N cores busy" on those rows is the CPU time of the
  whole machine (`/proc/stat`) over the read's wall time: the S3 server, the proxy and the reader
  share the cores, so a side that finds them busy cannot go faster by hiding latency better.
  Mount times are for the tree
  above, once as written (found by listing, measured once: one request per node) and once after
  `zarr.consolidate_metadata`; the request counts come from the mount's progress log line.
* **Slices**: the selection files of zarrfs (`A[SEL]`, read whole with `np.fromfile` of the
  file `A[SEL]` in a fresh Python process on a fresh mount) against zarr-python's `a[SEL]`, cold,
  with the same warm-up and value check as the frames and columns.
* **Decode once**: per codec, a cold read (as above) with and without `--cache-dir` (a fresh,
  empty directory; the read writes the backing file), a second `dd` through the same mount (the
  array is now complete: the open is answered with FUSE passthrough where the kernel allows it),
  and the first `dd` of a remount (served from the backing file). The limit of a cold read: the
  same chunk files decoded by numcodecs on all cores with no FUSE (`bench_read.py decode`), and a
  cold read through FUSE of an uncompressed copy of the array (nothing to decode);
  limit = bytes / (decode time + move time).
* **Peak RSS**: the daemon run with `-f --cache-size {rss_cache}`, reading every array of the array
  store at once ({rss_read_mib} MiB of decoded data) plus out-of-cache random reads; VmHWM from
  `/proc/PID/status`.
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--out")
    ap.add_argument("--repo", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--param", action="append", default=[])
    args = ap.parse_args()
    p = dict(kv.split("=", 1) for kv in args.param)
    r = R(load(args.results))
    rs = rows(r, p)
    print(table_text(rs))
    errors = [f"{k}: {v}" for k, vs in r.v.items() if k.startswith("error.") for v in vs]
    checks = [f"{k}: {v}" for k, vs in r.v.items() if k.startswith("check.") for v in vs if v != "ok"]
    for e in errors + checks:
        print(f"! {e}")
    if not args.out:
        return 0
    m = machine(args.repo, p)
    sizes = p.get("sizes", "")
    md = [
        "# zarrfs benchmarks",
        "",
        f"Produced by `scripts/bench.sh{' --quick' if p.get('quick') == '1' else ''}` "
        f"on {m['date']}; rerun it to refresh this file.",
        "",
        "## Machine",
        "",
        "| | |",
        "|---|---|",
    ]
    md += [f"| {k} | {v} |" for k, v in m.items()]
    md += [
        "",
        "## Results",
        "",
        "Ratios compare numbers measured in this run. For throughput and reads per second the ratio is "
        "zarrfs / baseline (higher is better); for frames, columns and mount time it is baseline time / "
        "zarrfs time (speed-up, higher is better); for the metadata walks it is zarrfs time / baseline "
        "time (lower is better); for RSS it is VmHWM / cache size. Ratios use the best repetition of each "
        "side; \"med\" is the same ratio computed from the medians, a hint of how noisy the pair was.",
        "",
        table_md(rs),
        "",
    ]
    if errors or checks:
        md += ["Problems seen during the run:", ""] + [f"* {e}" for e in errors + checks] + [""]
    try:
        xdim = int(re.search(r"\((\d+), (\d+), (\d+)\)", p.get("shape", "")).group(3))
    except Exception:
        xdim = 1024
    md += [NOTES.format(x=xdim, xchunks=max(1, xdim // 256))]
    md += [
        METHOD.format(
            reps=p.get("reps", "?"),
            shape=p.get("shape", "?"),
            sizes=sizes,
            stack_frames=p.get("stack_frames", "?"),
            tree=p.get("tree", "?"),
            mount_entries=r.first("meta.mount_entries") or "?",
            store_entries=r.first("meta.store_entries") or "?",
            rss_cache=p.get("rss_cache", "?"),
            rss_read_mib=p.get("rss_read_mib", "?"),
        ),
        "## Raw measurements",
        "",
        "Seconds unless the key says otherwise; one value per repetition.",
        "",
        "```",
        raw_section(r),
        "```",
        "",
    ]
    with open(args.out, "w") as f:
        f.write("\n".join(md))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
