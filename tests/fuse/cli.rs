//! The command line: daemonizing with truthful readiness, unmounting, signals, errors.

use crate::common;

use common::mount::{fuse_ready, is_fuse_mount, Mount, Unmounted};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn zarrfs() -> Command {
    Command::new(env!("CARGO_BIN_EXE_zarrfs"))
}

fn demo() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo.zarr")
}

fn wait_unmounted(path: &Path) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while is_fuse_mount(path) {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// `zarrfs unmount PATH` succeeds.
fn assert_unmounts(path: &Path) {
    assert!(zarrfs()
        .arg("unmount")
        .arg(path)
        .status()
        .unwrap()
        .success());
}

#[test]
fn daemon_returns_once_mounted_and_unmount_command_ends_it() {
    if !fuse_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let _cleanup = Unmounted(dir.path());
    let status = zarrfs().arg(demo()).arg(dir.path()).status().unwrap();
    assert!(status.success());
    // Returning means the mount answers already.
    assert!(is_fuse_mount(dir.path()));
    let attrs = std::fs::read(dir.path().join(".group.json")).unwrap();
    assert!(String::from_utf8(attrs)
        .unwrap()
        .contains("\"node_type\": \"group\""));
    let out = zarrfs().arg("unmount").arg(dir.path()).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(wait_unmounted(dir.path()));
}

#[test]
fn a_mount_point_is_reusable_as_soon_as_unmount_returns() {
    if !fuse_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let _cleanup = Unmounted(dir.path());
    for round in 0..5 {
        assert!(zarrfs()
            .arg(demo())
            .arg(dir.path())
            .status()
            .unwrap()
            .success());
        assert!(is_fuse_mount(dir.path()), "round {round}: not mounted");
        let out = zarrfs().arg("unmount").arg(dir.path()).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The old daemon is gone: nothing unmounts the next mount behind its back.
        assert!(!is_fuse_mount(dir.path()), "round {round}: still mounted");
    }
    assert!(zarrfs()
        .arg(demo())
        .arg(dir.path())
        .status()
        .unwrap()
        .success());
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        is_fuse_mount(dir.path()),
        "the last mount was unmounted by a previous daemon"
    );
    assert_unmounts(dir.path());
}

