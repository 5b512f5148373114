//! kerchunk reference sets (JSON versions 0 and 1 with templates and `gen`, a MultiZarrToZarr
//! combination, a Parquet directory) read byte-exact through the view and through FUSE, against
//! zarr-python reading them with fsspec; and what happens when references point where they may
//! not, at missing files or past a file's end.

mod common;

#[test]
fn every_reference_set_reads_exactly_through_the_view() {
    common::check_all(
        "references/manifest.json",
        5,
        common::view_check::check_store,
    );
}

#[test]
fn every_reference_set_reads_exactly_through_fuse() {
    if !common::mount::fuse_ready() {
        return;
    }
    common::check_all(
        "references/manifest.json",
        5,
        common::fuse_check::check_store,
    );
}

use common::servers;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use zarrfs::store::RemoteOptions;
use zarrfs::view::{self, ViewError};

/// A copy of the single-file reference set in `dir/refs/` whose `temp` chunks point at a missing
/// file (time 0, lat 0-3), past the end of the file (time 0, lat 4-7), outside the references'
/// directory through `..` (time 1, lat 0-3) and by absolute path (time 1, lat 4-7), the targets
/// outside being copies of day1.nc in `dir/outside/`.
fn bad_references(dir: &Path) -> PathBuf {
    let fixtures = common::fixtures_dir().join("references");
    let refs_dir = dir.join("refs");
    let outside = dir.join("outside");
    std::fs::create_dir_all(refs_dir.join("nc")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    for to in [refs_dir.join("nc/day1.nc"), outside.join("day1.nc")] {
        std::fs::copy(fixtures.join("nc/day1.nc"), to).unwrap();
    }
    let mut doc: Value =
        serde_json::from_slice(&std::fs::read(fixtures.join("single.json")).unwrap()).unwrap();
    let refs = doc["refs"].as_object_mut().unwrap();
    let size = std::fs::metadata(fixtures.join("nc/day1.nc"))
        .unwrap()
        .len();
    let retarget = |v: &mut Value, url: Value, offset: Option<u64>| {
        v[0] = url;
        if let Some(o) = offset {
            v[1] = json!(o);
        }
    };
    retarget(&mut refs["temp/0.0.0"], json!("nc/none.nc"), None);
    retarget(
        &mut refs["temp/0.1.0"],
        json!("nc/day1.nc"),
        Some(size - 10),
    );
    retarget(&mut refs["temp/1.0.0"], json!("../outside/day1.nc"), None);
    let absolute = outside.join("day1.nc").display().to_string();
    retarget(&mut refs["temp/1.1.0"], json!(absolute), None);
    let path = refs_dir.join("refs.json");
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    path
}

fn expected_data(name: &str) -> Vec<u8> {
    let path = common::fixtures_dir().join(format!("references/expected/single/{name}.npy"));
    let npy = std::fs::read(path).unwrap();
    npy[common::npy_header_len(&npy)..].to_vec()
}

fn open_view(location: &Path, allow: &[&Path]) -> view::View {
    let remote = RemoteOptions {
        allow_targets: allow.iter().map(|p| p.display().to_string()).collect(),
        ..RemoteOptions::default()
    };
    let location = location.to_str().unwrap();
    let store = zarrfs::store::open_with(location, &remote).unwrap();
    let load = zarrfs::meta::LoadOptions { consolidated: true };
    view::from_store(Arc::from(store), location, 16 << 20, &load).unwrap()
}

/// One frame of `temp` (time t, 8 x 10 float32) split in the two halves of its chunks.
const HALF: u64 = 4 * 10 * 4;

#[test]
fn bad_targets_fail_their_chunks_only_through_the_view() {
    let dir = tempfile::tempdir().unwrap();
    let refs = bad_references(dir.path());
    let temp = expected_data("temp");
    let v = open_view(&refs, &[]);
    let ino = v.resolve("temp").unwrap();
    for (half, what) in ["missing file", "past the end", "outside via ..", "outside"]
        .iter()
        .enumerate()
    {
        let got = v.read(ino, half as u64 * HALF, HALF as u32);
        assert!(matches!(got, Err(ViewError::Io(_))), "{what}: {got:?}");
    }
    let lat = v.resolve("counts").unwrap();
    assert_eq!(v.read(lat, 0, 1 << 20).unwrap(), expected_data("counts"));
    // Allowed, the targets outside read; the others still fail.
    let v = open_view(&refs, &[&dir.path().join("outside")]);
    let ino = v.resolve("temp").unwrap();
    let frame1 = v.read(ino, 2 * HALF, 2 * HALF as u32).unwrap();
    assert_eq!(frame1, temp[2 * HALF as usize..]);
    assert!(matches!(v.read(ino, 0, HALF as u32), Err(ViewError::Io(_))));
}

#[test]
fn bad_targets_are_eio_with_a_log_line_through_fuse() {
    if !common::mount::fuse_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let refs = bad_references(dir.path());
    let m = common::mount::Mount::new(&refs, &["-v"]);
    // Slices of one chunk each (slice files are read with direct I/O: no page spans two).
    for sel in ["temp[0,:4]", "temp[0,4:]", "temp[1,:4]", "temp[1,4:]"] {
        let err = std::fs::read(m.join(sel)).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EIO), "{sel}");
    }
    let counts = std::fs::read(m.join("counts")).unwrap();
    assert_eq!(counts, expected_data("counts"));
    let (_, log) = m.stop();
    let outside = dir.path().join("outside/day1.nc").display().to_string();
    assert!(
        log.lines()
            .any(|l| l.contains(&outside) && l.contains("--allow-target")),
        "{log}"
    );
    assert!(log.contains("does not exist"), "{log}");
    assert!(log.contains("but the file ends at"), "{log}");
}

