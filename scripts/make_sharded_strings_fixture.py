#!/usr/bin/env python3
"""Writes tests/fixtures/sharded_strings/ (deleted and rewritten): variable-length strings and
bytes in shards, as zarr-python 3.4 writes them, with absent inner chunks and shards read as a
non-empty fill value, and manifest.json (the format of tests/fixtures/manifest.json) with the
expected served bytes from zarr-python's own reader (.txt: one escaped element per line; .npy:
fixed width).

Needs Python >= 3.12: python -m venv /tmp/venv-z34 && /tmp/venv-z34/bin/pip install
'zarr==3.4.*' numcodecs numpy; then, from the repository root:
/tmp/venv-z34/bin/python scripts/make_sharded_strings_fixture.py
"""
import json
import shutil
from importlib.metadata import version
from pathlib import Path

import numpy as np
import zarr
from zarr.dtype import VariableLengthBytes, VariableLengthUTF8

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "sharded_strings"


def escape_element(b):
    return b.replace(b"\\", b"\\\\").replace(b"\n", b"\\n") + b"\n"


def expected(values, rel):
    flat = list(np.asarray(values, dtype=object).reshape(-1))
    is_bytes = all(isinstance(v, bytes) for v in flat)
    raw = [v if is_bytes else v.encode("utf-8") for v in flat]
    txt = OUT / "expected" / (rel + ".txt")
    txt.parent.mkdir(parents=True, exist_ok=True)
    txt.write_bytes(b"".join(escape_element(b) for b in raw))
    width = max([len(v) for v in flat] + [1])
    arr = np.array(flat, dtype=f"|S{width}" if is_bytes else f"<U{width}")
    np.save(OUT / "expected" / (rel + ".npy"), arr.reshape(np.shape(values)))
    return f"expected/{rel}.txt", f"expected/{rel}.npy"


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    store = OUT / "strings.zarr"
    g = zarr.open_group(str(store), mode="w", zarr_format=3)
    s = g.create_array("names", shape=(10,), chunks=(2,), shards=(4,), dtype=VariableLengthUTF8(),
                       fill_value="NA")
    s[0:3] = np.array(["x", "yy", "z\nw\\"], dtype=object)
    s[8] = "é last"
    b = g.create_array("blobs", shape=(3, 4), chunks=(1, 2), shards=(1, 4),
                       dtype=VariableLengthBytes(), fill_value=b"--")
    b[0, 1:3] = np.array([b"\x00\x01", b"ab"], dtype=object)
    b[2, 3:4] = np.array([b"z"], dtype=object)
    nodes = [{"path": "", "type": "group"}]
    for path in ["blobs", "names"]:
        values = zarr.open_array(store=str(store), path=path, mode="r")[...]
        txt, npy = expected(values, f"strings/{path}")
        meta = json.loads((store / path / "zarr.json").read_text())
        nodes.append({"path": path, "type": "array", "text": txt, "npy": npy,
                      "json": {"shape": meta["shape"], "data_type": meta["data_type"]}})
    manifest = {"generator": "scripts/make_sharded_strings_fixture.py",
                "versions": {"zarr": version("zarr"), "numcodecs": version("numcodecs"),
                             "numpy": np.__version__},
                "stores": [{"name": "sharded_strings", "store": "strings.zarr",
                            "writer": f"zarr-python {version('zarr')}", "nodes": nodes}]}
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
