//! The process lifecycle through the real zarrfs binary: signals on a busy mount, refused
//! arguments, unmounting only zarrfs mounts, double and dead mounts, the mount point a failed
//! mount created, where the daemon logs, `-o subtype=`, and a user who may not open /dev/fuse.

use crate::common;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use common::float_store::{files, write_floats, CHUNK, N};
use common::mount::{force_unmount, is_fuse_mount, pread_direct, root_fuse_ready, run_within};
use parking_lot::Mutex;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a zarrfs command may take before the test gives up on it.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

fn zarrfs() -> Command {
    Command::new(env!("CARGO_BIN_EXE_zarrfs"))
}

fn demo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo.zarr")
}

/// Runs `cmd` to its end (killing it after [`COMMAND_TIMEOUT`]) and returns its output.
fn run(cmd: &mut Command) -> Output {
    run_within(cmd, COMMAND_TIMEOUT)
}

fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The filesystem type of the topmost mount on `path`, from /proc/self/mountinfo.
fn fstype_at(path: &Path) -> Option<String> {
    let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let wanted = path.to_str().unwrap();
    table.lines().rev().find_map(|line| {
        let (before, after) = line.split_once(" - ")?;
        (before.split(' ').nth(4)? == wanted).then(|| after.split(' ').next().unwrap().into())
    })
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + COMMAND_TIMEOUT;
    while !done() {
        assert!(
            Instant::now() < deadline,
            "{what}: not within {COMMAND_TIMEOUT:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A mount point in a fresh temporary directory; whatever is left mounted on it is detached,
/// and the processes a test started are killed, on drop.
struct Scene {
    dir: tempfile::TempDir,
    children: Vec<Child>,
}

impl Scene {
    fn new() -> Scene {
        Scene {
            dir: tempfile::tempdir().unwrap(),
            children: Vec::new(),
        }
    }

    /// The (canonical) mount point, created.
    fn mnt(&self) -> PathBuf {
        let m = std::fs::canonicalize(self.dir.path()).unwrap().join("mnt");
        let _ = std::fs::create_dir(&m);
        m
    }

    /// Mounts the demo store with `zarrfs -f` (the scene's first child); its pid and what it
    /// says on stderr.
    fn mount_foreground(&mut self) -> (i32, Arc<Mutex<String>>) {
        self.mount_foreground_of(&demo(), &[])
    }

    /// Mounts `store` with `zarrfs -f` and `args` (the scene's first child); its pid and what
    /// it says on stderr.
    fn mount_foreground_of(&mut self, store: &Path, args: &[&str]) -> (i32, Arc<Mutex<String>>) {
        let mnt = self.mnt();
        let mut daemon = zarrfs()
            .arg("-f")
            .args(args)
            .arg(store)
            .arg(&mnt)
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let said = capture_stderr(&mut daemon);
        let pid = daemon.id() as i32;
        self.children.push(daemon);
        wait_for("mount", || is_fuse_mount(&mnt));
        (pid, said)
    }

    /// The exit status of the daemon of [`Scene::mount_foreground`], once it has ended (`what`
    /// names the wait).
    fn daemon_exit(&mut self, what: &str) -> std::process::ExitStatus {
        let mut status = None;
        wait_for(what, || {
            status = self.children[0].try_wait().unwrap();
            status.is_some()
        });
        status.unwrap()
    }

    /// Mounts the demo store with the daemon (`zarrfs STORE MNT`).
    fn mount_daemon(&self, args: &[&str]) {
        let out = run(zarrfs().args(args).arg(demo()).arg(self.mnt()));
        assert!(out.status.success(), "mount: {}", stderr_of(&out));
        assert!(is_fuse_mount(&self.mnt()));
    }
}

impl Drop for Scene {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        let m = self.dir.path().join("mnt");
        for _ in 0..4 {
            if fstype_at(&m).is_none() {
                break;
            }
            force_unmount(&m);
        }
    }
}

/// Collects a child's stderr as it arrives.
fn capture_stderr(child: &mut Child) -> Arc<Mutex<String>> {
    let text = Arc::new(Mutex::new(String::new()));
    let mut pipe = child.stderr.take().unwrap();
    let sink = text.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    text
}

#[test]
fn a_sigusr1_from_outside_is_ignored_and_sigterm_still_unmounts() {
    if !root_fuse_ready() {
        return;
    }
    let mut scene = Scene::new();
    let mnt = scene.mnt();
    let (pid, said) = scene.mount_foreground();
    let _ = kill(Pid::from_raw(pid), Signal::SIGUSR1);
    wait_for("the SIGUSR1 to be logged", || {
        said.lock().contains("SIGUSR1")
    });
    assert!(
        std::fs::read(mnt.join(".group.json")).is_ok(),
        "still serving"
    );
    let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
    let status = scene.daemon_exit("zarrfs to end after SIGTERM");
    assert!(status.success(), "{status}: {}", said.lock());
    assert!(!is_fuse_mount(&mnt));
}

#[test]
fn a_daemon_on_a_mount_point_that_is_itself_a_mount_ends_cleanly_when_unmounted_from_outside() {
    if !root_fuse_ready() {
        return;
    }
    let mut scene = Scene::new();
    let mnt = scene.mnt();
    // The mount point is a bind mount of itself: it stays after zarrfs's mount goes.
    let bound = Command::new("mount")
        .arg("--bind")
        .args([&mnt, &mnt])
        .status()
        .unwrap();
    assert!(bound.success());
    let (_, said) = scene.mount_foreground();
    assert_eq!(fstype_at(&mnt).as_deref(), Some("fuse.zarrfs"));
    let out = run(Command::new("umount").arg(&mnt));
    assert!(out.status.success(), "{}", stderr_of(&out));
    let status = scene.daemon_exit("the daemon to end after umount");
    assert!(status.success(), "{status}: {}", said.lock());
    // The bind mount is still there (the session's end unmounted it once).
    let below = fstype_at(&mnt);
    assert!(below.as_deref().is_some_and(|t| t != "fuse.zarrfs"));
    // Likewise for `zarrfs unmount` of a background daemon (which waits for it to end).
    scene.mount_daemon(&[]);
    let out = run(zarrfs().arg("unmount").arg(&mnt));
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(fstype_at(&mnt), below);
}

#[test]
fn a_second_signal_after_a_busy_refusal_detaches_the_mount_and_ends_the_daemon() {
    if !root_fuse_ready() {
        return;
    }
    let mut scene = Scene::new();
    let mnt = scene.mnt();
    let (pid, said) = scene.mount_foreground();
    let group_json = std::fs::read(mnt.join(".group.json")).unwrap();
    // A process with its working directory in the mount makes it busy.
    let user = Command::new("sleep")
        .arg("600")
        .current_dir(&mnt)
        .spawn()
        .unwrap();
    scene.children.push(user);

    let _ = kill(Pid::from_raw(pid), Signal::SIGINT);
    wait_for("the busy message", || said.lock().contains("busy"));
    assert!(said.lock().contains("signal again"), "{}", said.lock());
    // Refused: still mounted, still answering with the same bytes.
    assert!(is_fuse_mount(&mnt));
    assert_eq!(std::fs::read(mnt.join(".group.json")).unwrap(), group_json);
    assert!(scene.children[0].try_wait().unwrap().is_none());

    let _ = kill(Pid::from_raw(pid), Signal::SIGINT);
    let status = scene.daemon_exit("the daemon to end after the second signal");
    assert_eq!(status.code(), Some(1));
    let said = said.lock().clone();
    assert!(said.contains("detached it lazily"), "{said}");
    assert!(fstype_at(&mnt).is_none(), "still in the mount table");
}

#[test]
fn a_mount_detached_in_use_finishes_its_cache_dir_files_before_the_daemon_exits() {
    if !root_fuse_ready() {
        return;
    }
    let (store, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let whole = write_floats(store.path(), "whole", (N, CHUNK), 1.0);
    let part = write_floats(store.path(), "part", (N, CHUNK), 2.0);
    let mut scene = Scene::new();
    let mnt = scene.mnt();
    let cache_arg = format!("--cache-dir={}", cache.path().display());
    let (pid, said) = scene.mount_foreground_of(store.path(), &[&cache_arg]);
    assert_eq!(std::fs::read(mnt.join("whole")).unwrap(), whole);
    // One block of `part`, past the page cache and its readahead: its file stays incomplete.
    assert_eq!(pread_direct(&mnt.join("part"), 4096).unwrap(), part[..4096]);
    // A process with its working directory in the mount keeps it alive once detached.
    let user = Command::new("sleep")
        .arg("600")
        .current_dir(&mnt)
        .spawn()
        .unwrap();
    scene.children.push(user);
    let out = run(Command::new("umount").arg("-l").arg(&mnt));
    assert!(out.status.success(), "{}", stderr_of(&out));
    let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
    let status = scene.daemon_exit("the daemon to end after SIGTERM");
    assert!(status.success(), "{status}: {}", said.lock());
    assert!(
        said.lock().contains("detached by another"),
        "{}",
        said.lock()
    );
    // `whole` published; `part` left to be resumed: its map saved, its lock file removed.
    assert_eq!(files(cache.path(), "data"), 1);
    assert_eq!(files(cache.path(), "part"), 1);
    assert_eq!(files(cache.path(), "lock"), 0, "a lock file left");
    // The block of `part` read before is served from its backing file by the next mount.
    let mut again = Scene::new();
    let (pid, said) = again.mount_foreground_of(store.path(), &[&cache_arg, "-vv"]);
    let read = pread_direct(&again.mnt().join("part"), 4096).unwrap();
    assert_eq!(read, part[..4096]);
    let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
    let status = again.daemon_exit("the second daemon to end after SIGTERM");
    assert!(status.success(), "{status}: {}", said.lock());
    let said = said.lock().clone();
    assert!(
        said.contains("part: 4096 bytes from the backing file"),
        "{said}"
    );
}

#[test]
fn a_signal_while_a_file_is_still_open_for_a_moment_unmounts_once_it_is_closed() {
    if !root_fuse_ready() {
        return;
    }
    let mut scene = Scene::new();
    let mnt = scene.mnt();
    let (pid, said) = scene.mount_foreground();
    // A process holds a file of the mount for 500 ms (as a child between fork and exec holds
    // its parent's files), and the signal comes meanwhile.
    let holder = Command::new("sh")
        .arg("-c")
        .arg("exec 3< \"$0\"; sleep 0.5")
        .arg(mnt.join(".group.json"))
        .spawn()
        .unwrap();
    let fd = PathBuf::from(format!("/proc/{}/fd/3", holder.id()));
    scene.children.push(holder);
    wait_for("the file to be open", || fd.exists());
    let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
    let status = scene.daemon_exit("the daemon to end after one signal");
    assert_eq!(status.code(), Some(0), "{}", said.lock());
    assert!(fstype_at(&mnt).is_none(), "still in the mount table");
    assert!(!said.lock().contains("busy"), "{}", said.lock());
}

#[test]
fn threads_zero_is_refused_before_anything_is_mounted() {
    if !root_fuse_ready() {
        return;
    }
    let scene = Scene::new();
    for foreground in [false, true] {
        let mut cmd = zarrfs();
        if foreground {
            cmd.arg("-f");
        }
        let out = run(cmd.args(["--threads", "0"]).arg(demo()).arg(scene.mnt()));
        assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
        assert!(stderr_of(&out).contains("at least one thread"));
        assert_eq!(fstype_at(&scene.mnt()), None, "a mount was left behind");
    }
}

/// A cache of no bytes would hold no chunk: every array would be EIO. Refused like `--threads 0`,
/// in both spellings.
#[test]
fn a_cache_size_of_zero_is_refused_before_anything_is_mounted() {
    if !root_fuse_ready() {
        return;
    }
    let scene = Scene::new();
    for args in [&["--cache-size", "0"][..], &["-o", "ro,cache_size=0K"]] {
        let out = run(zarrfs().args(args).arg(demo()).arg(scene.mnt()));
        let mounted = fstype_at(&scene.mnt());
        force_unmount(&scene.mnt());
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr_of(&out));
        assert!(
            stderr_of(&out).contains("holds no chunk"),
            "{}",
            stderr_of(&out)
        );
        assert_eq!(mounted, None, "{args:?}: a mount was made");
    }
}

#[test]
fn unmount_refuses_what_zarrfs_did_not_mount() {
    if !root_fuse_ready() {
        return;
    }
    let scene = Scene::new();
    let mnt = scene.mnt();
    let status = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "zarrfs-test"])
        .arg(&mnt)
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::write(mnt.join("kept"), b"tmpfs data").unwrap();
    let out = run(zarrfs().arg("unmount").arg(&mnt));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr_of(&out).contains("not a zarrfs mount (its type is tmpfs)"),
        "{}",
        stderr_of(&out)
    );
    assert_eq!(fstype_at(&mnt).as_deref(), Some("tmpfs"));
    assert_eq!(std::fs::read(mnt.join("kept")).unwrap(), b"tmpfs data");

    let plain = scene.dir.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    let out = run(zarrfs().arg("unmount").arg(&plain));
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr_of(&out).contains("not a mount point"));
}