#[test]
fn slices_of_a_parquet_reference_set_read_exactly_through_fuse() {
    if !common::mount::fuse_ready() {
        return;
    }
    let fixtures = common::fixtures_dir().join("references");
    let npy = std::fs::read(fixtures.join("expected/parquet/temp.npy")).unwrap();
    let temp = &npy[common::npy_header_len(&npy)..];
    // temp is (4, 8, 10) float32: temp[1:3,2] is rows t = 1, 2 at lat 2, all 10 lon.
    let mut want = Vec::new();
    for t in 1..3 {
        let at = ((t * 8 + 2) * 10) * 4;
        want.extend_from_slice(&temp[at..at + 40]);
    }
    let m = common::mount::Mount::new(&fixtures.join("combined.parq"), &[]);
    assert_eq!(std::fs::read(m.join("temp[1:3,2]")).unwrap(), want);
    assert_eq!(
        std::fs::read(m.join("temp[time=3]")).unwrap(),
        temp[3 * 320..]
    );
}

#[test]
fn a_reference_whose_offset_passes_2_64_is_refused_not_wrapped() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("nc")).unwrap();
    let nc = common::fixtures_dir().join("references/nc/day1.nc");
    std::fs::copy(nc, dir.path().join("nc/day1.nc")).unwrap();
    // 616 bytes short of 2^64: a part from 980 of it would wrap to byte 364 of the file.
    let doc = json!({"version": 1, "refs": {
        ".zgroup": "{\"zarr_format\": 2}",
        "x": ["nc/day1.nc", u64::MAX - 615, 1000],
    }});
    let path = dir.path().join("refs.json");
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    let store =
        zarrfs::store::open_with(path.to_str().unwrap(), &RemoteOptions::default()).unwrap();
    let got = store.get_range("x", 980, 20);
    assert!(got.is_err(), "{got:?}");
}

#[test]
fn a_parquet_record_file_too_short_for_a_chunk_is_an_error_not_fill() {
    let dir = tempfile::tempdir().unwrap();
    let refs = dir.path().join("combined.parq");
    let fixtures = common::fixtures_dir().join("references");
    for part in ["combined.parq", "nc"] {
        for entry in walkdir(&fixtures.join(part)) {
            let to = dir.path().join(entry.strip_prefix(&fixtures).unwrap());
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(&entry, to).unwrap();
        }
    }
    // Records of 4 chunks where the files hold 3: chunk 3 of `temp` (1.1.0) would be row 3 of
    // refs.0.parq, which has none.
    let zmeta = refs.join(".zmetadata");
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&zmeta).unwrap()).unwrap();
    doc["record_size"] = json!(4);
    std::fs::write(&zmeta, serde_json::to_vec(&doc).unwrap()).unwrap();
    let store =
        zarrfs::store::open_with(refs.to_str().unwrap(), &RemoteOptions::default()).unwrap();
    let first = store.get("temp/0.0.0");
    assert!(
        matches!(first, Ok(Some(_))),
        "{:?}",
        first.map(|o| o.map(|o| o.bytes.len()))
    );
    let got = store.get("temp/1.1.0");
    assert!(got.is_err(), "{:?}", got.map(|o| o.map(|o| o.bytes.len())));
}

