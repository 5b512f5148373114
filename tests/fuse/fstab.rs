//! zarrfs mounted the way other filesystems are: `mount -t fuse.zarrfs` and an /etc/fstab line,
//! through the real mount(8) and mount.fuse3, then `umount`. Each test runs in a private mount
//! namespace (`unshare -m`) where a private copy of /etc/fstab and a directory holding only a
//! `zarrfs` symlink to the binary under test are bind-mounted over /etc/fstab and
//! /usr/local/bin: mount(8) runs helpers with the system PATH, so this is where an installed
//! zarrfs is found. Whatever the namespace holds goes with it when the script ends.

use crate::common;

use common::mount::{describe, root_fuse_ready, run_within};
use common::{expected_bytes, load_manifest, StoreCase};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// How long one script may take before the test gives up on it.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(120);

/// A scene: the namespace's fstab and bin directory, mount points, and the expected bytes.
struct Scene {
    dir: tempfile::TempDir,
}

impl Scene {
    fn new() -> Scene {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_zarrfs"), bin.join("zarrfs")).unwrap();
        let fstab = std::fs::read_to_string("/etc/fstab").unwrap_or_default();
        std::fs::write(dir.path().join("fstab"), fstab).unwrap();
        std::fs::create_dir(dir.path().join("mnt")).unwrap();
        Scene { dir }
    }

