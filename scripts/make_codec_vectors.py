#!/usr/bin/env python3
"""Writes the codec test vectors in tests/fixtures/codecs/.

Each case is an encoded chunk (made by numcodecs or zarr-python) and the bytes zarrfs must decode
it to: C order, little-endian. `manifest.json` lists the cases:

    {"name", "group", "codecs": [{"name", "configuration"}], "dtype", "shape", "encoded", "decoded"}

`dtype` is a short code (`i4`, `f8`, `c16`, `U3`, `b1`, ...) or, for structured types, a list of
`[name, code, offset, subshape]`. `group` names the codec the case is about (the Rust test of that
codec runs it). Decoded arrays are stored once per distinct content.

Usage: python3 scripts/make_codec_vectors.py   (needs numpy 2, numcodecs >= 0.16, zarr >= 3.1)
"""

import hashlib
import json
import os
import shutil
import warnings

import numcodecs
import numpy as np
import zarr
import zarr.codecs
import zarr.storage

warnings.filterwarnings("ignore")

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "fixtures", "codecs")

cases = []
written = set()


def save(data: bytes, ext: str) -> str:
    name = hashlib.sha1(data).hexdigest()[:12] + ext
    if name not in written:
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
        written.add(name)
    return name


def le(arr: np.ndarray) -> bytes:
    """The bytes zarrfs serves: C order, little-endian."""
    return np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tobytes()


def add(name, group, codecs, dtype, arr, encoded):
    assert not any(c["name"] == name for c in cases), name
    cases.append(
        {
            "name": name,
            "group": group,
            "codecs": [{"name": n, "configuration": c} for n, c in codecs],
            "dtype": dtype,
            "shape": list(arr.shape),
            "encoded": save(bytes(encoded), ".bin"),
            "decoded": save(le(arr), ".raw"),
        }
    )


def tob(x) -> bytes:
    """Whatever a numcodecs encode returned, as bytes."""
    if isinstance(x, bytes):
        return x
    return np.ascontiguousarray(x).view("u1").tobytes()


def v2(codec):
    """A numcodecs codec as the Zarr v2 parser hands it over: its id and its full config."""
    cfg = codec.get_config()
    return cfg["id"], cfg


def chain2(arr, codecs, group, name, dtype):
    """bytes (little) + the given numcodecs codecs, encoded with numcodecs. The expected result
    is numcodecs' own decoding (lossy filters do not give `arr` back)."""
    data = np.ascontiguousarray(arr).tobytes()
    for c in codecs:
        data = tob(c.encode(data))
    dec = data
    for c in reversed(codecs):
        dec = tob(c.decode(dec))
    expected = np.frombuffer(dec, dtype=arr.dtype).reshape(arr.shape)
    add(name, group, [("bytes", {"endian": "little"})] + [v2(c) for c in codecs], dtype,
        expected, data)


rng = np.random.default_rng(42)
smooth_f4 = (np.cumsum(rng.normal(size=512)) * 10).astype("<f4")
smooth_f8 = (np.cumsum(rng.normal(size=300)) + 1000).astype("<f8")
ints_i4 = np.cumsum(rng.integers(-50, 50, size=400)).astype("<i4")
ints_i8 = np.cumsum(rng.integers(-5000, 5000, size=256)).astype("<i8")
bytes_u1 = (np.arange(1200) % 37 + rng.integers(0, 3, size=1200)).astype("u1")


