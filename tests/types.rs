//! What zarr-python 3.4 and tensorstore write (issue 20; fixtures by
//! scripts/make_types_fixtures.py): tensorstore's `int4`/`int2` (low bits only) and `bfloat16`
//! in v3 and v2, the `struct` data type, the `scale_offset` and `cast_value` codecs, float16
//! through numcodecs' `fixedscaleoffset`, codecs before sharding, metadata zarr-python repairs.
//! Read byte-exact through the view, then through a real FUSE mount; and the extension types'
//! corner cases (named by objects, narrow floats, netCDF and previews, unknown fields) on
//! small stores through the view.

mod common;

const MANIFEST: &str = "types/manifest.json";

#[test]
fn new_types_read_exactly_through_the_view() {
    common::check_all(MANIFEST, 4, common::view_check::check_store);
}

#[test]
fn new_types_read_exactly_through_fuse() {
    if !common::mount::fuse_ready() {
        return;
    }
    common::check_all(MANIFEST, 4, common::fuse_check::check_store);
}

#[test]
fn strings_in_shards_read_exactly_through_the_view() {
    common::check_all(common::SHARDED_STRINGS, 1, common::view_check::check_store);
}

#[test]
fn strings_in_shards_read_exactly_through_fuse() {
    if !common::mount::fuse_ready() {
        return;
    }
    common::check_all(common::SHARDED_STRINGS, 1, common::fuse_check::check_store);
}

/// The rectilinear store, its expected `A` bytes by array, and each array's shape.
fn rectilinear_case(array: &str) -> (std::path::PathBuf, Vec<u8>, Vec<u64>) {
    let case = common::load_manifest(MANIFEST)
        .into_iter()
        .find(|c| c.name == "rectilinear_v3")
        .unwrap();
    let node = case.nodes.iter().find(|n| n.path == array).unwrap();
    let (npy, data) = common::expected_bytes(node);
    (case.store.clone(), data, common::npy_descr_shape(&npy).1)
}

/// The whole file `path` of `view`.
fn read_all(view: &zarrfs::view::View, path: &str) -> Vec<u8> {
    let ino = view.resolve(path).unwrap();
    let size = view.getattr(ino).unwrap().size;
    let fh = view.open(ino).unwrap();
    let bytes = view.read(ino, 0, size as u32).unwrap();
    view.release(fh);
    assert_eq!(bytes.len() as u64, size, "{path}");
    bytes
}

/// Elements `rows` x `cols` (numpy `start:stop:step` each) of a C-order 2-d array of `elem`-byte
/// elements with `ncols` columns.
fn slice2(
    data: &[u8],
    ncols: u64,
    elem: usize,
    rows: (u64, u64, u64),
    cols: (u64, u64, u64),
) -> Vec<u8> {
    let mut out = Vec::new();
    for r in (rows.0..rows.1).step_by(rows.2 as usize) {
        for c in (cols.0..cols.1).step_by(cols.2 as usize) {
            let at = (r * ncols + c) as usize * elem;
            out.extend_from_slice(&data[at..at + elem]);
        }
    }
    out
}

#[test]
fn rectilinear_slices_read_exactly_through_the_view() {
    let options = zarrfs::meta::LoadOptions::default();
    for (array, elem, rows, cols) in [
        ("grid2d", 4, (1, 9, 2), (1, 6, 1)),
        ("thin", 1, (0, 5, 2), (2, 6, 3)),
        ("sharded", 2, (3, 12, 4), (0, 8, 3)),
    ] {
        let (store, data, shape) = rectilinear_case(array);
        let view =
            zarrfs::view::from_location(store.to_str().unwrap(), 64 << 20, &options).unwrap();
        let name = format!(
            "{array}[{}:{}:{},{}:{}:{}]",
            rows.0, rows.1, rows.2, cols.0, cols.1, cols.2
        );
        let want = slice2(&data, shape[1], elem, rows, cols);
        assert_eq!(read_all(&view, &name), want, "{name}");
    }
    let (store, data, _) = rectilinear_case("runs");
    let view = zarrfs::view::from_location(store.to_str().unwrap(), 64 << 20, &options).unwrap();
    let want: Vec<u8> = (3..17)
        .step_by(3)
        .flat_map(|i| data[i * 8..i * 8 + 8].to_vec())
        .collect();
    assert_eq!(read_all(&view, "runs[3:17:3]"), want);
}