#[test]
fn a_second_mount_on_a_zarrfs_mount_point_is_refused() {
    if !root_fuse_ready() {
        return;
    }
    let scene = Scene::new();
    let mnt = scene.mnt();
    scene.mount_daemon(&[]);
    for foreground in [false, true] {
        let mut cmd = zarrfs();
        if foreground {
            cmd.arg("-f");
        }
        let out = run(cmd.arg(demo()).arg(&mnt));
        assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
        let said = stderr_of(&out);
        assert!(said.contains("already mounted"), "{said}");
        assert!(said.contains("zarrfs unmount"), "{said}");
    }
    // One mount only: one unmount leaves nothing behind.
    let out = run(zarrfs().arg("unmount").arg(&mnt));
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(fstype_at(&mnt), None);
}

/// A daemon started under another name (a `mount.zarrfs` link to the binary, as some installs
/// make) is known as the live daemon of its mount: a second mount there is refused as "already
/// mounted", not as a mount whose daemon died, and `zarrfs unmount` ends it.
#[test]
fn a_daemon_under_another_name_is_known_by_its_record() {
    if !root_fuse_ready() {
        return;
    }
    let scene = Scene::new();
    let mnt = scene.mnt();
    let renamed = scene.dir.path().join("mount.zarrfs");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_zarrfs"), &renamed).unwrap();
    let out = run(Command::new(&renamed).arg(demo()).arg(&mnt));
    assert!(out.status.success(), "mount: {}", stderr_of(&out));
    let out = run(zarrfs().arg(demo()).arg(&mnt));
    let said = stderr_of(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("already mounted"), "{said}");
    let out = run(zarrfs().arg("unmount").arg(&mnt));
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(fstype_at(&mnt), None);
}