def main():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)

    # --- plain compressors -------------------------------------------------------------
    for lvl in (1, 9):
        chain2(smooth_f4, [numcodecs.Zlib(level=lvl)], "zlib", f"zlib_l{lvl}", "f4")
        chain2(smooth_f4, [numcodecs.GZip(level=lvl)], "gzip", f"gzip_l{lvl}", "f4")
        chain2(ints_i4, [numcodecs.BZ2(level=lvl)], "bz2", f"bz2_l{lvl}", "i4")
    for lvl in (1, 5, -3):
        chain2(ints_i8, [numcodecs.Zstd(level=lvl)], "zstd", f"zstd_l{lvl}", "i8")
    chain2(ints_i8, [numcodecs.Zstd(level=3, checksum=True)], "zstd", "zstd_checksum", "i8")
    chain2(smooth_f8, [numcodecs.LZ4(acceleration=1)], "lz4", "lz4_a1", "f8")
    chain2(bytes_u1, [numcodecs.LZ4(acceleration=10)], "lz4", "lz4_a10_u1", "u1")
    add("numcodecs_zlib_v3_name", "zlib", [("bytes", {"endian": "little"}),
                                            ("numcodecs.zlib", {"level": 1})],
        "f4", smooth_f4, numcodecs.Zlib(1).encode(smooth_f4.tobytes()))

    # --- blosc: every compressor x shuffle, v2 and v3 configs --------------------------
    for cname in ("lz4", "lz4hc", "blosclz", "zlib", "zstd"):
        for shuffle, sname in ((0, "noshuffle"), (1, "shuffle"), (2, "bitshuffle")):
            codec = numcodecs.Blosc(cname=cname, clevel=5, shuffle=shuffle)
            chain2(smooth_f4, [codec], "blosc", f"blosc_{cname}_{sname}", "f4")
            v3cfg = {"cname": cname, "clevel": 5, "shuffle": sname, "typesize": 8,
                     "blocksize": 512}
            enc = numcodecs.Blosc(cname=cname, clevel=5, shuffle=shuffle,
                                  blocksize=512).encode(ints_i8.tobytes())
            add(f"blosc_v3_{cname}_{sname}_bs512", "blosc",
                [("bytes", {"endian": "little"}), ("blosc", v3cfg)], "i8", ints_i8, enc)
    chain2(bytes_u1, [numcodecs.Blosc(cname="zstd", clevel=3, shuffle=-1)], "blosc",
           "blosc_autoshuffle_u1", "u1")
    chain2(smooth_f4, [numcodecs.Blosc(cname="lz4", clevel=0, shuffle=1)], "blosc",
           "blosc_clevel0_memcpy", "f4")

    # --- shuffle -------------------------------------------------------------------------
    chain2(smooth_f4, [numcodecs.Shuffle(elementsize=4), numcodecs.Zlib(1)], "shuffle",
           "shuffle_es4_zlib", "f4")
    sh = numcodecs.Shuffle(elementsize=8).encode(smooth_f8.tobytes())
    add("shuffle_es0_means_dtype_size", "shuffle",
        [("bytes", {"endian": "little"}), ("shuffle", {"id": "shuffle", "elementsize": 0})],
        "f8", smooth_f8, tob(sh))
    sh = numcodecs.Shuffle(elementsize=2).encode(ints_i4.tobytes())
    add("shuffle_es2_on_i4", "shuffle",
        [("bytes", {"endian": "little"}), ("numcodecs.shuffle", {"elementsize": 2})],
        "i4", ints_i4, tob(sh))

    # --- filters in the v2 position (after bytes, acting on stored bytes) ----------------
    chain2(ints_i4, [numcodecs.Delta(dtype="<i4", astype="<i2"), numcodecs.Zlib(1)], "delta",
           "delta_i4_as_i2", "i4")
    chain2(smooth_f8, [numcodecs.Delta(dtype="<f8")], "delta", "delta_f8", "f8")
    chain2(smooth_f4, [numcodecs.Delta(dtype="<f4", astype="<f8")], "delta", "delta_f4_as_f8",
           "f4")
    u2 = (np.arange(400) * 97 % 65536).astype("<u2")
    chain2(u2, [numcodecs.Delta(dtype="<u2", astype="<u1")], "delta", "delta_u2_as_u1_wraps",
           "u2")
    # big-endian stored array: the filter works on big-endian bytes, then bytes swaps.
    big = ints_i4.astype(">i4")
    d = numcodecs.Delta(dtype=">i4", astype=">i2")
    enc = numcodecs.Zlib(1).encode(tob(d.encode(big.tobytes())))
    add("delta_big_endian_v2", "delta",
        [("bytes", {"endian": "big"}), v2(d), v2(numcodecs.Zlib(1))], "i4", big, enc)

    d = numcodecs.Delta(dtype=">i8")
    add("delta_big_endian_same_type", "delta", [("bytes", {"endian": "big"}), v2(d)], "i8",
        ints_i8, tob(d.encode(ints_i8.astype(">i8").tobytes())))
    chain2(bytes_u1.astype("i1"), [numcodecs.Delta(dtype="|i1")], "delta", "delta_i1", "i1")

    fso = numcodecs.FixedScaleOffset(offset=1000, scale=10, dtype="<f8", astype="u1")
    x = np.linspace(1000, 1025, 250, dtype="<f8")
    chain2(fso.decode(fso.encode(x)).astype("<f8"), [fso], "fixedscaleoffset",
           "fso_f8_as_u1", "f8")
    fso = numcodecs.FixedScaleOffset(offset=-3.5, scale=1000, dtype="<f4", astype="<i4")
    x = smooth_f4 / 100
    chain2(fso.decode(fso.encode(x)).astype("<f4"), [fso], "fixedscaleoffset", "fso_f4_as_i4",
           "f4")
    fso = numcodecs.FixedScaleOffset(offset=2.5, scale=7, dtype="<f8", astype="<f4")
    chain2(fso.decode(fso.encode(smooth_f8)).astype("<f8"), [fso], "fixedscaleoffset",
           "fso_f8_as_f4", "f8")
    fso = numcodecs.FixedScaleOffset(offset=1000, scale=100, dtype=">f8", astype=">u2")
    x = np.linspace(1000, 1050, 200, dtype=">f8")
    enc = tob(fso.encode(x))
    dec = np.frombuffer(np.asarray(fso.decode(enc)).tobytes(), dtype=">f8")
    add("fso_big_endian_v2", "fixedscaleoffset", [("bytes", {"endian": "big"}), v2(fso)], "f8",
        dec, enc)

    q = numcodecs.Quantize(digits=2, dtype="<f8")
    chain2(np.asarray(q.encode(smooth_f8)), [q], "quantize", "quantize_f8", "f8")
    q = numcodecs.Quantize(digits=3, dtype="<f8", astype="<f4")
    qe = np.asarray(q.encode(smooth_f8))
    add("quantize_f8_as_f4", "quantize", [("bytes", {"endian": "little"}), v2(q)], "f8",
        np.asarray(q.decode(qe)), qe.tobytes())
    b = numcodecs.BitRound(keepbits=6)
    be = tob(b.encode(smooth_f4))
    add("bitround_f4", "bitround", [("bytes", {"endian": "little"}), v2(b)], "f4",
        np.frombuffer(be, "<f4"), be)

    a = numcodecs.AsType(encode_dtype="<f4", decode_dtype="<f8")
    enc = tob(a.encode(smooth_f8))
    add("astype_f8_from_f4", "astype", [("bytes", {"endian": "little"}), v2(a)], "f8",
        np.asarray(a.decode(enc)), enc)
    a = numcodecs.AsType(encode_dtype="<i2", decode_dtype="<i8")
    enc = tob(a.encode(ints_i8 // 10))
    add("astype_i8_from_i2", "astype", [("bytes", {"endian": "little"}), v2(a)], "i8",
        np.asarray(a.decode(enc)), enc)
    a = numcodecs.AsType(encode_dtype="<f8", decode_dtype="<i4")
    enc = (ints_i4.astype("<f8") + 0.25).tobytes()
    add("astype_i4_from_f8", "astype", [("bytes", {"endian": "little"}), v2(a)], "i4",
        np.asarray(a.decode(enc)), enc)

    for n in (1000, 1001):
        bits = rng.random(n) < 0.3
        p = numcodecs.PackBits()
        add(f"packbits_{n}", "packbits", [("bytes", {}), v2(p)], "b1", bits,
            tob(p.encode(bits)))
    cat = numcodecs.Categorize(labels=["female", "male", "other"], dtype="<U6", astype="u1")
    x = np.array(["male", "female", "other", "female", "x"] * 40, dtype="<U6")
    enc = tob(cat.encode(x))
    add("categorize_u6", "categorize", [("bytes", {"endian": "little"}), v2(cat)], "U6",
        np.asarray(cat.decode(enc)).astype("<U6"), enc)

    # --- checksums -------------------------------------------------------------------------
    for codec, group in ((numcodecs.CRC32(), "crc32"), (numcodecs.CRC32(location="end"), "crc32"),
                         (numcodecs.Adler32(), "adler32"),
                         (numcodecs.Adler32(location="end"), "adler32"),
                         (numcodecs.CRC32C(), "crc32c"), (numcodecs.Fletcher32(), "fletcher32"),
                         (numcodecs.JenkinsLookup3(), "jenkins_lookup3"),
                         (numcodecs.JenkinsLookup3(initval=7), "jenkins_lookup3")):
        cfg = codec.get_config()
        tag = "_".join(f"{k}{v}" for k, v in cfg.items() if k != "id")
        arr = bytes_u1[:1001]  # odd length: exercises fletcher32's and lookup3's tails
        enc = tob(codec.encode(arr.tobytes()))
        add(f"{cfg['id']}_{tag}_u1", group, [("bytes", {}), (cfg["id"], cfg)], "u1", arr, enc)

    b64 = numcodecs.Base64()
    chain2(bytes_u1[:300], [b64], "base64", "base64_u1", "u1")

    # --- bytes codec: big endian ----------------------------------------------------------
    samples = {
        "i2": (ints_i4 % 30000).astype(">i2"),
        "u2": u2.astype(">u2"),
        "i4": ints_i4.astype(">i4"),
        "f8": smooth_f8.astype(">f8"),
        "f2": smooth_f4.astype(">f2"),
        "c16": (smooth_f8 + 1j * smooth_f8[::-1]).astype(">c16"),
        "c8": (smooth_f4 + 1j * smooth_f4[::-1]).astype(">c8"),
        "U3": np.array(["ab", "xyz", "é☃", ""] * 25, dtype=">U3"),
        "u1": bytes_u1,
    }
    for code, arr in samples.items():
        add(f"bytes_big_{code}", "bytes", [("bytes", {"endian": "big"})], code, arr, arr.tobytes())
    st = np.dtype([("a", ">i4"), ("b", ">f8", (2,)), ("c", "S3"), ("d", ">u2")])
    arr = np.zeros(50, dtype=st)
    arr["a"] = np.arange(50) * 1000 - 7
    arr["b"] = smooth_f8[:100].reshape(50, 2)
    arr["c"] = [b"ab", b"xyz"] * 25
    arr["d"] = np.arange(50) * 999
    fields = [["a", "i4", 0, []], ["b", "f8", 4, [2]], ["c", "S3", 20, []], ["d", "u2", 23, []]]
    add("bytes_big_structured", "bytes", [("bytes", {"endian": "big"})], fields,
        arr.astype(st.newbyteorder("<")), arr.tobytes())
    mixed = np.dtype([("a", "<i4"), ("b", ">f8")])
    arr = np.zeros(40, dtype=mixed)
    arr["a"] = np.arange(40) - 20
    arr["b"] = smooth_f8[:40]
    served = arr.astype(np.dtype([("a", "<i4"), ("b", "<f8")]))
    add("bytes_swap_units_mixed", "bytes", [("bytes", {"endian": "big", "swap_units": [[4, 8]]})],
        [["a", "i4", 0, []], ["b", "f8", 4, []]], served, arr.tobytes())

    # --- transpose ------------------------------------------------------------------------
    arr2 = smooth_f4[:384].reshape(16, 24)
    arr3 = ints_i4[:240].astype("<i2").reshape(4, 6, 10)
    arr3c = (smooth_f8[:120] + 1j).astype("<c16").reshape(4, 5, 6)
    u13 = bytes_u1[:1155].reshape(5, 7, 33)
    for name, arr, order, dt in (
        ("2d_f4", arr2, [1, 0], "f4"),
        ("3d_i2_201", arr3, [2, 0, 1], "i2"),
        ("3d_i2_120", arr3, [1, 2, 0], "i2"),
        ("3d_i2_210", arr3, [2, 1, 0], "i2"),
        ("3d_i2_021", arr3, [0, 2, 1], "i2"),
        ("3d_c16_102", arr3c, [1, 0, 2], "c16"),
        ("3d_u1_210", u13, [2, 1, 0], "u1"),
    ):
        enc = np.ascontiguousarray(arr.transpose(order)).tobytes()
        add(f"transpose_{name}", "transpose",
            [("transpose", {"order": order}), ("bytes", {"endian": "little"})], dt, arr, enc)
    big = np.ascontiguousarray(arr2.astype(">f4").transpose(1, 0))
    add("transpose_f_order_big_gzip_v2", "transpose",
        [("transpose", {"order": [1, 0]}), ("bytes", {"endian": "big"}),
         v2(numcodecs.GZip(5))], "f4", arr2, numcodecs.GZip(5).encode(big.tobytes()))

    zarr_cases()

    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        f.write('{"cases": [\n')
        f.write(",\n".join(json.dumps(c) for c in cases))
        f.write("\n]}\n")
    total = sum(os.path.getsize(os.path.join(OUT, n)) for n in os.listdir(OUT))
    print(f"{len(cases)} cases, {len(written)} files, {total} bytes")


def zarr_cases():
    """Whole chains written by zarr-python itself: one chunk read back from the store, expected
    to decode to what zarr-python reads."""
    from zarr.codecs import numcodecs as znc

    def one_chunk(name, arr, dtype, v2_chain=None, lossy=False, zarr_misreads=False, **kw):
        store = zarr.storage.MemoryStore()
        z = zarr.create_array(store=store, shape=arr.shape, chunks=arr.shape, dtype=arr.dtype,
                              fill_value=0, **kw)
        z[...] = arr
        back = zarr.open_array(store=store)[...]
        if zarr_misreads:
            # zarr-python 3.1 hands big-endian elements to numcodecs filters, which reinterpret
            # them as little-endian: it cannot read this chunk back. The stored data is right.
            assert not np.array_equal(back, arr)
            back = arr
        elif lossy:
            assert np.allclose(back, arr, atol=0.01)
        else:
            assert np.array_equal(back, arr), name
        meta_key = "zarr.json" if kw.get("zarr_format", 3) == 3 else ".zarray"
        keys = [k for k in store._store_dict if k not in (meta_key, ".zattrs", "zarr.json")]
        assert len(keys) == 1, keys
        meta = json.loads(store._store_dict[meta_key].to_bytes())
        codecs = v2_chain(meta) if v2_chain else [
            (c["name"], c.get("configuration", {})) for c in meta["codecs"]]
        add(name, "pipeline", codecs, dtype, back, store._store_dict[keys[0]].to_bytes())

    one_chunk("zarr3_transpose_big_zstd_crc32c", ints_i4[:384].reshape(16, 24), "i4",
              serializer=zarr.codecs.BytesCodec(endian="big"),
              filters=[zarr.codecs.TransposeCodec(order=(1, 0))],
              compressors=[zarr.codecs.ZstdCodec(level=3, checksum=True),
                           zarr.codecs.Crc32cCodec()])
    one_chunk("zarr3_delta_big_zstd_crc32c", ints_i4[:384].reshape(16, 24), "i4",
              serializer=zarr.codecs.BytesCodec(endian="big"),
              filters=[znc.Delta(dtype="<i4", astype="<i2")],
              compressors=[zarr.codecs.ZstdCodec(level=3), zarr.codecs.Crc32cCodec()],
              zarr_misreads=True)
    one_chunk("zarr3_transpose3d_gzip", ints_i4[:240].reshape(4, 6, 10), "i4",
              filters=[zarr.codecs.TransposeCodec(order=(2, 0, 1))],
              compressors=[zarr.codecs.GzipCodec(level=5)])
    one_chunk("zarr3_fso_shuffle_blosc", smooth_f8[:300].reshape(15, 20), "f8", lossy=True,
              serializer=zarr.codecs.BytesCodec(endian="little"),
              filters=[znc.FixedScaleOffset(offset=1000, scale=100, dtype="<f8", astype="<i4")],
              compressors=[znc.Shuffle(elementsize=4),
                           zarr.codecs.BloscCodec(cname="lz4", clevel=5, shuffle="bitshuffle",
                                                  typesize=4)])
    one_chunk("zarr3_packbits_gzip", rng.random((10, 13)) < 0.5, "b1",
              filters=[znc.PackBits()], compressors=[zarr.codecs.GzipCodec(level=5)])
    one_chunk("zarr3_astype_f2_crc32c", smooth_f4[:384].reshape(16, 24) / 64, "f4", lossy=True,
              serializer=zarr.codecs.BytesCodec(endian="little"),
              filters=[znc.AsType(encode_dtype="<f2", decode_dtype="<f4")],
              compressors=[zarr.codecs.Crc32cCodec()])

    # Zarr v2, order F, big-endian, filters then compressor: the chain the v2 parser builds.
    def v2_chain(meta):
        assert meta["order"] == "F", meta
        codecs = [("transpose", {"order": [1, 0]}), ("bytes", {"endian": "big"})]
        codecs += [(f["id"], f) for f in meta["filters"]]
        return codecs + [(meta["compressor"]["id"], meta["compressor"])]

    one_chunk("zarr2_order_f_big_delta_blosc", ints_i4[:384].astype(">i4").reshape(16, 24), "i4",
              v2_chain=v2_chain, zarr_format=2, order="F",
              filters=[numcodecs.Delta(dtype=">i4", astype=">i2")],
              compressors=numcodecs.Blosc(cname="zstd", clevel=3, shuffle=1))


if __name__ == "__main__":
    main()
