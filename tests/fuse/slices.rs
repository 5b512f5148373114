//! Selection files on a real mount: `stat`, `cat`, `cp`, `numpy.load` and `numpy.fromfile` of
//! `A[SEL]`, `A[SEL].npy` and `A[SEL].json` against numpy's `a[SEL]` of the expected arrays,
//! for every healthy fixed-size array of every fixture store; invalid names are ENOENT and say
//! why in the log.

use crate::common;

use common::mount::{python, timed, Mount};
use common::{all_fixture_cases, load_manifest};

/// Checks selections of every array given as (mounted file, expected .npy) pairs.
const CHECK: &str = r#"
import io, sys, os, json, subprocess, numpy as np
pairs = sys.argv[1:]
sels = ["0", "-1", "::2", "1:", "...,0", ":,0", "1:3,::2", ":,1,2", "0:2,::3,1:100", "...", "-2:,...,-1"]
checked = 0
def line(x):
    b = x.encode() if isinstance(x, str) else bytes(x)
    return b.replace(b"\\", b"\\\\").replace(b"\n", b"\\n") + b"\n"
for f, exp, text in zip(pairs[::3], pairs[1::3], pairs[2::3]):
    want = np.load(exp)
    if want.dtype.hasobject:
        continue
    for s in sels:
        try:
            ref = eval("want[" + s + "]")
        except IndexError:
            assert not os.path.exists(f + "[" + s + "]"), (f, s)
            continue
        ref = np.array(ref, dtype=want.dtype, order="C")
        got = np.load(f + "[" + s + "].npy")
        assert got.shape == ref.shape, (f, s, got.shape, ref.shape)
        if text != "text":
            # Byte for byte what numpy saves (header included), with the array's own dtype.
            assert got.dtype == want.dtype, (f, s, got.dtype, want.dtype)
            saved = io.BytesIO()
            np.save(saved, ref)
            with open(f + "[" + s + "].npy", "rb") as served:
                assert served.read() == saved.getvalue(), (f, s)
        data = ref.astype(got.dtype).tobytes()
        assert got.tobytes() == data, (f, s)
        raw = f + "[" + s + "]"
        if text == "text":
            data = b"".join(line(x) for x in ref.flat)
        else:
            assert np.fromfile(raw, dtype=got.dtype).tobytes() == data, (f, s)
        assert os.stat(raw).st_size == len(data), (f, s)
        assert subprocess.run(["cat", raw], capture_output=True, check=True).stdout == data
        meta = json.load(open(f + "[" + s + "].json"))
        assert tuple(meta["shape"]) == ref.shape, (f, s, meta)
        checked += 1
print(checked)
"#;

#[test]
fn selections_of_every_fixture_array_match_numpy() {
    if !common::mount::fuse_ready() {
        return;
    }
    let mut total = 0;
    for case in all_fixture_cases() {
        let options: Vec<&str> = case.options.iter().map(String::as_str).collect();
        let mount = Mount::new(&case.store, &options);
        let args: Vec<String> = case
            .healthy_arrays()
            .filter_map(|n| {
                let npy = n.npy.as_ref()?;
                let file = mount.join(&case.file_of(n));
                let kind = if n.text.is_some() { "text" } else { "data" };
                Some([
                    file.display().to_string(),
                    npy.display().to_string(),
                    kind.to_string(),
                ])
            })
            .flatten()
            .collect();
        if args.is_empty() {
            continue;
        }
        let name = case.name.clone();
        let out = python(CHECK, args);
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        total += String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse::<u32>()
            .unwrap();
    }
    eprintln!("{total} selections checked");
    assert!(total > 50, "only {total} selections checked");
}

/// Checks, for (mounted file, expected .npy, array metadata JSON) triples, selections cut on the
/// array's chunk grid: a sub-block of whole chunks, two along each axis where the array has
/// them (each row then crosses two chunks), and blocks that cut every chunk they touch, with
/// rows across all the chunks of the last axis, contiguous and strided.
const CROSSING: &str = r#"
import sys, json, numpy as np
args = sys.argv[1:]
checked = 0
for f, exp, meta in zip(args[::3], args[1::3], args[2::3]):
    want = np.load(exp)
    meta = json.loads(meta)
    grid = (meta.get("chunk_grid") or {}).get("configuration") or {}
    cs = meta.get("chunks") or grid.get("chunk_shape")
    if want.dtype.hasobject or not isinstance(cs, list) or len(cs) != want.ndim or want.ndim < 2:
        continue
    if not all(isinstance(c, int) for c in cs) or want.shape[-1] <= cs[-1]:
        continue
    dtype = np.load(f + "[...].npy", mmap_mode="r").dtype
    aligned, cut, strided = [], [], []
    for n, c in zip(want.shape, cs):
        a = c if n >= 3 * c else 0
        aligned.append(f"{a}:{min(a + 2 * c, n)}")
        cut.append(f"1:{n - 1}" if n > 2 else ":")
    strided = cut[:-1] + ["1::3"]
    for s in (aligned, cut, strided):
        s = ",".join(s)
        ref = np.ascontiguousarray(eval("want[" + s + "]")).astype(dtype)
        raw = f + "[" + s + "]"
        with open(raw, "rb") as r:
            got = r.read()
        assert got == ref.tobytes(), (raw, len(got), ref.nbytes)
        assert np.fromfile(raw, dtype=dtype).tobytes() == ref.tobytes(), raw
        assert np.load(raw + ".npy").tobytes() == ref.tobytes(), raw
        checked += 1