/// `.ncstream` of the rectilinear store holds every array's values big-endian, and its header
/// declares them.
#[test]
fn rectilinear_arrays_show_in_the_netcdf_views() {
    let (store, data, _) = rectilinear_case("grid2d");
    let options = zarrfs::meta::LoadOptions::default();
    let view = zarrfs::view::from_location(store.to_str().unwrap(), 64 << 20, &options).unwrap();
    let cdl = String::from_utf8(read_all(&view, ".header.cdl")).unwrap();
    assert!(
        cdl.contains("\tint grid2d(_Anonymous_Dim_10, _Anonymous_Dim_7) ;"),
        "{cdl}"
    );
    let stream = read_all(&view, ".ncstream");
    let big: Vec<u8> = data
        .chunks(4)
        .flat_map(|e| e.iter().rev().copied())
        .collect();
    assert!(
        stream.windows(big.len()).any(|w| w == big),
        ".ncstream lacks grid2d's values"
    );
}

/// With a cache directory, the arrays are decoded once into backing files and read back from
/// them after a remount, byte for byte.
#[test]
fn rectilinear_arrays_read_exactly_through_the_cache_directory() {
    let (store, _, _) = rectilinear_case("grid2d");
    let cache = tempfile::tempdir().unwrap();
    let location = store.to_str().unwrap();
    for round in 0..2 {
        let dir = zarrfs::backing::BackingDir::open(cache.path(), Some(1 << 30)).unwrap();
        let s: std::sync::Arc<dyn zarrfs::store::Store> =
            std::sync::Arc::from(zarrfs::store::open(location).unwrap());
        let options = zarrfs::meta::LoadOptions::default();
        let mut view = zarrfs::view::from_store(s.clone(), location, 64 << 20, &options).unwrap();
        view.set_backing_dir(dir.clone(), s, location);
        for array in ["grid2d", "runs", "thin", "sharded"] {
            let (_, data, _) = rectilinear_case(array);
            assert_eq!(read_all(&view, array), data, "{array}, round {round}");
        }
        if round == 1 {
            assert!(
                dir.hit_bytes() > 0,
                "nothing was read from the backing files"
            );
        }
    }
}

/// Each stored chunk of a rectilinear grid is fetched (and decoded) once for all the read
/// chunks it holds, while the cache can keep it: `grid2d`'s edges `[3, 3, 4]` × `[2, 5]` have
/// a greatest common divisor of 1, so its 6 stored chunks (one of them absent) hold 70
/// one-element read chunks; `thin`'s 4 hold 10, `runs`' 6 hold 10.
#[test]
fn rectilinear_stored_chunks_are_fetched_once_for_all_their_read_chunks() {
    for (array, stored) in [("grid2d", 6), ("thin", 4), ("runs", 6)] {
        let (store, data, _) = rectilinear_case(array);
        let location = store.to_str().unwrap();
        let (counted, counts) =
            zarrfs::store::CountingStore::new(zarrfs::store::open(location).unwrap());
        let options = zarrfs::meta::LoadOptions::default();
        let view =
            zarrfs::view::from_store(std::sync::Arc::new(counted), location, 64 << 20, &options)
                .unwrap();
        let before = counts.requests();
        assert_eq!(read_all(&view, array), data, "{array}");
        let requests = counts.requests() - before;
        assert!(
            requests <= stored,
            "{array}: {requests} requests for {stored} stored chunks"
        );
    }
}

/// A copy of the fixture store `name` (under tests/fixtures/types) in a temporary directory.
fn copy_of(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let from = common::fixtures_dir().join("types").join(name);
    common::servers::copy_tree(&from, dir.path());
    dir
}

/// Rewrites the JSON document at `path` with `edit`.
fn edit_json(path: &std::path::Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut doc: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    edit(&mut doc);
    std::fs::write(path, doc.to_string()).unwrap();
}

/// The view of the store in `dir`.
fn view_of_dir(dir: &std::path::Path) -> zarrfs::view::View {
    let options = zarrfs::meta::LoadOptions::default();
    zarrfs::view::from_location(dir.to_str().unwrap(), 64 << 20, &options).unwrap()
}

