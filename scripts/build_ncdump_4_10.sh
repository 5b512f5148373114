#!/bin/sh
# Builds ncdump of netCDF-c 4.10.1, the netCDF-c that netCDF4-python 1.7.5 bundles (Debian's
# ncdump is 4.9.0, which crashes on NCZarr stores of netCDF-c >= 4.9.3 and on pure Zarr `|S1`
# arrays): netCDF-c's own ncdump/ sources at tag v4.10.1, linked with the libnetcdf of the
# netCDF4 1.7.5 wheel. scripts/make_netcdf_cdl.py writes the expected `ncdump -h` output of
# tests/fixtures/netcdf/netcdf_c_4.10/ with it.
#
# Usage: scripts/build_ncdump_4_10.sh NETCDF_C_SRC SITE_PACKAGES OUT
#   NETCDF_C_SRC   a checkout of netCDF-c at tag v4.10.1 (its ncdump/ and include/ are used)
#   SITE_PACKAGES  site-packages of a venv with `pip install netCDF4==1.7.5`
#   OUT            the ncdump binary to write
# Needs a C compiler.
set -eu
src=$1 site=$2 out=$3
lib=$(ls "$site"/netcdf4.libs/libnetcdf-*.so.*)
libdir=$(dirname "$lib")
gen=$(mktemp -d)
trap 'rm -rf "$gen"' EXIT
# The configure results ncdump's sources need (Linux, 64 bits, netCDF-4 and NCZarr on).
cat > "$gen/config.h" <<'H'
#define _GNU_SOURCE 1
#include <stddef.h>
#include <stdint.h>
#define HAVE_STDINT_H 1
#define HAVE_UNISTD_H 1
#define HAVE_GETOPT_H 1
#define HAVE_FCNTL_H 1
#define HAVE_STRDUP 1
#define HAVE_SNPRINTF 1
#define HAVE_SSIZE_T 1
#define HAVE_UINT 1
#define HAVE_UINT64_T 1
#define HAVE_UINTPTR_T 1
#define HAVE_PTRDIFF_T 1
#define HAVE_LONG_LONG_INT 1
#define HAVE_UNSIGNED_LONG_LONG_INT 1
#define SIZEOF_SIZE_T 8
#define SIZEOF_OFF_T 8
#define SIZEOF_VOIDP 8
#define SIZEOF_INT 4
#define SIZEOF_LONG 8
#define SIZEOF_LONG_LONG 8
#define SIZEOF_SHORT 2
#define SIZEOF_FLOAT 4
#define SIZEOF_DOUBLE 8
#define USE_NETCDF4 1
#define USE_HDF5 1
#define NETCDF_ENABLE_NCZARR 1
#define ENABLE_NCZARR 1
#include "ncconfigure.h"
H
sed -e 's/@NC_VERSION_MAJOR@/4/;s/@NC_VERSION_MINOR@/10/;s/@NC_VERSION_PATCH@/1/' \
    -e 's/@NC_VERSION_NOTE@//;s/@NC_VERSION@/"4.10.1"/;s/@[A-Z_0-9]*@/0/g' \
    "$src/include/netcdf_meta.h.in" > "$gen/netcdf_meta.h"
sed -e 's/@NC_DISPATCH_VERSION@/5/' "$src/include/netcdf_dispatch.h.in" > "$gen/netcdf_dispatch.h"
d=$src/ncdump
cc -O1 -w -I"$gen" -I"$src/include" -I"$d" -o "$out" "$d/ncdump.c" "$d/vardata.c" \
    "$d/dumplib.c" "$d/indent.c" "$d/nctime0.c" "$d/utils.c" "$d/nciter.c" "$lib" \
    -Wl,-rpath,"$libdir" -lm
"$out" 2>&1 | tail -1