#[test]
fn a_killed_daemon_leaves_a_dead_mount_that_zarrfs_names_and_cleans() {
    if !root_fuse_ready() {
        return;
    }
    let mut scene = Scene::new();
    let mnt = scene.mnt();
    let daemon = zarrfs()
        .arg("-f")
        .arg(demo())
        .arg(&mnt)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = daemon.id() as i32;
    scene.children.push(daemon);
    wait_for("mount", || is_fuse_mount(&mnt));
    let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    let _ = scene.children[0].wait();
    let err = std::fs::read_dir(&mnt).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENOTCONN), "{err}");

    let out = run(zarrfs().arg(demo()).arg(&mnt));
    assert_eq!(out.status.code(), Some(1));
    let said = stderr_of(&out);
    assert!(
        said.contains("Transport endpoint is not connected"),
        "{said}"
    );
    assert!(
        said.contains(&format!("zarrfs unmount {}", mnt.display())),
        "{said}"
    );

    let out = run(zarrfs().arg("unmount").arg(&mnt));
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(fstype_at(&mnt), None);
    // The mount point takes a new mount, which reads.
    scene.mount_daemon(&[]);
    assert!(mnt.join("surface").is_dir());
    let out = run(zarrfs().arg("unmount").arg(&mnt));
    assert!(out.status.success(), "{}", stderr_of(&out));
}

