"""Decodes an ncstream with siphon (an independent reader) and compares every variable's values
with the expected arrays.

usage: ncstream_check.py CASES_JSON
CASES_JSON lists {"name", "stream": file, "expected": {variable path in the stream ("g/x"): .npy
file of its values, or .txt file of a variable-length array's elements (one a line, newline and
backslash escaped)}}. String variables arrive as netCDF-Java writes them (an element count, then
each element's length and UTF-8 bytes) and are compared element by element. Prints every mismatch and exits 1 on any; exits 3 when siphon is missing.
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


def unescape(line):
    return re.sub(rb"\\(.)", lambda m: b"\n" if m.group(1) == b"n" else m.group(1), line)


def load_strings(file):
    """The expected elements of a string variable as text, or None for other variables."""
    if file.endswith(".txt"):
        lines = open(file, "rb").read().split(b"\n")[:-1]
        return [unescape(x).decode("utf-8", errors="ignore") for x in lines]
    want = np.load(file)
    if want.dtype.kind == "U":
        return [str(x) for x in want.ravel()]
    if want.dtype.kind == "S" and want.dtype.itemsize > 1:
        return [x.decode("utf-8", errors="ignore") for x in want.ravel()]
    return None


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
        # One `comment` per group, a note per line.
        comments.extend(line for a in group.atts if a.name == "comment"
                        for line in a.data.decode().split("\n"))
        for v in group.vars:
            declared[prefix + v.name] = v.dataType
        for g in group.groups:
            walk(g, prefix + g.name + "/")

    walk(header.root, "")
    for name, file in expected.items():
        want = load_strings(file)
        if want is not None:
            if declared.get(name) != stream.STRING:
                problems.append(f"{name}: not declared as a string variable")
            elif name not in got:
                problems.append(f"{name}: no data message")
            else:
                have = [str(x) for x in np.asarray(got[name]).ravel()]
                if have != want:
                    at = next((i for i, (a, b) in enumerate(zip(have, want)) if a != b),
                              min(len(have), len(want)))
                    problems.append(f"{name}: strings differ from element {at} "
                                    f"({len(have)} vs {len(want)} elements): "
                                    f"{have[at:at + 3]} vs {want[at:at + 3]}")
            continue
        want = np.load(file)
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