print(checked)
"#;

#[test]
fn selections_whose_rows_cross_chunks_match_numpy_aligned_or_not() {
    if !common::mount::fuse_ready() {
        return;
    }
    let mut total = 0;
    for case in all_fixture_cases() {
        let options: Vec<&str> = case.options.iter().map(String::as_str).collect();
        let args: Vec<String> = case
            .healthy_arrays()
            .filter(|n| n.text.is_none())
            .filter_map(|n| {
                let (npy, json) = (n.npy.as_ref()?, n.json.as_ref()?);
                Some([case.file_of(n), npy.display().to_string(), json.to_string()])
            })
            .flatten()
            .collect();
        if args.is_empty() {
            continue;
        }
        let mount = Mount::new(&case.store, &options);
        let args = args
            .chunks(3)
            .flat_map(|a| {
                [
                    mount.join(&a[0]).display().to_string(),
                    a[1].clone(),
                    a[2].clone(),
                ]
            })
            .collect();
        let out = python(CROSSING, args);
        assert!(
            out.status.success(),
            "{}: {}",
            case.name,
            String::from_utf8_lossy(&out.stderr)
        );
        total += String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse::<u32>()
            .unwrap();
    }
    eprintln!("{total} chunk-crossing selections checked");
    assert!(
        total > 100,
        "only {total} chunk-crossing selections checked"
    );
}

#[test]
fn dimension_names_cp_and_errors_on_a_mount() {
    if !common::mount::fuse_ready() {
        return;
    }
    let case = load_manifest("manifest.json")
        .into_iter()
        .find(|c| c.name == "demo")
        .unwrap();
    let node = case
        .nodes
        .iter()
        .find(|n| n.path == "surface/temperature")
        .unwrap();
    let mount = Mount::new(&case.store, &[]);
    let dir = mount.join("surface");
    let script = r#"
import sys, os, errno, shutil, tempfile, numpy as np
d, exp = sys.argv[1:3]
want = np.load(exp)
t = os.path.join(d, "temperature")
a = np.fromfile(t + "[time=0,lat=3]", dtype="<f4")
assert a.tobytes() == want[0, 3].astype("<f4").tobytes()
b = np.load(t + "[lon=-5:,time=2:9:3].npy")
assert b.tobytes() == np.ascontiguousarray(want[2:9:3, :, -5:]).astype("<f4").tobytes()
# Selection files are served with direct I/O and can still be mapped.
m = np.load(t + "[lon=-5:,time=2:9:3].npy", mmap_mode="r")
assert m.tobytes() == b.tobytes()
assert np.memmap(t + "[time=0,lat=3]", dtype="<f4", mode="r").tobytes() == a.tobytes()
dst = tempfile.mkdtemp()
shutil.copy(t + "[:,10,20].npy", dst)
c = np.load(os.path.join(dst, "temperature[:,10,20].npy"))
assert c.tobytes() == want[:, 10, 20].astype("<f4").tobytes()
assert not any("[" in n for n in os.listdir(d))
# Python's spellings of the same selections.
assert np.fromfile(t + "[time=0,lat=3,]", dtype="<f4").tobytes() == a.tobytes()
assert np.fromfile(t + "[+0,+3]", dtype="<f4").tobytes() == a.tobytes()
assert open(t + "[0:99999999999999999999999]", "rb").read() == open(t, "rb").read()
# Selection files have no extended attributes (not ENOENT).
assert os.listxattr(t + "[0]") == []
for name in ["user.zarr.attributes", "security.selinux"]:
    try:
        os.getxattr(t + "[0]", name)
        raise SystemExit("an attribute " + name)
    except OSError as e:
        assert e.errno in (errno.ENODATA, errno.EOPNOTSUPP), (name, e)
# A selection open, or cached by name, keeps its inode while thousands of others are looked up.
f = open(t + "[1]", "rb")
head = f.read(100)
for i in range(1, 4300):
    os.stat(t + "[0:" + str(i) + "]")
assert head + f.read() == want[1].astype("<f4").tobytes()
f.close()
assert np.fromfile(t + "[1]", dtype="<f4").tobytes() == want[1].astype("<f4").tobytes()
# Each refused name thrice: the kernel keeps the first answer (a negative entry).
for bad in ["[5,x]", "[30]", "[0,\u00a01]", "[::-1]", "[height=1]", "[0,0,0,0]"] * 3:
    try:
        os.stat(t + bad)
        raise SystemExit("found " + bad)
    except FileNotFoundError:
        pass
print("ok")
"#;
    let args = [dir, node.npy.clone().unwrap()];
    let out = python(script, args.map(|p| p.display().to_string()).to_vec());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "ok",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (_, log) = mount.stop();
    assert!(
        log.contains("surface/temperature[5,x]: 'x' is not an index or a dimension name"),
        "{log}"
    );
    assert!(log.contains("surface/temperature[30]: index 30 is out of range"));
    // Looked up once each: the kernel answered the second and third stat itself.
    let refused = log.matches("surface/temperature[5,x]: ").count();
    assert_eq!(refused, 1, "{log}");
}

