//! Checks of one fixture store through the view (no FUSE).

use super::{expected_bytes, json_subset, probe_ranges, StoreCase};
use std::collections::BTreeSet;
use zarrfs::view::{self, FileKind, View, ViewError, ROOT_INO};

fn listing(view: &View) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![(ROOT_INO, String::new())];
    while let Some((ino, dir)) = stack.pop() {
        for e in view.readdir(ino, 2).unwrap() {
            let p = super::join(&dir, &e.name);
            if e.kind == FileKind::Directory {
                stack.push((e.ino, p.clone()));
            }
            out.insert(p);
        }
    }
    out
}

/// Reads `len` bytes at `off` in requests of at most `step` bytes, as the kernel would.
fn read(view: &View, ino: u64, off: u64, len: u64, step: u32) -> Result<Vec<u8>, ViewError> {
    let mut out = Vec::new();
    let mut at = off;
    while at < off + len {
        let want = (off + len - at).min(u64::from(step)) as u32;
        let got = view.read(ino, at, want)?;
        if got.is_empty() {
            break;
        }
        at += got.len() as u64;
        out.extend(got);
    }
    Ok(out)
}

pub fn check_store(case: &StoreCase) -> Vec<String> {
    let mut errors = Vec::new();
    let option = |name: &str| {
        case.options
            .windows(2)
            .filter(|w| w[0] == name)
            .map(|w| w[1].clone())
            .collect::<Vec<_>>()
    };
    let remote = zarrfs::store::RemoteOptions {
        version: option("--ref").pop(),
        allow_targets: option("--allow-target"),
        endpoint: option("--endpoint").pop(),
        ..Default::default()
    };
    let location = case.store.to_str().unwrap();
    let load = zarrfs::meta::LoadOptions {
        consolidated: !case.options.iter().any(|o| o == "--no-consolidated"),
    };
    let opened = zarrfs::store::open_with(location, &remote)
        .map_err(|e| e.to_string())
        .and_then(|s| {
            view::from_store(std::sync::Arc::from(s), location, 64 << 20, &load)
                .map_err(|e| e.to_string())
        });
    let view = match opened {
        Ok(v) => v,
        Err(e) => return vec![format!("{}: cannot open: {e}", case.name)],
    };
    let listed = listing(&view);
    let expected = case.expected_paths();
    if listed != expected {
        errors.push(format!(
            "{}: listing differs: missing {:?}, unexpected {:?}",
            case.name,
            expected.difference(&listed).collect::<Vec<_>>(),
            listed.difference(&expected).collect::<Vec<_>>()
        ));
    }
    for node in &case.nodes {
        let file = case.file_of(node);
        let ctx = format!(
            "{}:{}",
            case.name,
            if file.is_empty() { "/" } else { &file }
        );
        if node.expect.as_deref() == Some("absent") {
            continue;
        }
        let json_path = if node.is_group {
            super::join(&file, ".group.json")
        } else {
            format!("{file}.json")
        };
        match view
            .resolve(&json_path)
            .and_then(|ino| view.read(ino, 0, u32::MAX))
        {
            Ok(bytes) => {
                let doc: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
                if !bytes.ends_with(b"}\n") {
                    errors.push(format!("{ctx}: sidecar does not end in a newline"));
                }
                if let Some(want) = &node.json {
                    if let Err(e) = json_subset(want, &doc) {
                        errors.push(format!("{ctx}: {json_path}: {e}"));
                    }
                }
            }
            Err(e) => errors.push(format!("{ctx}: {json_path}: {e:?}")),
        }
        if node.is_group {
            continue;
        }
        let data_ino = view.resolve(&file).unwrap();
        let npy_ino = view.resolve(&format!("{file}.npy")).unwrap();
        match node.expect.as_deref() {
            Some("eio") => {
                if !matches!(view.open(data_ino), Err(ViewError::Io(_)))
                    || !matches!(view.open(npy_ino), Err(ViewError::Io(_)))
                {
                    errors.push(format!("{ctx}: opening should fail with EIO"));
                }
                continue;
            }
            Some("partial_eio") => {
                let (_, data) = expected_bytes(node);
                let size = view.getattr(data_ino).unwrap().size;
                if !matches!(view.read(data_ino, 0, size as u32), Err(ViewError::Io(_))) {
                    errors.push(format!("{ctx}: a whole read should fail with EIO"));
                }
                let (a, b) = node.ok_range.unwrap();
                if view.read(data_ino, a, (b - a) as u32).ok().as_deref()
                    != Some(&data[a as usize..b as usize])
                {
                    errors.push(format!("{ctx}: the healthy range {a}..{b} reads wrong"));
                }
                continue;
            }
            _ => {}
        }
        let (npy, data) = expected_bytes(node);
        let attr = view.getattr(data_ino).unwrap();
        if attr.size != data.len() as u64 || view.getattr(npy_ino).unwrap().size != npy.len() as u64
        {
            errors.push(format!(
                "{ctx}: sizes {} / npy differ from {} / {}",
                attr.size,
                data.len(),
                npy.len()
            ));
            continue;
        }
        if read(&view, npy_ino, 0, npy.len() as u64, 1 << 20).as_deref() != Ok(&npy[..]) {
            errors.push(format!("{ctx}: A.npy differs from numpy's file"));
        }
        let dims = |key: &str| -> u64 {
            let doc = node.json.as_ref();
            let list = match key {
                "shape" => doc.and_then(|d| d.get("shape")),
                _ => doc.and_then(|d| {
                    d.get("chunks")
                        .or_else(|| d.pointer("/chunk_grid/configuration/chunk_shape"))
                }),
            };
            list.and_then(|c| c.as_array())
                .map_or(1, |c| c.iter().map(|x| x.as_u64().unwrap_or(1)).product())
        };
        let es = (data.len() as u64 / dims("shape").max(1)).max(1);
        let chunk_bytes = dims("chunks") * es;
        for (i, (off, len)) in probe_ranges(data.len() as u64, es, chunk_bytes.max(1), i_seed(&ctx))
            .into_iter()
            .enumerate()
        {
            let end = (off + len).min(data.len() as u64);
            let step = [4096u32, 7, 131_072, 1 << 20][i % 4];
            match read(&view, data_ino, off, len, step) {
                Ok(got) if got == data[off.min(end) as usize..end as usize] => {}
                Ok(_) => {
                    errors.push(format!(
                        "{ctx}: bytes {off}+{len} (requests of {step}) differ"
                    ));
                    break;
                }
                Err(e) => {
                    errors.push(format!("{ctx}: bytes {off}+{len}: {e:?}"));
                    break;
                }
            }
        }
    }
    errors
}

fn i_seed(s: &str) -> u64 {
    s.bytes().fold(1469598103934665603u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(1099511628211)
    })
}