/// Sends SIGCONT to a stopped process on drop, so a failed test leaves nothing stopped.
struct Continued(i32);

impl Drop for Continued {
    fn drop(&mut self) {
        let _ = kill(Pid::from_raw(self.0), Signal::SIGCONT);
    }
}

/// A daemon that is alive but answers nothing (stopped with SIGSTOP): mounting there again is
/// refused, and `zarrfs unmount` unmounts it, both in a few seconds; neither asks the mount.
#[test]
fn a_stopped_daemon_is_refused_and_unmounted_without_waiting_for_it() {
    if !root_fuse_ready() {
        return;
    }
    let mut scene = Scene::new();
    let mnt = scene.mnt();
    let (pid, said) = scene.mount_foreground();
    let _continued = Continued(pid);
    let _ = kill(Pid::from_raw(pid), Signal::SIGSTOP);
    wait_for("the daemon to stop", || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| s.rsplit_once(") ").is_some_and(|(_, r)| r.starts_with('T')))
    });
    let few_seconds = Duration::from_secs(5);

    let out = run_within(zarrfs().arg(demo()).arg(&mnt), few_seconds);
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("already mounted"),
        "{}",
        stderr_of(&out)
    );

    let started = Instant::now();
    let out = run_within(zarrfs().arg("unmount").arg(&mnt), few_seconds);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(started.elapsed() < few_seconds, "{:?}", started.elapsed());
    assert_eq!(fstype_at(&mnt), None, "still mounted");
    let told = stderr_of(&out);
    assert!(
        told.contains("stopped") && told.contains(&format!("kill -CONT {pid}")),
        "{told}"
    );

    let _ = kill(Pid::from_raw(pid), Signal::SIGCONT);
    let status = scene.daemon_exit("the daemon to end once continued");
    assert!(status.success(), "{status}: {}", said.lock());
}