#[test]
fn an_absent_parquet_record_file_over_http_is_asked_again_then_kept_absent() {
    let root = tempfile::tempdir().unwrap();
    let fixtures = common::fixtures_dir().join("references");
    for part in ["combined.parq", "nc"] {
        for entry in walkdir(&fixtures.join(part)) {
            let to = root.path().join(entry.strip_prefix(&fixtures).unwrap());
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(&entry, to).unwrap();
        }
    }
    // Records of 3 chunks: temp's chunks 3 to 5 (1.1.0, 2.0.0, 2.1.0) are in the file removed.
    std::fs::remove_file(root.path().join("combined.parq/temp/refs.1.parq")).unwrap();
    let http = servers::http_server(root.path());
    let proxy = servers::fault_proxy(&http);
    let url = format!("{}/combined.parq", proxy.url);
    let store = zarrfs::store::open_with(&url, &RemoteOptions::default()).unwrap();
    for _ in 0..2 {
        for chunk in ["temp/1.1.0", "temp/2.0.0", "temp/2.1.0"] {
            assert!(store.get(chunk).unwrap().is_none(), "{chunk}");
        }
    }
    // Asked for again after the pauses before it counts as absent, then kept.
    assert_eq!(
        servers::fault(&proxy, "count/temp/refs.1.parq"),
        zarrfs::store::absent::ASKS as u64
    );
    // The files there are read once too.
    assert!(store.get("temp/0.0.0").unwrap().is_some());
    assert!(store.get("temp/0.1.0").unwrap().is_some());
    assert_eq!(servers::fault(&proxy, "count/temp/refs.0.parq"), 1);
}

/// Over plain HTTP (no listing to vouch for it), one 404 for a record file is not kept as its
/// absence: asked again after a pause, the file is read and its chunks are served.
#[test]
fn one_404_for_a_parquet_record_file_over_http_is_not_kept_as_absent() {
    let fixtures = common::fixtures_dir().join("references");
    let direct = zarrfs::store::open_with(
        fixtures.join("combined.parq").to_str().unwrap(),
        &RemoteOptions::default(),
    )
    .unwrap();
    let http = servers::http_server(&fixtures);
    let proxy = servers::fault_proxy(&http);
    let url = format!("{}/combined.parq", proxy.url);
    let store = zarrfs::store::open_with(&url, &RemoteOptions::default()).unwrap();
    servers::fault(&proxy, "gone/1/combined.parq/temp/refs.1.parq");
    for chunk in ["temp/1.1.0", "temp/2.0.0", "temp/2.1.0"] {
        let got = store.get(chunk).unwrap().expect(chunk).bytes;
        assert_eq!(got, direct.get(chunk).unwrap().unwrap().bytes, "{chunk}");
    }
    assert_eq!(servers::fault(&proxy, "count/temp/refs.1.parq"), 2);
}