    /// Adds `line` to the namespace's /etc/fstab.
    fn add_fstab_line(&self, line: &str) {
        let mut fstab = std::fs::read_to_string(self.path("fstab")).unwrap();
        fstab.push_str(line);
        fstab.push('\n');
        std::fs::write(self.path("fstab"), fstab).unwrap();
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Runs `script` with sh in a private mount namespace (after the bind mounts), with `$S` the
    /// scene's directory and `$MNT` its mount point; unmounts `$MNT` however the script ends.
    fn run(&self, script: &str) -> Output {
        let full = format!(
            "set -eu\n\
             mount --bind \"$S/bin\" /usr/local/bin\n\
             mount --bind \"$S/fstab\" /etc/fstab\n\
             trap 'umount -l \"$MNT\" 2>/dev/null || true' EXIT\n\
             {script}"
        );
        let mut cmd = Command::new("unshare");
        cmd.args(["-m", "--propagation", "private", "sh", "-c", &full])
            .env("S", self.dir.path())
            .env("MNT", self.path("mnt"));
        run_within(&mut cmd, SCRIPT_TIMEOUT)
    }
}

/// True where the test can run: root with FUSE, and util-linux's unshare and mount(8) with
/// fuse3's mount.fuse3 (missing tools fail the test under ZARRFS_REQUIRE_FUSE, as .ci/run sets).
fn ready() -> bool {
    if !root_fuse_ready() {
        return false;
    }
    let missing: Vec<&str> = ["unshare", "mount", "umount", "mount.fuse3"]
        .into_iter()
        .filter(|tool| {
            !Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .collect();
    if missing.is_empty() {
        return true;
    }
    assert!(
        std::env::var_os("ZARRFS_REQUIRE_FUSE").is_none(),
        "missing {missing:?}: run .ci/run"
    );
    eprintln!("skipping: missing {missing:?}");
    false
}

/// A directory store of the fixtures with a healthy array that has a preview picture, the
/// array's mount-relative path and its expected bytes.
fn fixture() -> (StoreCase, String, Vec<u8>) {
    let case = load_manifest("manifest.json")
        .into_iter()
        .find(|c| c.store.is_dir() && c.healthy_arrays().any(|n| n.has_preview()))
        .expect("a directory fixture with a 2-D array");
    let node = case
        .healthy_arrays()
        .find(|n| n.has_preview())
        .unwrap()
        .clone();
    let data = expected_bytes(&node).1;
    let path = case.file_of(&node);
    (case, path, data)
}

/// Where the tests can run: a fresh scene holding the fixture array's expected bytes in
/// `$S/expected`, the fixture, and the array's path.
fn scene_with_fixture() -> Option<(Scene, StoreCase, String, Vec<u8>)> {
    if !ready() {
        return None;
    }
    let (case, array, data) = fixture();
    let scene = Scene::new();
    std::fs::write(scene.path("expected"), &data).unwrap();
    Some((scene, case, array, data))
}

/// `mount -t fuse.zarrfs STORE MNT` as mount(8) runs it (it passes `rw,dev,suid`): mounted
/// read-only with a notice, the array byte-exact, a zarrfs option as `-o` (read_ahead) in
/// effect, then `umount`.
#[test]
fn mount_t_fuse_zarrfs_mounts_read_only_and_umount_ends_it() {
    let Some((scene, case, array, _)) = scene_with_fixture() else {
        return;
    };
    let script = format!(
        "mount -t fuse.zarrfs '{store}' \"$MNT\" 2> \"$S/mount.err\"\n\
         grep \" $MNT \" /proc/self/mountinfo > \"$S/mountinfo\"\n\
         cmp \"$MNT/{array}\" \"$S/expected\"\n\
         if touch \"$MNT/new\" 2>/dev/null; then echo writable; exit 1; fi\n\
         umount \"$MNT\"\n\
         if grep -q \" $MNT \" /proc/self/mountinfo; then echo still mounted; exit 1; fi\n\
         mount -t fuse.zarrfs -o read_ahead=128K,noatime,nodev '{store}' \"$MNT\"\n\
         dev=$(grep \" $MNT \" /proc/self/mountinfo | cut -d' ' -f3)\n\
         cat /sys/class/bdi/0:${{dev#*:}}/read_ahead_kb > \"$S/read_ahead_kb\"\n\
         cmp \"$MNT/{array}\" \"$S/expected\"\n\
         umount \"$MNT\"\n",
        store = case.store.display(),
    );
    let out = scene.run(&script);
    assert!(out.status.success(), "{}", describe(&out));
    let notice = std::fs::read_to_string(scene.path("mount.err")).unwrap();
    assert!(
        notice.contains("option rw") && notice.contains("mounting read-only"),
        "no notice for rw: {notice:?}"
    );
    let mountinfo = std::fs::read_to_string(scene.path("mountinfo")).unwrap();
    assert!(
        mountinfo.contains(" ro,") && mountinfo.contains(" - fuse.zarrfs "),
        "{mountinfo}"
    );
    let kb = std::fs::read_to_string(scene.path("read_ahead_kb")).unwrap();
    assert_eq!(kb.trim(), "128", "-o read_ahead=128K not in effect");
}

/// An fstab line with the options a boot-time mount of a network store has (`_netdev`,
/// `nofail`, `x-systemd.automount`, `noauto`) and zarrfs options (`cache_size`, `cache_dir`):
/// `mount MNT` finds it, the array reads byte-exact, the cache directory fills, `umount` ends
/// it.
#[test]
fn an_fstab_line_with_zarrfs_options_mounts_with_mount_and_unmounts_with_umount() {
    let Some((scene, case, array, data)) = scene_with_fixture() else {
        return;
    };
    let (mnt, cache) = (scene.path("mnt"), scene.path("cache"));
    let line = format!(
        "{} {} fuse.zarrfs ro,noauto,nofail,_netdev,x-systemd.automount,\
         x-systemd.idle-timeout=300,cache_size=64M,cache_dir={} 0 0",
        case.store.display(),
        mnt.display(),
        cache.display()
    );
    scene.add_fstab_line(&line);
    let script = format!(
        "mount \"$MNT\"\n\
         cmp \"$MNT/{array}\" \"$S/expected\"\n\
         grep -q '\"cache_dir\"' \"$MNT/.zarrfs/stats\"\n\
         umount \"$MNT\"\n\
         if grep -q \" $MNT \" /proc/self/mountinfo; then echo still mounted; exit 1; fi\n"
    );
    let out = scene.run(&script);
    assert!(
        out.status.success(),
        "{}\nfstab line: {line}",
        describe(&out)
    );
    let kept: u64 = walk(&cache)
        .iter()
        .map(|p| p.metadata().unwrap().len())
        .sum();
    assert!(
        kept >= data.len() as u64,
        "the cache directory {} holds {kept} bytes, less than the array's {}",
        cache.display(),
        data.len()
    );
}

/// `mount.fuse3` called directly, as systemd mount units and scripts do, with the caller's
/// PATH: the options reach zarrfs the same way.
#[test]
fn mount_fuse3_called_directly_takes_zarrfs_options() {
    let Some((scene, case, array, _)) = scene_with_fixture() else {
        return;
    };
    let script = format!(
        "mount.fuse3 '{store}' \"$MNT\" -t zarrfs -o ro,nodev,nosuid,cache_size=32M,no_previews\n\
         cmp \"$MNT/{array}\" \"$S/expected\"\n\
         if [ -e \"$MNT/{array}.png\" ]; then echo preview shown; exit 1; fi\n\
         umount \"$MNT\"\n\
         mount.fuse3 '{store}' \"$MNT\" -t zarrfs -o ro\n\
         [ -e \"$MNT/{array}.png\" ]\n\
         umount \"$MNT\"\n",
        store = case.store.display(),
    );
    let out = scene.run(&script);
    assert!(out.status.success(), "{}", describe(&out));
}

/// `-o drop_privileges`: mount.fuse3 mounts by itself and hands zarrfs the connection as
/// `/dev/fd/N`, which zarrfs does not take: it says so, naming the option, with status 2.
#[test]
fn mount_fuse3_drop_privileges_is_refused_naming_it() {
    let Some((scene, case, _, _)) = scene_with_fixture() else {
        return;
    };
    let script = format!(
        "if mount.fuse3 '{store}' \"$MNT\" -t zarrfs -o ro,drop_privileges 2> \"$S/err\"; then\n\
           echo mounted; exit 1\n\
         else echo $? > \"$S/status\"; fi\n",
        store = case.store.display(),
    );
    let out = scene.run(&script);
    assert!(out.status.success(), "{}", describe(&out));
    let said = std::fs::read_to_string(scene.path("err")).unwrap();
    assert!(said.contains("drop_privileges"), "{said}");
    let status = std::fs::read_to_string(scene.path("status")).unwrap();
    assert_eq!(status.trim(), "2", "{said}");
}

/// Every regular file below `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        match e.file_type().unwrap().is_dir() {
            true => out.extend(walk(&p)),
            false => out.push(p),
        }
    }
    out
}