#[test]
fn a_failed_mount_removes_the_mount_point_it_created_and_only_that() {
    if !root_fuse_ready() {
        return;
    }
    let scene = Scene::new();
    let empty = tempfile::tempdir().unwrap();
    let existing = scene.mnt();
    for foreground in [false, true] {
        let created = scene.dir.path().join("created");
        for mnt in [&created, &existing] {
            let mut cmd = zarrfs();
            if foreground {
                cmd.arg("-f");
            }
            let out = run(cmd.arg(empty.path()).arg(mnt));
            assert_eq!(out.status.code(), Some(1));
            assert!(stderr_of(&out).contains("no Zarr metadata"));
        }
        assert!(!created.exists(), "the mount point zarrfs created is left");
        assert!(
            existing.is_dir(),
            "a mount point zarrfs did not create was removed"
        );
    }
}

#[test]
fn a_relative_log_file_is_taken_from_the_working_directory() {
    if !root_fuse_ready() {
        return;
    }
    let scene = Scene::new();
    let mnt = scene.mnt();
    let name = format!("zarrfs-lifecycle-{}.log", std::process::id());
    let out = run(zarrfs()
        .current_dir(scene.dir.path())
        .args(["-v", "--log-file", &name])
        .arg(demo())
        .arg(&mnt));
    assert!(out.status.success(), "{}", stderr_of(&out));
    let out = run(zarrfs().arg("unmount").arg(&mnt));
    assert!(out.status.success(), "{}", stderr_of(&out));
    let in_root = Path::new("/").join(&name);
    let landed_in_root = in_root.exists();
    let _ = std::fs::remove_file(&in_root);
    assert!(!landed_in_root, "the log went to {}", in_root.display());
    let log = std::fs::read_to_string(scene.dir.path().join(&name)).unwrap();
    assert!(log.contains(&format!("on {}", mnt.display())), "{log}");
}

#[test]
fn a_log_file_zarrfs_creates_is_private_and_one_that_exists_keeps_its_mode() {
    if !root_fuse_ready() {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let scene = Scene::new();
    let mnt = scene.mnt();
    let file = scene.dir.path().join("zarrfs.log");
    let mode = |file: &Path| std::fs::metadata(file).unwrap().permissions().mode() & 0o777;
    for (existing, want) in [(None, 0o600), (Some(0o640), 0o640)] {
        if let Some(existing) = existing {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(existing)).unwrap();
        }
        let log_arg = format!("--log-file={}", file.display());
        scene.mount_daemon(&["-v", &log_arg]);
        let out = run(zarrfs().arg("unmount").arg(&mnt));
        assert!(out.status.success(), "{}", stderr_of(&out));
        assert_eq!(mode(&file), want, "mode of the log file, was {existing:?}");
    }
    let log = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        log.matches(&format!("on {}", mnt.display())).count(),
        2,
        "{log}"
    );
}

/// The daemon changes to `/` before it opens the cache directory, and before a remote reference
/// set is recognised and its allowed targets resolved: relative paths are taken from where zarrfs
/// was started all the same.
#[test]
fn a_relative_cache_dir_and_allow_target_are_taken_from_the_working_directory() {
    if !root_fuse_ready() {
        return;
    }
    let scene = Scene::new();
    let mnt = scene.mnt();
    let base = std::fs::canonicalize(scene.dir.path()).unwrap();
    let unique = format!("zarrfs-lifecycle-{}", std::process::id());

    let cache = format!("{unique}.cache");
    let out = run(zarrfs()
        .current_dir(&base)
        .args(["--cache-dir", &cache])
        .arg(demo())
        .arg(&mnt));
    assert!(out.status.success(), "{}", stderr_of(&out));
    let read = std::fs::read(mnt.join("surface/temperature"));
    let out = run(zarrfs().arg("unmount").arg(&mnt));
    assert!(out.status.success(), "{}", stderr_of(&out));
    let in_root = Path::new("/").join(&cache);
    let landed_in_root = in_root.exists();
    let _ = std::fs::remove_dir_all(&in_root);
    assert!(!landed_in_root, "the cache went to {}", in_root.display());
    let data = read.unwrap();
    let demo_case = crate::common::load_manifest("manifest.json")
        .into_iter()
        .find(|c| c.name == "demo")
        .unwrap();
    let node = demo_case
        .nodes
        .iter()
        .find(|n| n.path == "surface/temperature");
    assert_eq!(data, crate::common::expected_bytes(node.unwrap()).1);
    let kept: u64 = walk_bytes(&base.join(&cache));
    assert!(kept >= data.len() as u64, "{kept} bytes kept in {cache}");

    // A reference set over HTTP whose chunk is a local file, allowed by a relative prefix.
    let targets = base.join("targets");
    std::fs::create_dir(&targets).unwrap();
    let raw: Vec<u8> = (0..16u8).map(|b| b * 7).collect();
    std::fs::write(targets.join("raw.bin"), &raw).unwrap();
    let served = base.join("served");
    std::fs::create_dir(&served).unwrap();
    let zarray = r#"{"shape":[16],"chunks":[16],"dtype":"|u1","fill_value":null,"order":"C","filters":null,"compressor":null,"zarr_format":2}"#;
    let refs = serde_json::json!({
        "version": 1,
        "refs": {
            ".zgroup": r#"{"zarr_format":2}"#,
            "x/.zarray": zarray,
            "x/0": [format!("file://{}", targets.join("raw.bin").display()), 0, 16],
        }
    });
    std::fs::write(served.join("refs.json"), refs.to_string()).unwrap();
    let http = common::servers::http_server(&served);
    let out = run(zarrfs()
        .current_dir(&base)
        .args(["--allow-target", "targets"])
        .arg(format!("{}/refs.json", http.url))
        .arg(&mnt));
    assert!(out.status.success(), "{}", stderr_of(&out));
    let read = std::fs::read(mnt.join("x"));
    let out = run(zarrfs().arg("unmount").arg(&mnt));
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(read.unwrap(), raw);
}