/// Every file under `dir`.
fn walkdir(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walkdir(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn kerchunk_paths_are_verbatim_a_percent_sign_is_part_of_the_name() {
    let dir = tempfile::tempdir().unwrap();
    let literal: Vec<u8> = (0..40).collect();
    std::fs::write(dir.path().join("pct%41.bin"), &literal).unwrap();
    std::fs::write(dir.path().join("pctA.bin"), vec![100u8; 40]).unwrap();
    let absolute = format!("file://{}/pct%41.bin", dir.path().display());
    let doc = json!({"version": 1, "refs": {
        ".zgroup": "{\"zarr_format\": 2}",
        "x": ["pct%41.bin", 0, 40],
        "y": [absolute, 0, 40],
    }});
    let path = dir.path().join("refs.json");
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    let store =
        zarrfs::store::open_with(path.to_str().unwrap(), &RemoteOptions::default()).unwrap();
    for key in ["x", "y"] {
        assert_eq!(
            store.get_range(key, 0, 40).unwrap(),
            Some(literal.clone()),
            "{key}"
        );
    }
}

#[test]
fn a_target_behind_a_link_reads_once_the_link_or_its_destination_is_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = common::fixtures_dir().join("references");
    let (refs_dir, outside) = (dir.path().join("refs"), dir.path().join("outside"));
    std::fs::create_dir_all(&refs_dir).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::copy(fixtures.join("nc/day1.nc"), outside.join("day1.nc")).unwrap();
    std::os::unix::fs::symlink(&outside, refs_dir.join("nc")).unwrap();
    std::fs::copy(fixtures.join("single.json"), refs_dir.join("refs.json")).unwrap();
    let refs = refs_dir.join("refs.json");
    let temp = expected_data("temp");
    let read = |allow: &[&Path]| {
        let v = open_view(&refs, allow);
        let ino = v.resolve("temp").unwrap();
        v.read(ino, 0, temp.len() as u32)
    };
    // The link leads out of the references' directory: refused, until either name is allowed.
    assert!(matches!(read(&[]), Err(ViewError::Io(_))));
    assert_eq!(read(&[&refs_dir.join("nc")]).unwrap(), temp);
    assert_eq!(read(&[&outside]).unwrap(), temp);
}

/// A v2 `.zarray` of `n` uint8 in one chunk, uncompressed.
fn bytes_array(n: u64) -> String {
    json!({"zarr_format": 2, "shape": [n], "chunks": [n], "dtype": "|u1", "compressor": null,
           "fill_value": 0, "order": "C", "filters": null})
    .to_string()
}

#[test]
fn the_references_directory_swapped_for_a_link_after_opening_shows_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let (proj, elsewhere) = (dir.path().join("proj"), dir.path().join("elsewhere"));
    std::fs::create_dir_all(elsewhere.join("etc")).unwrap();
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::write(elsewhere.join("etc/shadow"), b"SECRET").unwrap();
    std::fs::write(proj.join("data.bin"), b"public").unwrap();
    let doc = json!({
        ".zgroup": "{\"zarr_format\": 2}",
        "a/.zarray": bytes_array(6), "a/0": ["etc/shadow"],
        "b/.zarray": bytes_array(6), "b/0": ["data.bin"],
    });
    std::fs::write(proj.join("refs.json"), serde_json::to_vec(&doc).unwrap()).unwrap();
    let v = open_view(&proj.join("refs.json"), &[]);
    // Once opened, the directory's owner renames it away and puts a link to another tree in
    // its place, where `etc/shadow` is.
    std::fs::rename(&proj, dir.path().join("proj.real")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &proj).unwrap();
    let a = v.resolve("a").unwrap();
    let got = v.read(a, 0, 6);
    assert!(matches!(got, Err(ViewError::Io(_))), "{got:?}");
    // The references' targets are read from the directory opened, wherever it now is.
    let b = v.resolve("b").unwrap();
    assert_eq!(v.read(b, 0, 6).unwrap(), b"public");
}

#[test]
fn allow_target_slash_allows_every_local_path() {
    let dir = tempfile::tempdir().unwrap();
    let (refs_dir, other) = (dir.path().join("refs"), dir.path().join("other"));
    std::fs::create_dir_all(&refs_dir).unwrap();
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("x.bin"), b"abcdefgh").unwrap();
    let target = other.join("x.bin").display().to_string();
    let doc = json!({".zgroup": "{\"zarr_format\": 2}", "x": [target, 2, 4]});
    let path = refs_dir.join("refs.json");
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    let open = |allow: &[&str]| {
        let remote = RemoteOptions {
            allow_targets: allow.iter().map(|s| s.to_string()).collect(),
            ..RemoteOptions::default()
        };
        zarrfs::store::open_with(path.to_str().unwrap(), &remote).unwrap()
    };
    assert!(open(&[]).get_range("x", 0, 4).is_err());
    for root in ["/", "file:///"] {
        assert_eq!(
            open(&[root]).get_range("x", 0, 4).unwrap(),
            Some(b"cdef".to_vec()),
            "{root}"
        );
    }
}

/// A reference set with a malformed reference in each way: its other keys read, the bad ones
/// fail alone.
fn malformed_references(dir: &Path) -> PathBuf {
    let doc = json!({"version": 1, "templates": {"u": "data.bin"},
        "refs": {
            ".zgroup": "{\"zarr_format\": 2}",
            "a/.zarray": "{\"zarr_format\": 2, \"shape\": [8], \"chunks\": [4], \"dtype\": \"|u1\", \"compressor\": null, \"fill_value\": 0, \"order\": \"C\", \"filters\": null}",
            "a/0": "base64:AAECAw==",
            "a/1": "base64:!!not base64",
            "b/.zarray": bytes_array(4),
            "b/0": ["{{u}}", 1],
            "c/.zarray": bytes_array(4),
            "c/0": ["{{u}}", 4, 4],
        },
        "gen": [{"key": "g{{i}}/0", "url": "{{u}}", "offset": "{{ 8 // i }}", "length": "4",
                 "dimensions": {"i": [0, 2]}}]});
    let mut refs = doc["refs"].as_object().unwrap().clone();
    for g in ["g0", "g2"] {
        refs.insert(format!("{g}/.zarray"), json!(bytes_array(4)));
    }
    let mut doc = doc;
    doc["refs"] = Value::Object(refs);
    std::fs::write(dir.join("data.bin"), (0u8..16).collect::<Vec<u8>>()).unwrap();
    let path = dir.join("refs.json");
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    path
}

