#!/usr/bin/env python3
"""Writes tests/fixtures/netcdf/netcdf_c_4.10/*.cdl: `ncdump -h` of stores as netCDF-c 4.10.1
(the netCDF-c that netCDF4-python 1.7.5 bundles) shows them: pure Zarr stores
(`file://STORE#mode=zarr,file`) and the NCZarr generation-4 store (`#mode=nczarr,file`), which
Debian's ncdump 4.9.0 cannot read (it names anonymous dimensions `_zdim_<len>`, types
attributes differently, and crashes on generation-4 stores and pure Zarr `|S1` arrays). Read by
tests/netcdf_cdl.rs.

The ncdump is netCDF-c 4.10.1's own, built by scripts/build_ncdump_4_10.sh; its path is given
as NCDUMP_4_10.

Also writes two stores there:
- dims_v2.zarr (zarr-python 3.4, Zarr v2): dimensions named alike in sibling groups and the
  root, unnamed dimensions, attributes of each JSON kind;
- attrs_v2.zarr (Zarr v2, its JSON written as bytes): what netCDF-c does with attributes and
  names: bare NaN/Infinity, integers at the type limits, JSON-convention text, the attributes
  netCDF-c hides, quotes, DEL and raw control characters, `_FillValue` typed as its variable,
  `|S1` strings, variables named like CDL keywords or holding `%`.

Needs Python >= 3.12 with netCDF4==1.7.5 and zarr 3.4 (zarr only for dims_v2.zarr); from the
repository root:
NCDUMP_4_10=/tmp/ncdump-4.10.1 /tmp/venv-types/bin/python scripts/make_netcdf_cdl.py [STORE...]
STORE (dims_v2, attrs_v2) rewrites only those stores; every .cdl is written again.
"""
import json
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests",
                    "fixtures")
OUT = os.path.join(ROOT, "netcdf", "netcdf_c_4.10")
# The stores shown, as paths under tests/fixtures, and the mode netCDF-c reads each in.
STORES = [("dialects/consolidated_v2_zarr2.zarr", "zarr"),
          ("dialects/consolidated_v2_zarr3.zarr", "zarr"),
          ("v2_codecs.zarr", "zarr"),
          ("netcdf/netcdf_c_4.10/dims_v2.zarr", "zarr"),
          ("netcdf/netcdf_c_4.10/attrs_v2.zarr", "zarr"),
          ("dialects/nczarr_gen4.zarr", "nczarr")]


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
    return path


# attrs_v2.zarr's root attributes, as bytes: Python's json would write neither the bare tokens
# nor the raw DEL and \x01 (netCDF-c writes control characters raw), and would respace the rest.
ATTRS_ROOT = (
    b'{"nan": NaN, "inf": Infinity, "ninf": -Infinity, "nanlist": [1.5, NaN],\n'
    b' "int64_max": 9223372036854775807, "below_int64_max": 9223372036854775806,\n'
    b' "uint_max": 4294967295, "below_int_min": -2147483649,\n'
    b' "json": {"a": [1, 2.5, "x\\ty"], "b": {"c": null, "d": true}}, "strs": ["ab", "c"],\n'
    b' "nested": [[1, 2], [3]],\n'
    b' "CLASS": "c", "NAME": "n", "DIMENSION_LIST": "d", "REFERENCE_LIST": "r",\n'
    b' "_Netcdf4Coordinates": 1, "_Netcdf4Dimid": 2, "_NCProperties": "p",\n'
    b' "_nczarr_note": "shown", "_NCZARR_NOTE": "shown",\n'
    b' "text": "it\'s \\"q\\" \\\\ DEL\x7f ctl\x01 line 1\\nline 2", "g\x01h": 4, "a%b": 5}\n')


def attrs_store():
    """A pure Zarr v2 store written byte for byte (no chunks: every value is the fill value)."""
    import shutil
    path = os.path.join(OUT, "attrs_v2.zarr")
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)

    def write(rel, data):
        os.makedirs(os.path.dirname(os.path.join(path, rel)), exist_ok=True)
        with open(os.path.join(path, rel), "wb") as f:
            f.write(data)

    write(".zgroup", b'{"zarr_format": 2}\n')
    write(".zattrs", ATTRS_ROOT)
    arrays = [("chars", "|S1", '""', '{"_ARRAY_DIMENSIONS": ["x"]}'),
              ("data", "<f4", "-999.0", '{"_ARRAY_DIMENSIONS": ["x"], "_FillValue": -999.0, '
                                        '"units": "K"}'),
              ("group", "<i2", "-32767", '{"_ARRAY_DIMENSIONS": ["x"], "_FillValue": -32767}'),
              ("types", "|i1", "1", '{"_ARRAY_DIMENSIONS": ["x"], "_FillValue": 1, '
                                    '"valid": [1, 2]}'),
              ("nan_fill", "<f4", '"NaN"', '{"_ARRAY_DIMENSIONS": ["x"], "_FillValue": NaN}'),
              ("x%y", "<f8", "0.0", '{"_ARRAY_DIMENSIONS": ["x"], "note": "percent"}')]
    for name, dtype, fill, attrs in arrays:
        meta = {"zarr_format": 2, "shape": [3], "chunks": [3], "dtype": dtype,
                "fill_value": "@FILL@", "order": "C", "compressor": None, "filters": None}
        text = json.dumps(meta).replace('"@FILL@"', fill)
        write(f"{name}/.zarray", text.encode() + b"\n")
        write(f"{name}/.zattrs", attrs.encode() + b"\n")
    return path


MAKERS = {"dims_v2": dims_store, "attrs_v2": attrs_store}


def main():
    ncdump = os.environ.get("NCDUMP_4_10")
    if not ncdump:
        sys.exit("NCDUMP_4_10: the ncdump of scripts/build_ncdump_4_10.sh")
    version = subprocess.run([ncdump], capture_output=True, text=True).stderr
    if "library version 4.10.1" not in version:
        sys.exit(f"{ncdump} is not netCDF-c 4.10.1's: {version.strip().splitlines()[-1:]}")
    os.makedirs(OUT, exist_ok=True)
    for name in sys.argv[1:] or MAKERS:
        MAKERS[name]()
    for rel, mode in STORES:
        path = os.path.join(ROOT, rel)
        name = os.path.basename(rel).rsplit(".", 1)[0]
        cdl = subprocess.run([ncdump, "-h", f"file://{path}#mode={mode},file"],
                             capture_output=True, check=True).stdout
        with open(os.path.join(OUT, f"{name}.cdl"), "wb") as f:
            f.write(cdl)
    with open(os.path.join(OUT, "VERSION"), "w") as f:
        f.write("ncdump of netCDF-c 4.10.1 (scripts/build_ncdump_4_10.sh, with the libnetcdf of "
                "netCDF4-python 1.7.5)\n")


if __name__ == "__main__":
    sys.exit(main())
