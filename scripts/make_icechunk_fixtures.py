"""Writes the Icechunk fixtures under tests/fixtures/icechunk/ and their manifest.

Run with Python 3.12 and: icechunk==2.3.* zarr==3.* numpy.

Two repositories written by icechunk 2.3, one in format spec v2 (the default) and one in spec v1:
several commits on `main`, a tag `v1` on the first, a branch `dev` with a commit of its own.
Arrays hold native chunks (objects under chunks/), inline chunks (smaller than icechunk's inline
threshold) and missing chunks; the v2 repository also has an array of virtual chunks that point
at s3://zarrfs-icechunk/raw.bin (the remote test serves the repository and raw.bin from one
bucket). Both repositories configure a virtual chunk container named `bucket` (url_prefix
s3://zarrfs-icechunk/), kept in the `repo` file (v2) or config.yaml (v1), and hold `sub/relative`,
whose rows 0-4 are relative `vcc://bucket/raw.bin` chunks and row 5 names a container `nosuch`
the repository does not define. A third repository, `repo_many`, holds twenty small arrays, each in a manifest of its own.
Expected values: zarr-python reading the repository through icechunk, at each version;
for the virtual array, numpy reading raw.bin (what the references name).
"""

import json
import os
import shutil
import sys
from importlib.metadata import version

import icechunk as ic
import numpy as np
import zarr

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "icechunk")
BUCKET = "zarrfs-icechunk"


def write_repo(path, spec_version, virtual):
    config = ic.RepositoryConfig.default()
    config.set_virtual_chunk_container(
        ic.VirtualChunkContainer(f"s3://{BUCKET}/", ic.s3_store(region="us-east-1"), name="bucket"))
    repo = ic.Repository.create(ic.local_filesystem_storage(path), config=config,
                                spec_version=spec_version)
    s = repo.writable_session("main")
    root = zarr.group(s.store, attributes={"title": "zarrfs icechunk fixture"})
    rng = np.random.default_rng(spec_version)
    temp = root.create_array("temp", shape=(8, 64), chunks=(4, 64), dtype="f4", fill_value=-1.0,
                             dimension_names=["y", "x"])
    temp[:4] = rng.normal(280, 5, (4, 64)).astype("f4")  # rows 4..8: a missing chunk
    small = root.create_array("small", shape=(10,), chunks=(5,), dtype="i2", fill_value=0)
    small[:] = np.arange(10, dtype="i2") * 3  # 10 bytes a chunk: inline
    first = s.commit("first: temp rows 0-3, small")
    repo.create_tag("v1", first)

    s = repo.writable_session("main")
    root = zarr.open_group(s.store, mode="r+")
    root["temp"][4:, :32] = rng.normal(290, 5, (4, 32)).astype("f4")
    sub = root.create_group("sub", attributes={"kind": "nested"})
    counts = sub.create_array("counts", shape=(3, 300), chunks=(1, 300), dtype="u2", fill_value=7)
    counts[1] = np.arange(300, dtype="u2")
    if virtual:
        v = sub.create_array("virtual", shape=(6, 10), chunks=(1, 10), dtype="<u4", fill_value=0,
                             compressors=None)
        for i in range(6):
            s.store.set_virtual_ref(f"sub/virtual/c/{i}/0", f"s3://{BUCKET}/raw.bin",
                                    offset=i * 40, length=40, validate_container=False)
    rel = sub.create_array("relative", shape=(6, 10), chunks=(1, 10), dtype="<u4", fill_value=0,
                           compressors=None)
    for i in range(5):
        s.store.set_virtual_ref(f"sub/relative/c/{i}/0", "vcc://bucket/raw.bin",
                                offset=i * 40, length=40, validate_container=False)
    s.store.set_virtual_ref("sub/relative/c/5/0", "vcc://nosuch/raw.bin",
                            offset=200, length=40, validate_container=False)
    s.commit("second: temp rows 4-7 left half, sub/counts")

    s = repo.writable_session("main")
    root = zarr.open_group(s.store, mode="r+")
    root.attrs["title"] = "zarrfs icechunk fixture, third commit"
    root["small"][0] = -1
    s.commit("third: small[0] = -1")

    repo.create_branch("dev", first)
    s = repo.writable_session("dev")
    root = zarr.open_group(s.store, mode="r+")
    root["temp"][:4, :8] = 0.5
    s.commit("dev: temp[:4, :8] = 0.5")
    return repo