/// Bytes of the files below `path`.
fn walk_bytes(path: &Path) -> u64 {
    match std::fs::read_dir(path) {
        Ok(entries) => entries.flatten().map(|e| walk_bytes(&e.path())).sum(),
        Err(_) => std::fs::symlink_metadata(path).map_or(0, |m| m.len()),
    }
}

#[test]
fn without_syslog_the_daemon_logs_to_a_file_and_says_where() {
    if !root_fuse_ready() {
        return;
    }
    let scene = Scene::new();
    let mnt = scene.mnt();
    // Where a syslog socket exists, hide it in a private mount namespace (the mount then lives
    // there too, so the daemon is stopped by its pid).
    let mut cmd = if Path::new("/dev/log").exists() {
        let mut c = Command::new("unshare");
        c.args(["--mount", "--propagation", "private", "sh", "-c"])
            .arg("mount --bind /dev/null /dev/log && exec \"$0\" \"$@\"")
            .arg(env!("CARGO_BIN_EXE_zarrfs"));
        c
    } else {
        zarrfs()
    };
    let out = run(cmd.arg("-v").arg(demo()).arg(&mnt));
    assert!(out.status.success(), "{}", stderr_of(&out));
    let said = stderr_of(&out);
    let file = said
        .lines()
        .find_map(|l| {
            l.split_once("no syslog here")
                .and(l.split_once("logging to "))
        })
        .map(|(_, f)| PathBuf::from(f.trim()))
        .unwrap_or_else(|| panic!("no word of where the log goes: {said}"));
    let mut pid = None;
    wait_for("the daemon's first line in its log", || {
        let log = std::fs::read_to_string(&file).unwrap_or_default();
        pid = log
            .lines()
            .rev()
            .find(|l| l.contains(&format!("on {} (pid ", mnt.display())))
            .and_then(|l| l.rsplit_once("(pid "))
            .and_then(|(_, p)| p.trim_end_matches(')').parse::<i32>().ok());
        pid.is_some()
    });
    let pid = pid.unwrap();
    // The mount as the daemon sees it (in its namespace, where there is one).
    let mountinfo = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).unwrap();
    let at = format!(" {} ", mnt.display());
    assert!(
        mountinfo
            .lines()
            .any(|l| l.contains(&at) && l.contains("fuse.zarrfs")),
        "not mounted in the daemon's namespace: {mountinfo}"
    );
    let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
    wait_for("the daemon to end", || {
        !Path::new(&format!("/proc/{pid}")).exists()
            || std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z"))
    });
    // Its log tells how it ended; outside a namespace the mount table shows it too.
    let log = std::fs::read_to_string(&file).unwrap();
    assert!(
        log.contains(&format!("signal 15: unmounting {}", mnt.display()))
            && !log.contains("still not unmounted")
            && !log.contains("stays mounted"),
        "{log}"
    );
    assert_eq!(fstype_at(&mnt), None);
}

