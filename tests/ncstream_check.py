"""Decodes an ncstream with siphon (an independent reader) and compares every variable's values
with the expected arrays.

usage: ncstream_check.py CASES_JSON
CASES_JSON lists {"name", "stream": file, "expected": {variable path in the stream ("g/x"): .npy
file of its values}}. Prints every mismatch and exits 1 on any; exits 3 when siphon is missing.
"""
import json
import re
import sys

try:
    import numpy as np
    from siphon.cdmr import ncStream_pb2 as stream
    from siphon.cdmr.ncstream import (MAGIC_DATA, MAGIC_HEADER, read_magic,
                                      read_ncstream_data, read_proto_object)
except ImportError as e:
    print(f"siphon is not installed: {e}")
    sys.exit(3)

MAGIC_START = b"CDFS"
MAGIC_END = b"\xed\xed\xde\xde"


def check(path, expected):
    problems = []
    got = {}
    with open(path, "rb") as f:
        if read_magic(f) != MAGIC_START:
            problems.append("stream does not start with CDFS")
        if read_magic(f) != MAGIC_HEADER:
            problems.append("no header message after CDFS")
        header = read_proto_object(f, stream.Header)
        if header.version != 1:
            problems.append(f"header version {header.version}")
        while True:
            magic = read_magic(f)
            if magic == MAGIC_END:
                if f.read(1):
                    problems.append("bytes after MAGIC_END")
                break
            if magic != MAGIC_DATA:
                problems.append(f"unexpected magic {magic!r}")
                break
            start = f.tell()
            data = read_proto_object(f, stream.Data)
            if not data.bigend or data.version != 3:
                problems.append(f"{data.varName}: bigend={data.bigend} version={data.version}")
            f.seek(start)
            name = re.sub(r"\\(.)", r"\1", data.varName)
            got[name] = read_ncstream_data(f)
    declared = {}
    comments = []

    def walk(group, prefix):
        comments.extend(a.data.decode() for a in group.atts if a.name == "comment")
        for v in group.vars:
            declared[prefix + v.name] = v.dataType
        for g in group.groups:
            walk(g, prefix + g.name + "/")

    walk(header.root, "")
    for name, npy in expected.items():
        want = np.load(npy)
        if want.dtype.kind == "U" or (want.dtype.kind == "S" and want.dtype.itemsize > 1):
            # Strings are declared in the header; their values are not streamed yet.
            if declared.get(name) != stream.STRING:
                problems.append(f"{name}: not declared as a string variable")
            continue
        if name not in declared:
            left_out = f"variable {name.rsplit('/', 1)[-1]} left out"
            if not any(c.startswith(left_out) for c in comments):
                problems.append(f"{name}: neither declared nor named as left out")
            continue
        if name not in got:
            problems.append(f"{name}: no data message")
            continue
        have = np.asarray(got[name])
        if want.shape == () and have.shape == (1,):
            # A scalar's section has no ranges; siphon then leaves the values flat.
            have = have.reshape(())
        if have.shape != want.shape:
            problems.append(f"{name}: shape {have.shape}, expected {want.shape}")
            continue
        if have.astype(want.dtype).tobytes() != want.tobytes():
            problems.append(f"{name}: values differ: {have.ravel()[:8]} vs {want.ravel()[:8]}")
    for name in sorted(set(got) - set(expected)):
        problems.append(f"{name}: data message for a variable not expected")
    return problems


def main(cases_json):
    failed = False
    for case in json.load(open(cases_json)):
        problems = check(case["stream"], case["expected"])
        for p in problems:
            print(f"{case['name']}: {p}")
        failed = failed or bool(problems)
        print(f"{case['name']}: {len(case['expected'])} variables checked")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main(sys.argv[1])
