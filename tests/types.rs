//! What zarr-python 3.4 and tensorstore write (issue 20; fixtures by
//! scripts/make_types_fixtures.py): tensorstore's `int4`/`int2` (low bits only) and `bfloat16`
//! in v3 and v2, the `struct` data type, the `scale_offset` and `cast_value` codecs. Read
//! byte-exact through the view, then through a real FUSE mount.

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