/// The view of a memory store holding `items` (key, bytes).
fn view_of_items(items: &[(&str, Vec<u8>)]) -> zarrfs::view::View {
    let mut store = zarrfs::store::MemoryStore::new();
    for (key, value) in items {
        store.insert(*key, value.clone());
    }
    let options = zarrfs::meta::LoadOptions::default();
    zarrfs::view::from_store(std::sync::Arc::new(store), "mem", 64 << 20, &options).unwrap()
}

/// The whole file `path` of `view`, or the error opening or reading it gives.
fn try_read(view: &zarrfs::view::View, path: &str) -> Result<Vec<u8>, zarrfs::view::ViewError> {
    let ino = view.resolve(path)?;
    let size = view.getattr(ino)?.size;
    let fh = view.open(ino)?;
    let bytes = view.read(ino, 0, size as u32);
    view.release(fh);
    bytes
}

/// An extension data type written as a named configuration (`{"name": "int4"}`) is the same
/// type as its bare name: tensorstore's `int4` -8 (`0x08`) reads -8, not 8.
#[test]
fn extension_types_named_by_objects_read_as_by_name() {
    let case = common::load_manifest(MANIFEST)
        .into_iter()
        .find(|c| c.name == "tensorstore_v3")
        .unwrap();
    let dir = copy_of("tensorstore_v3.zarr");
    for (array, named) in [
        ("int4", serde_json::json!({"name": "int4"})),
        (
            "int2",
            serde_json::json!({"name": "int2", "configuration": {}}),
        ),
        (
            "bfloat16",
            serde_json::json!({"name": "bfloat16", "configuration": {}}),
        ),
    ] {
        edit_json(&dir.path().join(array).join("zarr.json"), |doc| {
            doc["data_type"] = named
        });
    }
    let view = view_of_dir(dir.path());
    for array in ["int4", "int2", "bfloat16"] {
        let want = common::expected_data(&case, array);
        assert_eq!(read_all(&view, array), want, "{array}");
    }
}