#[test]
fn plain_umount_ends_a_foreground_mount() {
    if !fuse_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let _cleanup = Unmounted(dir.path());
    let mut child = zarrfs()
        .arg("-f")
        .arg(demo())
        .arg(dir.path())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !is_fuse_mount(dir.path()) {
        assert!(Instant::now() < deadline, "no mount");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(Command::new("umount")
        .arg(dir.path())
        .status()
        .unwrap()
        .success());
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "{status}");
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("zarrfs did not exit after umount");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn sigterm_unmounts_cleanly() {
    if !fuse_ready() {
        return;
    }
    let mount = Mount::new(&demo(), &[]);
    let path = mount.path().to_path_buf();
    assert!(path.join("surface").is_dir());
    let (status, stderr) = mount.stop();
    assert!(status.success(), "{status}: {stderr}");
    assert!(!is_fuse_mount(&path));
}

#[test]
fn failures_exit_non_zero_with_one_line_and_no_mount() {
    if !fuse_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let _cleanup = Unmounted(dir.path());
    let empty = tempfile::tempdir().unwrap();
    let cases: [(&Path, &Path, &str); 3] = [
        (
            Path::new("/nonexistent/store.zarr"),
            dir.path(),
            "cannot open store",
        ),
        (&demo(), Path::new("/nonexistent/mnt"), "mount point"),
        (empty.path(), dir.path(), "no Zarr metadata"),
    ];
    for (store, mnt, cause) in cases {
        for foreground in [false, true] {
            let mut cmd = zarrfs();
            if foreground {
                cmd.arg("-f");
            }
            let out = cmd.arg(store).arg(mnt).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{store:?}: {err}");
            assert!(err.contains(cause), "{store:?}: {err}");
            assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
            assert!(!is_fuse_mount(dir.path()));
        }
    }
}

/// `-o rw` (mount(8) passes it unless told otherwise) mounts read-only with a one-line notice.
#[test]
fn rw_option_mounts_read_only_with_a_notice() {
    if !fuse_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let _cleanup = Unmounted(dir.path());
    let out = zarrfs()
        .args(["-o", "rw,dev,suid"])
        .arg(demo())
        .arg(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("option rw") && err.contains("mounting read-only"),
        "{err}"
    );
    let write = std::fs::File::create(dir.path().join("new"));
    assert_eq!(write.unwrap_err().raw_os_error(), Some(libc::EROFS));
    assert_unmounts(dir.path());
}

/// The superblock options of the mount on `path` (`ro,sync,user_id=0,...`), from
/// /proc/self/mountinfo.
fn super_options(path: &Path) -> String {
    let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let wanted = path.to_str().unwrap();
    let line = table
        .lines()
        .rev()
        .find(|l| l.split(' ').nth(4) == Some(wanted))
        .unwrap_or_else(|| panic!("{wanted} is not in the mount table"));
    line.rsplit(' ').next().unwrap().to_string()
}

/// `sync` and `async` are opposites: the later one wins, as for `exec`/`noexec`, and the mount
/// is made (fuser refuses a list holding both).
#[test]
fn a_later_sync_or_async_overrides_an_earlier_one() {
    if !fuse_ready() {
        return;
    }
    for (list, synchronous) in [("sync,async", false), ("async,sync", true)] {
        let mount =
            Mount::try_new(&demo(), &["-o", list]).unwrap_or_else(|e| panic!("{list}: {e}"));
        let options = super_options(mount.path());
        assert_eq!(
            options.split(',').any(|o| o == "sync"),
            synchronous,
            "-o {list}: {options}"
        );
        assert!(mount.path().join("surface").is_dir());
    }
}

/// `--cache-dir DIR` (with a space) and `-o cache_dir=DIR` keep decoded arrays in DIR.
#[test]
fn cache_dir_takes_its_value_after_a_space_or_as_an_o_option() {
    if !fuse_ready() {
        return;
    }
    for spelling in ["space", "-o"] {
        let cache = tempfile::tempdir().unwrap();
        let dir = cache.path().display().to_string();
        let args: Vec<String> = match spelling {
            "space" => vec!["--cache-dir".into(), dir],
            _ => vec!["-o".into(), format!("ro,cache_dir={dir}")],
        };
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mount = Mount::new(&demo(), &args);
        let data = std::fs::read(mount.join("surface/temperature")).unwrap();
        assert!(!data.is_empty());
        drop(mount);
        let kept: u64 = std::fs::read_dir(cache.path())
            .unwrap()
            .flatten()
            .map(|e| du(&e.path()))
            .sum();
        assert!(kept >= data.len() as u64, "{spelling}: {kept} bytes kept");
    }
}

/// Bytes of the files below `path`.
fn du(path: &Path) -> u64 {
    match std::fs::read_dir(path) {
        Ok(entries) => entries.flatten().map(|e| du(&e.path())).sum(),
        Err(_) => std::fs::metadata(path).map_or(0, |m| m.len()),
    }
}

/// A refused option says what was wrong with what was given, before anything is mounted, and
/// exits with status 2 in either spelling (as the configuration page says).
#[test]
fn refused_options_say_what_was_wrong_with_them() {
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in [
        (&["-o", "cache_size"][..], "cache_size=SIZE"),
        (&["-o", "cache_size=lots"], "\"lots\""),
        (&["-o", "anonymous=yes"], "takes no value"),
        (&["-o", "kernel_cache"], "unknown option \"kernel_cache\""),
        (&["-o", "ro,max_read=lots"], "number of bytes"),
        (&["--cache-size", "2Q"], "\"2Q\""),
        (&["--timeout", "0"], "'0'"),
    ] {
        // A store that cannot be opened as well: the option is what is refused.
        for store in [demo(), Path::new("/nonexistent/store.zarr").to_path_buf()] {
            let out = zarrfs()
                .args(args)
                .arg(store)
                .arg(dir.path())
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.contains(says), "{args:?}: {err}");
            assert!(!is_fuse_mount(dir.path()));
        }
    }
}

#[test]
fn help_has_examples_and_version_prints() {
    let out = zarrfs().arg("--help").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in ["Examples:", "--cache-size", "--foreground", "unmount"] {
        assert!(text.contains(needle), "--help lacks {needle}");
    }
    let out = zarrfs().arg("--version").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("zarrfs {}", env!("CARGO_PKG_VERSION"))
    );
    let out = zarrfs()
        .args(["unmount", "/nonexistent/x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}

/// Options of an fstab line reused for another store are ignored with a warning naming each.
#[test]
fn options_that_do_not_apply_are_ignored_with_a_line_naming_each() {
    if !fuse_ready() {
        return;
    }
    let log = tempfile::tempdir().unwrap();
    let log_arg = format!("--log-file={}", log.path().join("zarrfs.log").display());
    let mount = Mount::new(
        &demo(),
        &[
            "--cache-dir-size=1G",
            &log_arg,
            "-o",
            "endpoint=http://127.0.0.1:9,region=r,anonymous",
        ],
    );
    assert!(mount.path().join("surface").is_dir());
    let (status, stderr) = mount.stop();
    assert!(status.success(), "{status}: {stderr}");
    for option in [
        "--cache-dir-size",
        "--log-file",
        "--endpoint",
        "--region",
        "--anonymous",
    ] {
        let said = format!("option {option} does not apply");
        assert_eq!(stderr.matches(&said).count(), 1, "{option}: {stderr}");
    }
    assert!(!log.path().join("zarrfs.log").exists());
}