#[test]
fn a_malformed_reference_fails_its_own_key_only() {
    let dir = tempfile::tempdir().unwrap();
    let v = open_view(&malformed_references(dir.path()), &[]);
    let a = v.resolve("a").unwrap();
    assert_eq!(v.read(a, 0, 4).unwrap(), [0, 1, 2, 3]);
    assert!(matches!(v.read(a, 4, 4), Err(ViewError::Io(_))));
    let b = v.resolve("b").unwrap();
    assert!(matches!(v.read(b, 0, 4), Err(ViewError::Io(_))));
    let c = v.resolve("c").unwrap();
    assert_eq!(v.read(c, 0, 4).unwrap(), [4, 5, 6, 7]);
    // `8 // i` renders for i = 2 (offset 4), not for i = 0.
    let g2 = v.resolve("g2").unwrap();
    assert_eq!(v.read(g2, 0, 4).unwrap(), [4, 5, 6, 7]);
    let g0 = v.resolve("g0").unwrap();
    assert!(matches!(v.read(g0, 0, 4), Err(ViewError::Io(_))));
}

#[test]
fn a_malformed_reference_is_eio_with_a_log_line_naming_its_key_through_fuse() {
    if !common::mount::fuse_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let m = common::mount::Mount::new(&malformed_references(dir.path()), &[]);
    assert_eq!(std::fs::read(m.join("a[:4]")).unwrap(), [0, 1, 2, 3]);
    assert_eq!(std::fs::read(m.join("c")).unwrap(), [4, 5, 6, 7]);
    for bad in ["a[4:]", "b"] {
        let err = std::fs::read(m.join(bad)).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EIO), "{bad}");
    }
    let (_, log) = m.stop();
    for (key, cause) in [("a/1", "base64"), ("b/0", "[url] or [url, offset, length]")] {
        assert!(
            log.lines().any(
                |l| l.contains(&format!("key {key}: malformed reference")) && l.contains(cause)
            ),
            "{key}: {log}"
        );
    }
}

#[test]
fn version_1_0_is_version_1_and_an_unknown_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("data.bin"), b"0123456789").unwrap();
    let path = dir.path().join("refs.json");
    let open = |version: Value| {
        let doc = json!({"version": version, "templates": {"u": "data.bin"},
            "refs": {".zgroup": "{\"zarr_format\": 2}", "x": ["{{u}}", 2, 3]}});
        std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
        zarrfs::store::open_with(path.to_str().unwrap(), &RemoteOptions::default())
    };
    let store = open(json!(1.0)).unwrap();
    assert_eq!(store.get_range("x", 0, 3).unwrap(), Some(b"234".to_vec()));
    for unknown in [json!("1"), json!(2), json!(0)] {
        let err = open(unknown.clone()).err().unwrap().to_string();
        assert!(
            err.contains("unknown reference set version"),
            "{unknown}: {err}"
        );
    }
}

/// A JSON reference set in `dir` whose keys refer to `refs` (key to `[url, offset, length]`).
fn http_references(dir: &Path, refs: &[(&str, String, u64, u64)]) -> PathBuf {
    let mut doc = json!({".zgroup": "{\"zarr_format\": 2}"});
    for (key, url, offset, length) in refs {
        doc[*key] = json!([url, offset, length]);
    }
    let path = dir.join("refs.json");
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    path
}

fn open_allowing(path: &Path, allow: &str) -> Box<dyn zarrfs::store::Store> {
    let remote = RemoteOptions {
        allow_targets: vec![allow.to_string()],
        ..RemoteOptions::default()
    };
    zarrfs::store::open_with(path.to_str().unwrap(), &remote).unwrap()
}

