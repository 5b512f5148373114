//! Checks of one fixture store through a real FUSE mount.

use super::mount::{timed, Mount};
use super::{expected_bytes, json_subset, probe_ranges, StoreCase};
use std::collections::BTreeSet;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::Command;

fn find(root: &Path) -> BTreeSet<String> {
    let root = root.to_path_buf();
    let out = timed("find", move || {
        Command::new("find")
            .arg(&root)
            .arg("-mindepth")
            .arg("1")
            .output()
            .unwrap()
    });
    assert!(
        out.status.success(),
        "find failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.to_string())
        .collect()
}

fn pread_all(path: &Path, off: u64, len: u64) -> std::io::Result<Vec<u8>> {
    pread_with(path, off, len, 0)
}

/// Reads with extra open flags (O_DIRECT sends the exact byte range to zarrfs, bypassing the
/// page cache, whose whole-page reads would include a neighbouring corrupt chunk).
fn pread_with(path: &Path, off: u64, len: u64, flags: i32) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)?;
    // A page-aligned buffer, as O_DIRECT may require.
    let mut backing = vec![0u8; len as usize + 4096];
    let skip = backing.as_ptr().align_offset(4096);
    let buf = &mut backing[skip..skip + len as usize];
    let mut got = 0;
    while got < buf.len() {
        let n = f.read_at(&mut buf[got..], off + got as u64)?;
        if n == 0 {
            break;
        }
        got += n;
    }
    Ok(buf[..got].to_vec())
}

fn mmap_bytes(path: &Path) -> std::io::Result<Vec<u8>> {
    let f = std::fs::File::open(path)?;
    let len = f.metadata()?.len() as usize;
    if len == 0 {
        return Ok(Vec::new());
    }
    use rustix::mm::{mmap, munmap, MapFlags, ProtFlags};
    // SAFETY: a shared read-only mapping of a file we keep open, copied out and unmapped.
    unsafe {
        let p = mmap(
            std::ptr::null_mut(),
            len,
            ProtFlags::READ,
            MapFlags::SHARED,
            &f,
            0,
        )?;
        let v = std::slice::from_raw_parts(p as *const u8, len).to_vec();
        let _ = munmap(p, len);
        Ok(v)
    }
}

/// Checks every case as [`check_store`] does and fails with all the problems found.
pub fn check_stores(cases: &[StoreCase]) {
    let errors: Vec<String> = cases.iter().flat_map(check_store).collect();
    assert!(
        errors.is_empty(),
        "{} problems:\n{}",
        errors.len(),
        errors.join("\n")
    );
}

pub fn check_store(case: &StoreCase) -> Vec<String> {
    let mut errors = Vec::new();
    let args: Vec<&str> = case.options.iter().map(String::as_str).collect();
    let mount = Mount::new(&case.store, &args);
    let root = mount.path().to_path_buf();
    let listed: BTreeSet<String> = find(&root)
        .into_iter()
        .map(|p| {
            p.strip_prefix(&format!("{}/", root.display()))
                .unwrap()
                .to_string()
        })
        .collect();
    let expected = case.expected_paths();
    if listed != expected {
        errors.push(format!(
            "{}: find differs: missing {:?}, unexpected {:?}",
            case.name,
            expected.difference(&listed).collect::<Vec<_>>(),
            listed.difference(&expected).collect::<Vec<_>>()
        ));
    }
    let r = root.clone();
    let ls = timed("ls -lR", move || {
        Command::new("ls").arg("-lR").arg(&r).output().unwrap()
    });
    if !ls.status.success() {
        errors.push(format!(
            "{}: ls -lR failed: {}",
            case.name,
            String::from_utf8_lossy(&ls.stderr)
        ));
    }
    let mut largest: Option<(usize, String, Vec<u8>)> = None;
    for node in &case.nodes {
        let file = case.file_of(node);
        let ctx = format!("{}:{file}", case.name);
        if node.expect.as_deref() == Some("absent") {
            continue;
        }
        let json_rel = if node.is_group {
            super::join(&file, ".group.json")
        } else {
            format!("{file}.json")
        };
        match std::fs::read(mount.join(&json_rel)) {
            Ok(bytes) => {
                let doc: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
                if let Err(e) = node
                    .json
                    .as_ref()
                    .map_or(Ok(()), |want| json_subset(want, &doc))
                {
                    errors.push(format!("{ctx}: {json_rel}: {e}"));
                }
            }
            Err(e) => errors.push(format!("{ctx}: {json_rel}: {e}")),
        }
        if node.is_group {
            continue;
        }
        let data_path = mount.join(&file);
        let npy_path = mount.join(&format!("{file}.npy"));
        match node.expect.as_deref() {
            Some("eio") => {
                for p in [&data_path, &npy_path] {
                    match std::fs::read(p) {
                        Err(e) if e.raw_os_error() == Some(libc::EIO) => {}
                        other => errors.push(format!(
                            "{ctx}: expected EIO, got {:?}",
                            other.map(|v| v.len())
                        )),
                    }
                }
                continue;
            }
            Some("partial_eio") => {
                let (_, data) = expected_bytes(node);
                match std::fs::read(&data_path) {
                    Err(e) if e.raw_os_error() == Some(libc::EIO) => {}
                    other => errors.push(format!(
                        "{ctx}: whole read: expected EIO, got {:?}",
                        other.map(|v| v.len())
                    )),
                }
                let (a, b) = node.ok_range.unwrap();
                let got = pread_with(&data_path, a, b - a, libc::O_DIRECT);
                if got.as_ref().ok().map(Vec::as_slice) != Some(&data[a as usize..b as usize]) {
                    errors.push(format!("{ctx}: healthy range {a}..{b} reads {got:02x?}"));
                }
                continue;
            }
            _ => {}
        }
        let (npy, data) = expected_bytes(node);
        match std::fs::metadata(&data_path) {
            Ok(m) if m.len() == data.len() as u64 => {}
            other => errors.push(format!(
                "{ctx}: stat size {:?} != {}",
                other.map(|m| m.len()),
                data.len()
            )),
        }
        if std::fs::read(&data_path).ok().as_deref() != Some(&data[..]) {
            errors.push(format!("{ctx}: A differs"));
        }
        if std::fs::read(&npy_path).ok().as_deref() != Some(&npy[..]) {
            errors.push(format!("{ctx}: A.npy differs"));
        }
        for (off, len) in probe_ranges(data.len() as u64, 8, 4096, data.len() as u64) {
            let end = (off + len).min(data.len() as u64);
            if pread_all(&data_path, off, len).ok().as_deref()
                != Some(&data[off.min(end) as usize..end as usize])
            {
                errors.push(format!("{ctx}: pread {off}+{len} differs"));
                break;
            }
        }
        if largest.as_ref().is_none_or(|(n, _, _)| data.len() > *n) {
            largest = Some((data.len(), file.clone(), data));
        }
    }
    if let Some((_, file, data)) = largest {
        if mmap_bytes(&mount.join(&file)).ok() != Some(data) {
            errors.push(format!("{}:{file}: mmap differs", case.name));
        }
    }
    let (status, stderr) = mount.stop();
    if !status.success() {
        errors.push(format!(
            "{}: zarrfs exited with {status}: {stderr}",
            case.name
        ));
    }
    errors
}