#[test]
fn the_subtype_option_names_the_filesystem_type_and_unmount_still_knows_it() {
    if !root_fuse_ready() {
        return;
    }
    let scene = Scene::new();
    let mnt = scene.mnt();
    scene.mount_daemon(&[]);
    assert_eq!(fstype_at(&mnt).as_deref(), Some("fuse.zarrfs"));
    assert!(run(zarrfs().arg("unmount").arg(&mnt)).status.success());
    scene.mount_daemon(&["-o", "ro,subtype=zarrtest"]);
    assert_eq!(fstype_at(&mnt).as_deref(), Some("fuse.zarrtest"));
    let out = run(zarrfs().arg("unmount").arg(&mnt));
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(fstype_at(&mnt), None);
}

#[test]
fn read_ahead_below_a_page_is_refused_and_a_valid_one_is_set() {
    if !root_fuse_ready() {
        return;
    }
    let scene = Scene::new();
    let mnt = scene.mnt();
    let out = run(zarrfs().args(["--read-ahead", "3"]).arg(demo()).arg(&mnt));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("at least 4K"),
        "{}",
        stderr_of(&out)
    );
    assert_eq!(fstype_at(&mnt), None);

    scene.mount_daemon(&["--read-ahead", "8K"]);
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(&mnt).unwrap().dev();
    let knob = format!(
        "/sys/class/bdi/{}:{}/read_ahead_kb",
        rustix::fs::major(dev),
        rustix::fs::minor(dev)
    );
    assert_eq!(std::fs::read_to_string(knob).unwrap().trim(), "8");
    assert!(run(zarrfs().arg("unmount").arg(&mnt)).status.success());
}

/// Where /sys is read-only (as in most containers), a `--read-ahead` asked for is warned about;
/// the default one is said at info level only.
#[test]
fn a_read_ahead_that_cannot_be_set_is_warned_about_only_when_asked_for() {
    if !root_fuse_ready() {
        return;
    }
    for asked in [true, false] {
        let mut scene = Scene::new();
        let mnt = scene.mnt();
        // In a private mount namespace where /sys is read-only (the mount lives there too).
        let mut daemon = Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c"])
            .arg("mount -o remount,ro,bind /sys && exec \"$0\" \"$@\"")
            .arg(env!("CARGO_BIN_EXE_zarrfs"))
            .args(["-f", "-v"])
            .args(if asked {
                &["--read-ahead", "8K"][..]
            } else {
                &[]
            })
            .arg(demo())
            .arg(&mnt)
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let said = capture_stderr(&mut daemon);
        let pid = daemon.id() as i32;
        scene.children.push(daemon);
        // Logged once mounted, after the readahead was tried.
        wait_for("the daemon to serve", || said.lock().contains("serving "));
        let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
        let status = scene.daemon_exit("the daemon to end after SIGTERM");
        let said = said.lock().clone();
        assert!(status.success(), "{status}: {said}");
        let line = said
            .lines()
            .find(|l| l.contains("read_ahead_kb"))
            .unwrap_or_else(|| panic!("nothing said of read_ahead_kb: {said}"));
        assert!(line.contains("Read-only file system"), "{line}");
        match asked {
            true => assert!(
                line.contains("WARN") && line.contains("--read-ahead not applied"),
                "{line}"
            ),
            false => assert!(line.contains("INFO"), "{line}"),
        }
    }
}