def write_many(path):
    """Twenty small arrays in one commit: a repository of twenty manifests (one an array),
    more than a reader keeping a fixed number of them would hold."""
    repo = ic.Repository.create(ic.local_filesystem_storage(path))
    s = repo.writable_session("main")
    root = zarr.group(s.store)
    for i in range(20):
        a = root.create_array(f"a{i:02d}", shape=(4,), chunks=(2,), dtype="i4", fill_value=0)
        a[:] = np.arange(4, dtype="i4") + 100 * i
    s.commit("twenty arrays")
    return repo


def little(a):
    a = np.asarray(a)
    return np.ascontiguousarray(a.astype(a.dtype.newbyteorder("<")))


def case(repo, name, store, ref, options, raw):
    if ref in ("main", "dev"):
        session = repo.readonly_session(branch=ref)
    elif ref == "v1":
        session = repo.readonly_session(tag=ref)
    else:
        session = repo.readonly_session(snapshot_id=ref)
    g = zarr.open_group(session.store, mode="r")
    nodes = []
    for path, node in sorted([("", g)] + list(g.members(max_depth=None))):
        if isinstance(node, zarr.Group):
            nodes.append({"path": path, "type": "group",
                          "json": {"zarr_format": 3, "node_type": "group",
                                   "attributes": dict(node.attrs)}})
            continue
        if path.endswith(("virtual", "relative")):
            data = raw
        else:
            data = little(node[...])
        npy = f"expected/{name}/{path}.npy"
        os.makedirs(os.path.dirname(os.path.join(OUT, npy)), exist_ok=True)
        np.save(os.path.join(OUT, npy), data)
        nodes.append({"path": path, "type": "array", "npy": npy,
                      "json": {"shape": list(node.shape), "zarr_format": 3, "node_type": "array"}})
        if path.endswith(("virtual", "relative")):
            # Its target is in a bucket, not beside the repository: EIO unless served and
            # allowed (tests/icechunk.rs serves both from one bucket).
            nodes[-1].update({"expect": "partial_eio", "ok_range": [0, 0]})
    entry = {"name": name, "store": store, "nodes": nodes, "snapshot": session.snapshot_id}
    if options:
        entry["options"] = options
    return entry


def main():
    if os.path.exists(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    raw = (np.arange(60, dtype="<u4") * 7919).reshape(6, 10)
    raw.tofile(os.path.join(OUT, "raw.bin"))
    stores, local = [], []
    for spec, dirname in ((2, "repo_v2"), (1, "repo_v1")):
        repo = write_repo(os.path.join(OUT, dirname), spec, virtual=(spec == 2))
        snapshots = [s.id for s in repo.ancestry(branch="main")]
        second = snapshots[1]
        for name, ref, options in (
            ("main", "main", None),
            ("tag", "v1", ["--ref", "v1"]),
            ("dev", "dev", ["--ref", "dev"]),
            ("snapshot", second, ["--ref", second]),
        ):
            entry = case(repo, f"{dirname}_{name}", dirname, ref, options, raw)
            entry["message"] = [s.message for s in repo.ancestry(snapshot_id=entry["snapshot"])][0]
            stores.append(entry)
    repo = write_many(os.path.join(OUT, "repo_many"))
    stores.append(case(repo, "repo_many_main", "repo_many", "main", None, raw))
    stores[-1]["message"] = "twenty arrays"
    manifest = {
        "generator": "scripts/make_icechunk_fixtures.py",
        "versions": {p: version(p) for p in ("icechunk", "zarr", "numpy")},
        "python": sys.version.split()[0],
        "stores": stores,
    }
    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