/// The fstab lines of the README and the configuration page: with their options field, the
/// demo store mounts through mount(8) (their stores are examples, not reachable here).
#[test]
fn the_fstab_lines_of_the_manual_mount_with_their_options() {
    if !ready() {
        return;
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut lines = Vec::new();
    for doc in ["README.md", "docs/configuration.md"] {
        let text = std::fs::read_to_string(repo.join(doc)).unwrap();
        lines.extend(
            text.lines()
                .filter(|l| {
                    let fields: Vec<&str> = l.split_whitespace().collect();
                    fields.len() == 6 && fields[2] == "fuse.zarrfs"
                })
                .map(String::from),
        );
    }
    assert!(lines.len() >= 4, "{lines:?}");
    for line in lines {
        let scene = Scene::new();
        let options = line.split_whitespace().nth(3).unwrap();
        scene.add_fstab_line(&format!(
            "{} {} fuse.zarrfs {options} 0 0",
            repo.join("examples/demo.zarr").display(),
            scene.path("mnt").display()
        ));
        let out = scene.run(
            "mount \"$MNT\"\n\
             ls \"$MNT/surface\" | grep -qx temperature\n\
             umount \"$MNT\"\n",
        );
        assert!(out.status.success(), "{line}\n{}", describe(&out));
    }
}

/// The `mount -t fuse.zarrfs` commands of the README and the configuration page, on the demo
/// store and the scene's mount point instead of their example ones, each followed by `umount`.
#[test]
fn the_mount_commands_of_the_manual_mount() {
    if !ready() {
        return;
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let demo = repo.join("examples/demo.zarr");
    let mut commands = Vec::new();
    for doc in ["README.md", "docs/configuration.md"] {
        let text = std::fs::read_to_string(repo.join(doc)).unwrap();
        commands.extend(
            text.lines()
                .filter(|l| l.starts_with("mount -t fuse.zarrfs ") && !l.contains("STORE"))
                .map(|l| l.split(" #").next().unwrap().trim().to_string()),
        );
    }
    assert!(commands.len() >= 3, "{commands:?}");
    for command in commands {
        let fields: Vec<&str> = command.split_whitespace().collect();
        let (store, mnt) = (fields[fields.len() - 2], fields[fields.len() - 1]);
        let ours = command
            .replace(store, &demo.display().to_string())
            .replace(mnt, "\"$MNT\"");
        let scene = Scene::new();
        let out = scene.run(&format!(
            "{ours}\nls \"$MNT/surface\" | grep -qx temperature\numount \"$MNT\"\n"
        ));
        assert!(out.status.success(), "{command}\n{}", describe(&out));
    }
}

/// An fstab line with `x-systemd.automount`, mounted as systemd mounts it: an autofs direct
/// mount on the mount point (`automount.py`, a daemon as systemd's), whose first access runs
/// `mount MNT` in the daemon's process group. The access is answered with the array's bytes:
/// zarrfs mounts before it leaves that process group (from a session of its own, its lookup of
/// the mount point would wait on the pending automount, which the daemon completes only once
/// the mount command returns).
#[test]
fn an_fstab_line_with_x_systemd_automount_mounts_at_the_first_access() {
    let Some((scene, case, array, _)) = scene_with_fixture() else {
        return;
    };
    if !Path::new("/dev/autofs").exists() {
        assert!(
            std::env::var_os("ZARRFS_REQUIRE_FUSE").is_none(),
            "no autofs here (modprobe autofs4)"
        );
        eprintln!("skipping: no autofs (/dev/autofs)");
        return;
    }
    scene.add_fstab_line(&format!(
        "{} {} fuse.zarrfs ro,noauto,nofail,x-systemd.automount 0 0",
        case.store.display(),
        scene.path("mnt").display()
    ));
    let daemon = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuse/automount.py");
    // The automount daemon gives the mount 60 s, then fails the access; its end leaves the
    // autofs mount on $MNT under the FUSE one.
    let script = format!(
        "python3 '{daemon}' \"$MNT\" 60 mount \"$MNT\" > \"$S/automount.out\" 2>&1 &\n\
         until grep -q armed \"$S/automount.out\"; do\n\
           kill -0 $! 2>/dev/null || {{ cat \"$S/automount.out\"; exit 1; }}\n\
           sleep 0.05\n\
         done\n\
         cmp \"$MNT/{array}\" \"$S/expected\"\n\
         wait $!\n\
         grep -q '^mounted$' \"$S/automount.out\"\n\
         umount \"$MNT\"\n\
         umount \"$MNT\"\n",
        daemon = daemon.display(),
    );
    let out = scene.run(&script);
    let said = std::fs::read_to_string(scene.path("automount.out")).unwrap_or_default();
    assert!(
        out.status.success(),
        "{}\nautomount daemon: {said}",
        describe(&out)
    );
}