#[test]
fn a_target_s_redirect_is_followed_only_into_the_places_allowed() {
    let (data, other) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::create_dir(data.path().join("new")).unwrap();
    std::fs::write(data.path().join("new/data.bin"), b"datadata").unwrap();
    std::fs::write(other.path().join("secret.bin"), b"SECRET!!").unwrap();
    let elsewhere = servers::quirky_http_server(other.path(), &[]);
    let rules = format!("redirect=/old/>/new/,/moved/>{}/", elsewhere.url);
    let server = servers::quirky_http_server(data.path(), &[&rules]);
    let dir = tempfile::tempdir().unwrap();
    let refs = http_references(
        dir.path(),
        &[
            ("x", format!("{}/old/data.bin", server.url), 0, 8),
            ("y", format!("{}/moved/secret.bin", server.url), 0, 8),
        ],
    );
    let store = open_allowing(&refs, &server.url);
    // Within the allowed server: followed.
    assert_eq!(
        store.get_range("x", 0, 8).unwrap(),
        Some(b"datadata".to_vec())
    );
    // To another server: not followed, and why said.
    let got = store.get_range("y", 0, 8);
    let err = got.as_ref().map_err(|e| e.to_string()).unwrap_err();
    assert!(
        err.contains(&format!("redirected to {}/secret.bin", elsewhere.url)),
        "{got:?}"
    );
}

#[test]
fn an_http_target_or_redirect_climbing_out_of_its_place_by_escaped_dots_is_refused() {
    // A server that decodes and normalises paths reads `/pub/..%2Fprivate/x` as `/private/x`.
    let root = tempfile::tempdir().unwrap();
    for dir in ["pub", "private"] {
        std::fs::create_dir(root.path().join(dir)).unwrap();
    }
    std::fs::write(root.path().join("pub/data.bin"), b"datadata").unwrap();
    std::fs::write(root.path().join("private/secret.bin"), b"SECRET!!").unwrap();
    let rules = "redirect=/pub/go/>/pub/,/pub/out/>/pub/..%2Fprivate/";
    let server = servers::quirky_http_server(root.path(), &["decode-paths", rules]);
    let dir = tempfile::tempdir().unwrap();
    let url = &server.url;
    let refs = http_references(
        dir.path(),
        &[
            ("x", format!("{url}/pub/..%2Fprivate/secret.bin"), 0, 8),
            ("y", format!("{url}/pub/out/secret.bin"), 0, 8),
            ("z", format!("{url}/pub/go/data.bin"), 0, 8),
        ],
    );
    let store = open_allowing(&refs, &format!("{url}/pub"));
    assert_eq!(
        store.get_range("z", 0, 8).unwrap(),
        Some(b"datadata".to_vec())
    );
    let err = store.get_range("x", 0, 8).unwrap_err().to_string();
    assert!(err.contains("decodes to `.` or `..`"), "{err}");
    // The redirect's target climbs out: not followed.
    let err = store.get_range("y", 0, 8).unwrap_err().to_string();
    assert!(
        err.contains(&format!("redirected to {url}/pub/..%2Fprivate/secret.bin")),
        "{err}"
    );
}

#[test]
fn an_http_target_is_requested_as_written_query_and_escapes_included() {
    let root = tempfile::tempdir().unwrap();
    // The server names files by their paths as sent, escapes and all.
    std::fs::write(
        root.path().join("caf%E9.nc"),
        (0u8..16).collect::<Vec<u8>>(),
    )
    .unwrap();
    std::fs::write(
        root.path().join("a%2Fb.bin"),
        (16u8..32).collect::<Vec<u8>>(),
    )
    .unwrap();
    let query = "sig=x%2Fy&se=1";
    let server = servers::quirky_http_server(root.path(), &[&format!("query={query}")]);
    let port = server.port();
    let dir = tempfile::tempdir().unwrap();
    let refs = http_references(
        dir.path(),
        &[
            ("c", format!("{}/caf%E9.nc?{query}", server.url), 0, 16),
            ("s", format!("{}/a%2Fb.bin?{query}", server.url), 4, 8),
            (
                "gone",
                format!("http://me:SECRET@127.0.0.1:{port}/none.bin?{query}"),
                0,
                4,
            ),
        ],
    );
    let store = open_allowing(&refs, &server.url);
    assert_eq!(
        store.get_range("c", 0, 16).unwrap(),
        Some((0u8..16).collect())
    );
    assert_eq!(
        store.get_range("s", 0, 8).unwrap(),
        Some((20u8..28).collect())
    );
    // Neither the query nor the password is shown.
    let err = store.get_range("gone", 0, 4).unwrap_err().to_string();
    assert!(
        err.contains("none.bin") && err.contains("does not exist"),
        "{err}"
    );
    assert!(!err.contains("SECRET") && !err.contains("sig="), "{err}");
}