/// A v3 array document with one chunk of `shape` elements and `codecs`.
fn v3_array(shape: &[u64], data_type: serde_json::Value, codecs: serde_json::Value) -> Vec<u8> {
    serde_json::json!({"zarr_format": 3, "node_type": "array", "shape": shape,
        "data_type": data_type, "fill_value": 0, "codecs": codecs,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": shape}}})
    .to_string()
    .into_bytes()
}

/// The group document of a v3 root.
const V3_ROOT: &str = r#"{"zarr_format": 3, "node_type": "group"}"#;

/// `float4_e2m1fn` (`0bXXXXSEEM`) and the `float6_*` types (`0bXXSEEMMM`) stored by `bytes`:
/// the upper bits are ignored (zarr-extensions), so `0xf7` is `float4_e2m1fn` 6.0, `0x07`.
/// Also: `packbits` on `uint4` named by an object gets its 4-bit width.
#[test]
fn narrow_types_read_their_own_bits() {
    let view = view_of_items(&[
        ("zarr.json", V3_ROOT.into()),
        (
            "f4/zarr.json",
            v3_array(&[4], "float4_e2m1fn".into(), serde_json::json!(["bytes"])),
        ),
        ("f4/c/0", vec![0xf7, 0x19, 0x80, 0x0f]),
        (
            "f6/zarr.json",
            v3_array(&[3], "float6_e3m2fn".into(), serde_json::json!(["bytes"])),
        ),
        ("f6/c/0", vec![0xdf, 0x40, 0x3f]),
        (
            "u4/zarr.json",
            v3_array(
                &[3],
                serde_json::json!({"name": "uint4"}),
                serde_json::json!(["packbits"]),
            ),
        ),
        ("u4/c/0", vec![0x21, 0x0f]),
    ]);
    assert_eq!(read_all(&view, "f4"), [0x07, 0x09, 0x00, 0x0f]);
    assert_eq!(read_all(&view, "f6"), [0x1f, 0x00, 0x3f]);
    assert_eq!(read_all(&view, "u4"), [1, 2, 15]);
}

/// zarr-extensions' `complex_float32` and `complex_float64` are `complex64` and `complex128`.
#[test]
fn complex_aliases_read_as_complex() {
    let values: Vec<u8> = [1.5f64, -2.0, 0.25, 8.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let halves: Vec<u8> = [1.5f32, -2.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let bytes = serde_json::json!([{"name": "bytes", "configuration": {"endian": "little"}}]);
    let view = view_of_items(&[
        ("zarr.json", V3_ROOT.into()),
        (
            "c8/zarr.json",
            v3_array(&[1], "complex_float32".into(), bytes.clone()),
        ),
        ("c8/c/0", halves.clone()),
        (
            "c16/zarr.json",
            v3_array(&[2], "complex_float64".into(), bytes),
        ),
        ("c16/c/0", values.clone()),
    ]);
    assert_eq!(read_all(&view, "c8"), halves);
    assert_eq!(read_all(&view, "c16"), values);
    let npy = read_all(&view, "c16.npy");
    assert!(String::from_utf8_lossy(&npy).contains("'<c16'"));
}

/// The extension floats are served as their bits, which are not their values: the netCDF views
/// leave them out (named in a comment) and they have no picture, while `int4`, served as its
/// values, shows as `byte` and has one.
#[test]
fn floats_served_as_bits_have_no_netcdf_variable_and_no_picture() {
    let codecs = serde_json::json!(["bytes"]);
    let view = view_of_items(&[
        ("zarr.json", V3_ROOT.into()),
        (
            "bf16/zarr.json",
            v3_array(&[2, 3], "bfloat16".into(), codecs.clone()),
        ),
        (
            "f8/zarr.json",
            v3_array(
                &[2, 3],
                serde_json::json!({"name": "float8_e4m3"}),
                codecs.clone(),
            ),
        ),
        (
            "i4/zarr.json",
            v3_array(&[2, 3], "int4".into(), codecs.clone()),
        ),
        ("u2/zarr.json", v3_array(&[2, 3], "uint16".into(), codecs)),
    ]);
    for (array, shown) in [("bf16", false), ("f8", false), ("i4", true), ("u2", true)] {
        let png = view.resolve(&format!("{array}.png")).is_ok();
        assert_eq!(png, shown, "{array}.png");
    }
    let cdl = String::from_utf8(read_all(&view, ".header.cdl")).unwrap();
    for line in [
        "\tbyte i4(",
        "\tushort u2(",
        "variable bf16 left out",
        "variable f8 left out",
    ] {
        assert!(cdl.contains(line), "{line:?} not in\n{cdl}");
    }
    assert!(!cdl.contains(" bf16(") && !cdl.contains(" f8("), "{cdl}");
    // tensorstore's v2 `bfloat16` dtype too.
    let v2 = common::fixtures_dir().join("types/tensorstore_v2.zarr");
    let cdl = String::from_utf8(read_all(&view_of_dir(&v2), ".header.cdl")).unwrap();
    assert!(cdl.contains("variable bfloat16 left out"), "{cdl}");
    assert!(cdl.contains("\tbyte int4("), "{cdl}");
}

/// A field the v3 spec does not define makes the array unreadable, unless it is an object with
/// `"must_understand": false` (zarr-python refuses it too); its metadata still shows.
#[test]
fn unknown_array_fields_are_refused_unless_they_may_be_ignored() {
    let with = |key: &str, value: serde_json::Value| {
        let mut doc: serde_json::Value = serde_json::from_slice(&v3_array(
            &[2],
            "uint8".into(),
            serde_json::json!(["bytes"]),
        ))
        .unwrap();
        doc[key] = value;
        doc.to_string().into_bytes()
    };
    let view = view_of_items(&[
        ("zarr.json", V3_ROOT.into()),
        (
            "must/zarr.json",
            with(
                "sparse_layout",
                serde_json::json!({"must_understand": true}),
            ),
        ),
        ("must/c/0", vec![1, 2]),
        ("bare/zarr.json", with("chunk_memory_layout", "C".into())),
        ("bare/c/0", vec![1, 2]),
        (
            "may/zarr.json",
            with("note", serde_json::json!({"must_understand": false})),
        ),
        ("may/c/0", vec![1, 2]),
    ]);
    for (array, field) in [("must", "sparse_layout"), ("bare", "chunk_memory_layout")] {
        assert!(
            matches!(try_read(&view, array), Err(zarrfs::view::ViewError::Io(_))),
            "{array}"
        );
        // Its metadata is still shown, the field it was refused for included.
        let sidecar = try_read(&view, &format!("{array}.json")).unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&sidecar).unwrap();
        assert_eq!(doc["node_type"], "array", "{array}");
        assert!(doc.get(field).is_some(), "{array}: {doc}");
    }
    assert_eq!(read_all(&view, "may"), [1, 2]);
}