/// Undoes the octal escapes of /proc/PID/mountinfo (`\054` is not one, `\134` is a backslash).
fn unescape_mountinfo(field: &str) -> String {
    let mut out = Vec::new();
    let bytes = field.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let octal = (bytes[i] == b'\\')
            .then(|| bytes.get(i + 1..i + 4))
            .flatten()
            .and_then(|d| u8::from_str_radix(std::str::from_utf8(d).ok()?, 8).ok());
        match octal {
            Some(b) => {
                out.push(b);
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap()
}

/// A copy of the demo store named `name` in `scene`'s directory, owned by `nobody` as are
/// `others`; the directory opened to all (mode 0755) so that `nobody` can reach them.
fn store_for_nobody(scene: &Scene, name: &str, others: &[&Path]) -> PathBuf {
    let base = scene.dir.path();
    let store = base.join(name);
    let copied = Command::new("cp")
        .arg("-r")
        .arg(demo())
        .arg(&store)
        .status();
    assert!(copied.unwrap().success());
    for p in others.iter().copied().chain([store.as_path()]) {
        let chown = Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(p)
            .status();
        assert!(chown.unwrap().success());
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(base, std::fs::Permissions::from_mode(0o755)).unwrap();
    store
}

/// A command that runs `setup` (a shell line, its `$0` being `arg0`) in a private mount
/// namespace, then the arguments added to it as `nobody`.
fn as_nobody_in_a_private_namespace(setup: &str, arg0: &Path) -> Command {
    let mut cmd = Command::new("unshare");
    cmd.args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(format!(
            "{setup} && exec setpriv --reuid=65534 --regid=65534 --clear-groups \"$@\""
        ))
        .arg(arg0);
    cmd
}

/// A user who is not root mounts through fusermount3, which splits its `-o` list at commas: a
/// store whose path holds a comma (and a backslash) mounts all the same, named as it is. Run as
/// `nobody` in a private mount namespace where /dev/fuse is a node anyone may open (the real one
/// is root's alone here); the mount lives and ends in that namespace.
#[test]
fn a_user_mounts_a_store_whose_path_holds_a_comma() {
    if !root_fuse_ready() {
        return;
    }
    let mut scene = Scene::new();
    let mnt = scene.mnt();
    let store = store_for_nobody(&scene, "a,b\\c.zarr", &[&mnt]);
    let store = std::fs::canonicalize(store).unwrap();
    let dev = scene.dir.path().join("dev");
    std::fs::create_dir(&dev).unwrap();
    let setup =
        "mount -t tmpfs -o mode=0755 zarrfs-test \"$0\" && mknod -m 666 \"$0/fuse\" c 10 229 \
                 && mount --bind \"$0/fuse\" /dev/fuse";
    let mut daemon = as_nobody_in_a_private_namespace(setup, &dev)
        .arg(env!("CARGO_BIN_EXE_zarrfs"))
        .arg("-f")
        .arg(&store)
        .arg(&mnt)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let said = capture_stderr(&mut daemon);
    // unshare, sh and setpriv exec: the child is zarrfs itself, in the new namespace.
    let pid = daemon.id() as i32;
    scene.children.push(daemon);
    let mounted = |scene: &mut Scene| {
        let table = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).unwrap_or_default();
        table
            .lines()
            .rev()
            .find_map(|line| {
                let (before, after) = line.split_once(" - ")?;
                let point = unescape_mountinfo(before.split(' ').nth(4)?);
                let mut fields = after.split(' ');
                let fstype = fields.next()?;
                (point == mnt.to_str()? && fstype == "fuse.zarrfs")
                    .then(|| unescape_mountinfo(fields.next().unwrap_or("")))
            })
            .or_else(|| {
                let ended = scene.children[0].try_wait().unwrap();
                assert!(ended.is_none(), "zarrfs ended ({ended:?}): {}", said.lock());
                None
            })
    };
    let mut source = None;
    wait_for("the mount in zarrfs's namespace", || {
        source = mounted(&mut scene);
        source.is_some()
    });
    assert_eq!(source.as_deref(), store.to_str(), "the mount's source");
    // Only its owner may use the mount: read it as nobody, in the mount's namespace.
    let out = run(Command::new("nsenter")
        .arg(format!("--mount=/proc/{pid}/ns/mnt"))
        .args([
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "cat",
        ])
        .arg(mnt.join(".group.json")));
    assert!(out.status.success(), "{}", stderr_of(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\"node_type\": \"group\""), "{text}");
    let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
    let status = scene.daemon_exit("zarrfs to end after SIGTERM");
    assert!(status.success(), "{status}: {}", said.lock());
}

#[test]
fn a_user_who_may_not_open_dev_fuse_is_told_what_is_wrong() {
    if !root_fuse_ready() {
        return;
    }
    // Everything belongs to `nobody`; in a private mount namespace /dev/fuse is replaced by a
    // file nobody may open, whatever the real device allows (other tests are not affected).
    let scene = Scene::new();
    let mnt = scene.mnt();
    let blocked = scene.dir.path().join("blocked");
    std::fs::write(&blocked, b"").unwrap();
    let store = store_for_nobody(&scene, "store.zarr", &[scene.dir.path(), &mnt, &blocked]);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&blocked, std::fs::Permissions::from_mode(0o000)).unwrap();
    let out = run(
        as_nobody_in_a_private_namespace("mount --bind \"$0\" /dev/fuse", &blocked)
            .arg(env!("CARGO_BIN_EXE_zarrfs"))
            .arg("-f")
            .arg(&store)
            .arg(&mnt),
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    let said = stderr_of(&out);
    assert!(said.contains("may not open /dev/fuse"), "{said}");
    assert!(said.contains("ask an administrator"), "{said}");
    assert_eq!(said.trim_end().lines().count(), 1, "one line: {said}");
}
