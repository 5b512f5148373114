//! A 100 GB array mounts and reads through FUSE, and the daemon's memory stays near the cache
//! budget however much is read.

use crate::common;

use common::mount::{timed, Mount};
use std::io::Read;

const CHUNK: u64 = 1 << 20; // elements (uint32) per chunk: 4 MiB
const STORED: u64 = 24; // chunks written: 96 MiB of data, 12x the cache

fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn reading_far_more_than_the_cache_keeps_memory_bounded() {
    if !common::mount::fuse_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("big.zarr");
    std::fs::create_dir_all(store.join("c")).unwrap();
    std::fs::write(
        store.join("zarr.json"),
        format!(
            r#"{{"zarr_format": 3, "node_type": "array", "shape": [25000000000], "data_type": "uint32",
               "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [{CHUNK}]}}}},
               "chunk_key_encoding": {{"name": "default"}}, "fill_value": 7,
               "codecs": [{{"name": "bytes", "configuration": {{"endian": "little"}}}}]}}"#
        ),
    )
    .unwrap();
    for c in 0..STORED {
        let bytes: Vec<u8> = (0..CHUNK)
            .flat_map(|i| ((c * CHUNK + i) as u32).to_le_bytes())
            .collect();
        std::fs::write(store.join(format!("c/{c}")), bytes).unwrap();
    }
    let cache_mib = 8;
    let mount = Mount::new(&store, &["--cache-size", &format!("{cache_mib}M")]);
    let file = mount.join("big");
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 100_000_000_000);

    let path = file.clone();
    let ok = timed("sequential read", move || {
        let mut f = std::fs::File::open(&path).unwrap();
        let mut buf = vec![0u8; 1 << 20];
        let mut at = 0u64;
        while at < STORED * CHUNK * 4 {
            f.read_exact(&mut buf).unwrap();
            for (k, word) in buf.chunks_exact(4).enumerate() {
                let want = (at / 4 + k as u64) as u32;
                if u32::from_le_bytes(word.try_into().unwrap()) != want {
                    return false;
                }
            }
            at += buf.len() as u64;
        }
        true
    });
    assert!(ok, "the data read back differs");
    let pid = mount.pid();
    let peak_mib = peak_rss_kib(pid) / 1024;
    assert!(
        peak_mib <= cache_mib + 64,
        "daemon peak RSS {peak_mib} MiB with a {cache_mib} MiB cache"
    );
}
