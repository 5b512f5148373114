//! Bad input never takes the mount down: absurd shapes, corrupt or truncated chunks, unknown
//! codecs and types give EIO for that node only, and healthy neighbours keep reading.

use std::sync::Arc;
use zarrfs::meta::LoadOptions;
use zarrfs::store::MemoryStore;
use zarrfs::view::{IoCause, View, ViewError};

fn v3_array(shape: &str, chunks: &str, dtype: &str, codecs: &str) -> String {
    format!(
        r#"{{"zarr_format": 3, "node_type": "array", "shape": {shape}, "data_type": "{dtype}",
            "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": {chunks}}}}},
            "chunk_key_encoding": {{"name": "default"}}, "fill_value": 7, "codecs": {codecs}}}"#
    )
}

const RAW: &str = r#"[{"name": "bytes", "configuration": {"endian": "little"}}]"#;
const ZSTD: &str =
    r#"[{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd"}]"#;

fn view_of(store: MemoryStore) -> View {
    view_with_cache(store, 1 << 20)
}

fn view_with_cache(store: MemoryStore, cache_bytes: u64) -> View {
    let store: Arc<dyn zarrfs::store::Store> = Arc::new(store);
    zarrfs::view::from_store(store, "root", cache_bytes, &LoadOptions::default()).unwrap()
}

fn io(cause: IoCause) -> ViewError {
    ViewError::Io(cause)
}

fn read_all(view: &View, path: &str) -> Result<Vec<u8>, ViewError> {
    let ino = view.resolve(path)?;
    view.open(ino)?;
    let size = view.getattr(ino)?.size;
    view.read(ino, 0, size as u32)
}

#[test]
fn one_bad_node_does_not_spoil_the_others() {
    let mut s = MemoryStore::new();
    s.insert("zarr.json", r#"{"zarr_format": 3, "node_type": "group"}"#);
    s.insert("good/zarr.json", v3_array("[4]", "[2]", "uint8", RAW));
    s.insert("good/c/0", vec![1, 2]);
    s.insert(
        "huge_shape/zarr.json",
        v3_array(
            "[4611686018427387904, 4611686018427387904]",
            "[1, 1]",
            "uint8",
            RAW,
        ),
    );
    s.insert("zero_chunk/zarr.json", v3_array("[4]", "[0]", "uint8", RAW));
    s.insert(
        "negative_chunk/zarr.json",
        v3_array("[4]", "[-2]", "uint8", RAW),
    );
    s.insert(
        "huge_chunk/zarr.json",
        v3_array("[8589934592]", "[8589934592]", "uint8", RAW),
    );
    s.insert("rank/zarr.json", v3_array("[4, 4]", "[2]", "uint8", RAW));
    s.insert(
        "codec/zarr.json",
        v3_array(
            "[4]",
            "[2]",
            "uint8",
            r#"[{"name": "bytes"}, {"name": "nosuch"}]"#,
        ),
    );
    s.insert(
        "dtype/zarr.json",
        v3_array("[4]", "[2]", "float8_e9m9", RAW),
    );
    s.insert("corrupt/zarr.json", v3_array("[4]", "[2]", "uint8", ZSTD));
    s.insert(
        "corrupt/c/0",
        vec![0x28, 0xb5, 0x2f, 0xfd, 0xde, 0xad, 0xbe, 0xef],
    );
    s.insert("truncated/zarr.json", v3_array("[4]", "[2]", "uint16", RAW));
    s.insert("truncated/c/1", vec![1, 0, 2]);
    s.insert("notjson/zarr.json", "{\"zarr_format\": 3, ");
    let view = view_of(s);

    assert_eq!(read_all(&view, "good").unwrap(), vec![1, 2, 7, 7]);
    // A chunk size 0 reads as 1, as zarr-python 3.4 reads it: no chunk is stored, all fill.
    assert_eq!(read_all(&view, "zero_chunk").unwrap(), vec![7; 4]);
    for (bad, cause) in [
        ("huge_shape", IoCause::Metadata),
        ("negative_chunk", IoCause::Metadata),
        ("huge_chunk", IoCause::BadConfig),
        ("rank", IoCause::Metadata),
        ("codec", IoCause::Unsupported),
        ("dtype", IoCause::Metadata),
    ] {
        assert_eq!(read_all(&view, bad), Err(io(cause)), "{bad}");
        assert!(
            view.resolve(&format!("{bad}.json")).is_ok(),
            "{bad}.json is still listed"
        );
    }
    // A selection of an array zarrfs cannot decode: its document (metadata only) is there,
    // its data is EIO, and a name that is no selection is not found.
    let json = read_all(&view, "codec[1:3].json").unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(
        (&doc["shape"], &doc["dtype"]),
        (&serde_json::json!([2]), &serde_json::json!("|u1"))
    );
    assert_eq!(view.resolve("codec[1:3]"), Err(io(IoCause::Unsupported)));
    assert_eq!(view.resolve("codec[x]"), Err(ViewError::NotFound));
    // Chunk-level damage: the whole read fails, the healthy chunk still reads.
    assert_eq!(read_all(&view, "corrupt"), Err(io(IoCause::Corrupt)));
    assert_eq!(read_all(&view, "truncated"), Err(io(IoCause::Corrupt)));
    let ino = view.resolve("truncated").unwrap();
    assert_eq!(view.read(ino, 0, 4).unwrap(), vec![7, 0, 7, 0]);
    assert_eq!(view.resolve("notjson"), Err(ViewError::NotFound));
    // And the healthy array still reads after all that.
    assert_eq!(read_all(&view, "good").unwrap(), vec![1, 2, 7, 7]);
}

#[test]
fn a_100_gb_array_reads_without_decoding_the_whole_of_it() {
    let mut s = MemoryStore::new();
    // 25e9 uint32 = 100 GB, chunks of 1 Mi elements; only two chunks stored.
    s.insert(
        "zarr.json",
        v3_array("[25000000000]", "[1048576]", "uint32", RAW),
    );
    let chunk = |first: u64| -> Vec<u8> {
        (0..1_048_576u64)
            .flat_map(|i| ((first + i) as u32).to_le_bytes())
            .collect()
    };
    s.insert("c/0", chunk(0));
    let last = 25_000_000_000u64 / 1_048_576;
    s.insert(format!("c/{last}"), chunk(last * 1_048_576));
    let view = view_with_cache(s, 16 << 20);
    let ino = view.resolve("root").unwrap();
    assert_eq!(view.getattr(ino).unwrap().size, 100_000_000_000);
    assert_eq!(
        view.read(ino, 4 * 1000, 8).unwrap(),
        [1000u32.to_le_bytes(), 1001u32.to_le_bytes()].concat()
    );
    // The middle is fill value, the tail is the stored last chunk.
    assert_eq!(
        view.read(ino, 50_000_000_000, 4).unwrap(),
        7u32.to_le_bytes()
    );
    let tail = view.read(ino, 100_000_000_000 - 4, 100).unwrap();
    assert_eq!(tail, (24_999_999_999u64 as u32).to_le_bytes());
    assert!(view.cache().stats().used <= view.cache().budget());
}