#[test]
fn a_large_string_selection_streams_through_the_mount() {
    if !common::mount::fuse_ready() {
        return;
    }
    // 400 x 400 strings in chunks of 128 x 100 (the test writes them: vlen-utf8, uncompressed);
    // the selection `[:, 1:]` holds 159,600 elements, more than a stat scans on the spot.
    let (rows, cols, (cr, cc)) = (400u64, 400u64, (128u64, 100u64));
    let item = |k: u64| match k % 7 {
        0 => format!("é{k}\n"),
        3 => format!("b\\{k}"),
        _ => format!("s{}", k % 997),
    };
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("names");
    std::fs::create_dir_all(&array).unwrap();
    std::fs::write(
        dir.path().join("zarr.json"),
        r#"{"zarr_format": 3, "node_type": "group"}"#,
    )
    .unwrap();
    std::fs::write(
        array.join("zarr.json"),
        format!(
            r#"{{"zarr_format": 3, "node_type": "array", "shape": [{rows}, {cols}],
            "data_type": "string", "fill_value": "",
            "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [{cr}, {cc}]}}}},
            "chunk_key_encoding": {{"name": "default"}}, "codecs": [{{"name": "vlen-utf8"}}]}}"#
        ),
    )
    .unwrap();
    for (i, j) in (0..rows.div_ceil(cr)).flat_map(|i| (0..cols.div_ceil(cc)).map(move |j| (i, j))) {
        let mut buf = ((cr * cc) as u32).to_le_bytes().to_vec();
        for (r, c) in (0..cr).flat_map(|r| (0..cc).map(move |c| (i * cr + r, j * cc + c))) {
            let s = if r < rows && c < cols {
                item(r * cols + c)
            } else {
                String::new()
            };
            buf.extend((s.len() as u32).to_le_bytes());
            buf.extend(s.as_bytes());
        }
        std::fs::create_dir_all(array.join(format!("c/{i}"))).unwrap();
        std::fs::write(array.join(format!("c/{i}/{j}")), buf).unwrap();
    }
    let items: Vec<String> = (0..rows)
        .flat_map(|r| (1..cols).map(move |c| r * cols + c))
        .map(item)
        .collect();
    let text: Vec<u8> = items
        .iter()
        .flat_map(|s| format!("{}\n", s.replace('\\', "\\\\").replace('\n', "\\n")).into_bytes())
        .collect();
    let width = items.iter().map(|s| s.chars().count()).max().unwrap();
    let mut npy =
        zarrfs::view::npy_header(&zarrfs::meta::DataType::Unicode(width), &[rows, cols - 1]);
    for s in &items {
        let at = npy.len();
        npy.extend(s.chars().flat_map(|c| (c as u32).to_le_bytes()));
        npy.resize(at + 4 * width, 0);
    }

    let mount = Mount::new(dir.path(), &[]);
    for (name, want) in [("names[:,1:]", text), ("names[:,1:].npy", npy)] {
        let path = mount.join(name);
        let got = timed("read", move || std::fs::read(path).unwrap());
        assert!(
            got == want,
            "{name}: {} bytes, expected {}",
            got.len(),
            want.len()
        );
        let path = mount.join(name);
        let size = timed("stat", move || std::fs::metadata(path).unwrap().len());
        // Unknown at the first lookup (0, not kept by the kernel), known once read.
        assert_eq!(size, want.len() as u64, "{name}");
    }
    let (status, log) = mount.stop();
    assert!(status.success(), "{log}");
}
