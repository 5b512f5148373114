#!/usr/bin/env python3
"""Writes tests/fixtures/netcdf/netcdf_c_4.10/*.cdl: `ncdump -h` of pure Zarr stores as
netCDF-c 4.10 reads them (the netCDF-c that netCDF4-python 1.7.5 bundles; Debian's ncdump is
4.9.0, which names anonymous dimensions `_zdim_<len>` and types attributes differently).

netCDF-c reads each store (`file://STORE#mode=zarr,file`) through netCDF4-python; this script
prints what it read in ncdump's CDL (the formatting rules of ncdump -h: `%#.15g` doubles with
trailing zeros trimmed, type suffixes, C escapes). Read by tests/netcdf_cdl.rs.

Also writes the store dims_v2.zarr there (zarr-python 3.4, Zarr v2): dimensions named alike
in sibling groups and the root, unnamed dimensions, attributes of each JSON kind.

Needs Python >= 3.12 with netCDF4==1.7.5 and zarr 3.4; from the repository root:
/tmp/venv-types/bin/python scripts/make_netcdf_cdl.py
"""
import math
import os
import sys

import netCDF4
import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests",
                    "fixtures")
OUT = os.path.join(ROOT, "netcdf", "netcdf_c_4.10")
# Pure Zarr stores netCDF-c reads, as paths under tests/fixtures.
STORES = ["dialects/consolidated_v2_zarr2.zarr", "dialects/consolidated_v2_zarr3.zarr",
          "v2_codecs.zarr"]

TYPES = {"i1": ("byte", "b"), "u1": ("ubyte", "UB"), "i2": ("short", "s"),
         "u2": ("ushort", "US"), "i4": ("int", ""), "u4": ("uint", "U"),
         "i8": ("int64", "LL"), "u8": ("uint64", "ULL"), "f4": ("float", "f"),
         "f8": ("double", ""), "S1": ("char", "")}


def escape_name(name):
    out = ""
    for i, c in enumerate(name):
        if c in " !\"#$%&'()*,:;<=>?[\\]^`{|}~" or (i == 0 and c.isdigit()):
            out += "\\"
        out += c
    return out


def quote(s):
    out = '"'
    for i, c in enumerate(s):
        if c == "\n":
            out += "\\n" + ('",\n\t\t\t"' if i + 1 < len(s) else "")
        elif c in "\t\r\b\f\v\\\"\0":
            out += {"\t": "\\t", "\r": "\\r", "\b": "\\b", "\f": "\\f", "\v": "\\v",
                    "\\": "\\\\", '"': '\\"', "\0": "\\0"}[c]
        elif ord(c) < 0x20:
            out += "\\%03o" % ord(c)
        else:
            out += c
    return out + '"'


def format_float(v, digits, suffix):
    if math.isnan(v):
        return "NaN" + suffix
    if math.isinf(v):
        return ("-" if v < 0 else "") + "Infinity" + suffix
    text = "%#.*g" % (digits, v)
    if "e" in text:
        m, e = text.split("e")
        text = m.rstrip("0") + "e" + e
    else:
        text = text.rstrip("0")
    return text + suffix


def attribute(owner, name, value, ind):
    if isinstance(value, str):
        return f"{ind}\t\t{owner}:{escape_name(name)} = {quote(value)} ;"
    arr = np.atleast_1d(np.asarray(value))
    key = arr.dtype.str[1:]
    suffix = TYPES[key][1]
    if arr.dtype.kind == "f":
        items = [format_float(float(x), 7 if key == "f4" else 15, suffix) for x in arr]
    else:
        items = [f"{int(x)}{suffix}" for x in arr]
    return f"{ind}\t\t{owner}:{escape_name(name)} = {', '.join(items)} ;"


def group(g, depth, lines):
    ind = "  " * depth
    if g.dimensions:
        lines.append(f"{ind}dimensions:")
        lines += [f"{ind}\t{escape_name(d)} = {len(dim)} ;" for d, dim in g.dimensions.items()]
    if g.variables:
        lines.append(f"{ind}variables:")
        for v in g.variables.values():
            t = "string" if v.dtype is str else TYPES[v.dtype.str[1:]][0]
            dims = f"({', '.join(escape_name(d) for d in v.dimensions)})" if v.dimensions else ""
            lines.append(f"{ind}\t{t} {escape_name(v.name)}{dims} ;")
            lines += [attribute(escape_name(v.name), a, v.getncattr(a), ind) for a in v.ncattrs()]
    if g.ncattrs():
        lines += ["", ind + ("// global attributes:" if depth == 0 else "// group attributes:")]
        lines += [attribute("", a, g.getncattr(a), ind) for a in g.ncattrs()]
    for sub in g.groups.values():
        lines += ["", f"{ind}group: {escape_name(sub.name)} {{"]
        group(sub, depth + 1, lines)
        lines.append(f"{ind}  }} // group {escape_name(sub.name)}")


def dims_store():
    """A pure Zarr v2 store (zarr-python) whose groups name the same dimension as the root,
    with unnamed dimensions and integer, boolean and float attributes: where netCDF-c 4.10
    defines each dimension and how it types each attribute."""
    import shutil
    import zarr
    path = os.path.join(OUT, "dims_v2.zarr")
    shutil.rmtree(path, ignore_errors=True)
    root = zarr.open_group(path, mode="w", zarr_format=2,
                           attributes={"small": 1, "big": 3000000000, "huge": 18446744073709551615,
                                       "neg": -3000000000, "flag": True, "ratio": 0.25,
                                       "list": [1, 300, 70000]})
    w = root.create_array("w", shape=(3,), chunks=(3,), dtype="i4",
                          attributes={"_ARRAY_DIMENSIONS": ["time"]})
    w[:] = 1
    for name in ("a", "b"):
        g = root.create_group(name, attributes={"n": 2})
        v = g.create_array("v", shape=(3, 5), chunks=(3, 5), dtype="f4",
                           attributes={"_ARRAY_DIMENSIONS": ["time", "x"], "valid": [0, 10]})
        v[:] = 0.5
        u = g.create_array("u", shape=(4, 2), chunks=(4, 2), dtype="u1")
        u[:] = 7
    return os.path.relpath(path, ROOT)


def main():
    os.makedirs(OUT, exist_ok=True)
    for rel in STORES + [dims_store()]:
        path = os.path.join(ROOT, rel)
        name = os.path.basename(rel).rsplit(".", 1)[0]
        ds = netCDF4.Dataset(f"file://{path}#mode=zarr,file")
        lines = [f"netcdf {escape_name(name)} {{"]
        group(ds, 0, lines)
        ds.close()
        with open(os.path.join(OUT, f"{name}.cdl"), "w") as f:
            f.write("\n".join(lines + ["}"]) + "\n")
    with open(os.path.join(OUT, "VERSION"), "w") as f:
        f.write(f"netCDF4-python {netCDF4.__version__}, netCDF-c "
                f"{netCDF4.__netcdf4libversion__}\n")


if __name__ == "__main__":
    sys.exit(main())
