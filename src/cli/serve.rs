//! Loading the hierarchy, mounting, waiting for a signal or an unmount.

use super::args::DEFAULT_READ_AHEAD;
use super::daemon::Ready;
use super::error::MountError;
use super::unmount::{detach, detach_soon, Refusal};
use super::Prepared;
use crate::cache::read_ahead::ReadPolicy;
use crate::fuse::ZarrFs;
use nix::sys::pthread::pthread_kill;
use nix::sys::signal::{kill, SigSet, Signal};
use nix::unistd::getpid;
use rustix::io::Errno;
use rustix::process::{getgid, getuid};
use std::os::unix::thread::JoinHandleExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a fresh mount may take to answer before we give up.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the daemon's end waits for the threads still using the view (a request answered
/// on a worker, a group loaded ahead) to let it go.
const LET_GO_TIMEOUT: Duration = Duration::from_secs(2);

/// Signals that end the mount, plus SIGUSR1 which the session thread sends when it ends.
fn signal_set() -> SigSet {
    use Signal::{SIGHUP, SIGINT, SIGTERM, SIGUSR1};
    SigSet::from_iter([SIGINT, SIGTERM, SIGHUP, SIGUSR1])
}

/// While the store loads nothing is mounted yet: a signal then ends the process at once, so a
/// store that never answers cannot hold the mount command (the signals stay blocked, as the
/// threads started meanwhile must not take them once the mount is up).
///
/// Dropping it marks the loading done and wakes the watching thread with a SIGUSR1 sent to that
/// thread alone (no session runs yet to send one to the process). The kernel hands a thread the
/// signals sent to it before those sent to the process, so a signal sent to the process as the
/// loading ends stays pending, or is sent again, for the serving thread's wait (a SIGUSR1 from
/// outside in that instant is taken for the wake-up).
struct LoadingSignals {
    done: Arc<AtomicBool>,
    /// Joined on drop; until then its id stays valid for the wake-up, even if it has not run yet.
    watcher: Option<JoinHandle<()>>,
}

impl LoadingSignals {
    /// Watches for the signals of [`signal_set`] until dropped; removes `mountpoint` if zarrfs
    /// created it before exiting. Call with those signals blocked: the watcher inherits the mask,
    /// so its wake-up waits for it while it starts.
    fn watch(mountpoint: super::mount_point::MountPoint) -> Self {
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let spawned = std::thread::Builder::new()
            .name("loading-signals".into())
            .spawn(move || {
                // Returns at once if dropped before it started: the wake-up is already pending.
                let sig = match signal_set().wait() {
                    Ok(sig) => sig,
                    Err(e) => {
                        log::warn!("cannot wait for signals while the store loads: {e}");
                        return;
                    }
                };
                if flag.load(Ordering::SeqCst) {
                    // Loaded meanwhile: SIGUSR1 is the wake-up; another signal goes back to the
                    // process, for the serving thread's wait.
                    if sig != Signal::SIGUSR1 {
                        let _ = kill(getpid(), sig);
                    }
                    return;
                }
                let sig = sig as i32;
                log::warn!("signal {sig} while the store was loading: not mounted, exiting");
                eprintln!("zarrfs: signal {sig} while the store was loading: not mounted");
                mountpoint.release();
                std::process::exit(1);
            });
        let watcher = spawned
            .inspect_err(|e| log::warn!("cannot watch for signals while the store loads: {e}"))
            .ok();
        LoadingSignals { done, watcher }
    }
}

impl Drop for LoadingSignals {
    fn drop(&mut self) {
        self.done.store(true, Ordering::SeqCst);
        if let Some(watcher) = self.watcher.take() {
            let _ = pthread_kill(watcher.as_pthread_t(), Signal::SIGUSR1);
            let _ = watcher.join();
        }
    }
}

/// Mounts and serves until unmounted; returns the exit code. With `ready`, reports the outcome
/// of the mount to the waiting parent.
pub fn serve(p: Prepared, ready: Option<Ready>) -> i32 {
    let set = signal_set();
    // In this (only) thread; threads spawned later inherit the mask. Fails only for an invalid
    // `how`.
    let _ = set.thread_block();
    let log_file = p.options.log_file.clone();
    let (location, mountpoint) = (p.location.clone(), p.mountpoint.clone());
    let mounted = match mount(p) {
        Ok(m) => m,
        Err(e) => {
            mountpoint.release();
            match ready {
                Some(r) => r.fail(&e.to_string()),
                None => eprintln!("zarrfs: {e}"),
            }
            return 1;
        }
    };
    if let Some(r) = ready {
        // A log file that cannot be opened (said on stderr) falls back as no log file does:
        // the log always goes somewhere that is said.
        let log = log_file
            .and_then(|path| super::logging::open_log_file(&path))
            .or_else(|| super::logging::fallback_file(&mounted.mountpoint));
        r.succeed(log);
    }
    log::info!(
        "serving {location} on {} (pid {})",
        mounted.mountpoint.display(),
        std::process::id()
    );
    mounted.wait(&set)
}

struct Mounted {
    thread: std::thread::JoinHandle<std::io::Result<()>>,
    /// Set by the session thread as it ends, before its SIGUSR1: one from outside is not it.
    ended: Arc<AtomicBool>,
    /// Answered "not connected" when the daemon ends with requests still waiting.
    waiting: crate::fuse::Waiting,
    /// Let go last by [`Mounted::exit`]: dropped once the session ended; when the mount was
    /// detached in use the session still holds it, and only its backing files are let go.
    view: Arc<crate::view::View>,
    mountpoint: std::path::PathBuf,
    /// The device number of this mount (`major:minor`), to tell it from a mount under it.
    dev: Option<String>,
    /// Removed when the daemon ends, after the session has finished.
    _pid_file: Option<super::pidfile::PidFile>,
}

fn mount(p: Prepared) -> Result<Mounted, MountError> {
    let started = Instant::now();
    let loading = LoadingSignals::watch(p.mountpoint.clone());
    let progress = p
        .requests
        .clone()
        .map(|c| super::progress::Progress::start(c, &p.location));
    let store: Arc<dyn crate::store::Store> = Arc::from(p.store);
    let latency = store.latency();
    let mut view = crate::view::from_store(
        store.clone(),
        &p.location,
        p.options.cache_size,
        &crate::meta::LoadOptions {
            consolidated: !p.options.no_consolidated,
        },
    )?;
    drop(progress);
    if let Some(dir) = p.options.cache_dir() {
        match crate::backing::BackingDir::open(&dir, p.options.cache_dir_size) {
            Ok(backing) => view.set_backing_dir(backing, store, &p.location),
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                return Err(MountError::CacheDir { dir, cause: e });
            }
            Err(e) => log::warn!("cache dir {}: {e}; serving without it", dir.display()),
        }
    }
    if p.options.no_previews {
        view.hide_previews();
    }
    if let Some(counts) = &p.requests {
        view.show_requests(counts.clone());
    }
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    view.set_read_policy(ReadPolicy::for_store(latency, cores));
    let view = Arc::new(view);
    if !p.options.no_look_ahead {
        view.look_ahead();
    }
    log::info!(
        "{}: root loaded in {:.3} s; every other group is loaded when first listed",
        p.location,
        started.elapsed().as_secs_f64()
    );
    let (uid, gid) = (getuid().as_raw(), getgid().as_raw());
    // Requests of a remote store are bounded by the store's time bound; local ones wait for
    // the disk.
    let timeout =
        (latency == crate::store::Latency::Network).then(|| Duration::from_secs(p.options.timeout));
    let fs = ZarrFs::new(view.clone(), uid, gid, timeout);
    let waiting = fs.waiting();
    let mut config = fuser::Config::default();
    config.mount_options = super::mount_options::for_fuser(p.mount_options.options);
    config.acl = p.mount_options.acl;
    config.n_threads = Some(p.options.threads.unwrap_or((2 * cores).max(4)));
    config.clone_fd = true;
    let mountpoint = p.mountpoint.path;
    drop(loading);
    let session =
        fuser::Session::new(fs, &mountpoint, &config).map_err(|cause| MountError::Refused {
            mountpoint: mountpoint.clone(),
            cause,
        })?;
    let ended = Arc::new(AtomicBool::new(false));
    let ending = ended.clone();
    let thread = std::thread::Builder::new()
        .name("fuse".into())
        .spawn(move || {
            let result = session.run();
            // Wakes the main thread's sigwait.
            ending.store(true, Ordering::SeqCst);
            let _ = kill(getpid(), Signal::SIGUSR1);
            result
        })
        .map_err(MountError::SessionThread)?;
    if let Err(e) = wait_until_mounted(&mountpoint) {
        let _ = detach(&mountpoint, false);
        return Err(e);
    }
    set_read_ahead(&mountpoint, p.options.read_ahead);
    let pid_file = super::pidfile::PidFile::create(&mountpoint);
    Ok(Mounted {
        thread,
        ended,
        waiting,
        view,
        dev: super::pidfile::device_of(&mountpoint),
        mountpoint,
        _pid_file: pid_file,
    })
}

/// Waits until the mount table shows the FUSE mount on `mountpoint` (the kernel holds every
/// request until the session has answered INIT). The mount itself is not asked: see
/// [`super::pidfile::device_of`].
fn wait_until_mounted(mountpoint: &Path) -> Result<(), MountError> {
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        if super::mount_table::mounted_at(mountpoint).is_some_and(|m| m.fstype.starts_with("fuse"))
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(MountError::NeverMounted {
                path: mountpoint.to_path_buf(),
                waited: READY_TIMEOUT,
            });
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Sets the mount's `read_ahead_kb` (the kernel's default is 128 KiB) to `bytes`, or to
/// [`DEFAULT_READ_AHEAD`] when not given: with a larger one, sequential reads arrive in large
/// requests. Needs root and a writable /sys; when it cannot be set, a readahead asked for is
/// warned about, the default only said at info level.
fn set_read_ahead(mountpoint: &Path, bytes: Option<u64>) {
    let kb = bytes.unwrap_or(DEFAULT_READ_AHEAD) / 1024;
    let (knob, set) = match super::pidfile::device_of(mountpoint) {
        Some(dev) => {
            let knob = format!("/sys/class/bdi/{dev}/read_ahead_kb");
            let set = std::fs::write(&knob, kb.to_string());
            (knob, set.map_err(|e| e.to_string()))
        }
        None => (
            "read_ahead_kb".into(),
            Err("the mount's device is not known".into()),
        ),
    };
    match set {
        Ok(()) => log::debug!("{knob} = {kb}"),
        Err(e) if bytes.is_some() => log::warn!(
            "--read-ahead not applied: cannot set {knob} to {kb}: {e} (it needs root and a \
             writable /sys); reads stay at the kernel's default readahead"
        ),
        Err(e) => log::info!(
            "cannot set {knob} to {kb}: {e}; reads stay at the kernel's default readahead"
        ),
    }
}

/// How the daemon's wait ended.
enum End {
    /// The session ended (the mount is gone).
    SessionEnded,
    /// The mount was detached while in use (by another, or lazily by zarrfs): its session goes
    /// on until the process exits, which then exits with this status.
    Detached(i32),
}

impl Mounted {
    /// Blocks until a signal asks to stop (then unmounts) or the mount goes away; returns the
    /// exit status (see [`Mounted::exit`]).
    fn wait(self, set: &SigSet) -> i32 {
        let end = self.wait_for_end(set);
        self.exit(end)
    }

    /// Waits for the end of the mount. A mount still busy after a moment's retries (as
    /// `zarrfs unmount` makes them) is not unmounted; the next signal tries again and, if it
    /// is still busy, detaches it lazily.
    fn wait_for_end(&self, set: &SigSet) -> End {
        let shown = self.mountpoint.display();
        let mut refused = false;
        loop {
            // sigwait fails only for an invalid set (then logged as signal 0).
            let sig = match set.wait() {
                Ok(Signal::SIGUSR1) if self.ended.load(Ordering::SeqCst) => {
                    return End::SessionEnded
                }
                Ok(Signal::SIGUSR1) => {
                    log::warn!("signal SIGUSR1 from outside: ignored");
                    continue;
                }
                Ok(sig) => sig as i32,
                Err(_) => 0,
            };
            log::info!("signal {sig}: unmounting {shown}");
            match detach_soon(&self.mountpoint) {
                Ok(()) => return End::SessionEnded,
                // Detached by someone else (umount -l) while in use: nothing left to unmount.
                Err(_) if !still_mounted(&self.mountpoint, self.dev.as_deref()) => {
                    log::warn!(
                        "{shown} is no longer mounted (detached by another): exiting; \
                         processes still using it get \"Transport endpoint is not connected\""
                    );
                    return End::Detached(0);
                }
                Err(e) if !refused => {
                    refused = true;
                    let why = match e {
                        Refusal::Busy => "busy (a process has a file open or its working \
                                          directory in it)"
                            .to_string(),
                        other => format!("not unmounted ({other})"),
                    };
                    log::warn!(
                        "{shown} is {why}, so it stays mounted; signal again (Ctrl-C) to \
                         retry, and if it still fails zarrfs detaches it lazily and exits"
                    );
                }
                Err(_) => {
                    let outcome = match detach(&self.mountpoint, true) {
                        Ok(()) => "detached it lazily (umount -l)".to_string(),
                        Err(e) => format!("could not detach it either ({e})"),
                    };
                    log::warn!(
                        "{shown} is still not unmounted: {outcome} and exiting; processes still \
                         using it get \"Transport endpoint is not connected\""
                    );
                    return End::Detached(1);
                }
            }
        }
    }

    /// The daemon's end, on every path: the view's backing files are finished (see
    /// [`let_go`]) before the process exits. An ended session is joined and the whole view
    /// let go; a detached mount's session still holds the view, so its requests are cut off
    /// and its backing files taken out of it and let go.
    fn exit(self, end: End) -> i32 {
        match end {
            End::SessionEnded => {
                let ended = self.thread.join();
                let_go(vec![self.view]);
                match ended {
                    Ok(ended) => exit_code(ended, || {
                        still_mounted(&self.mountpoint, self.dev.as_deref())
                    }),
                    Err(_) => 1,
                }
            }
            End::Detached(code) => {
                self.waiting.cut_off();
                let files = (self.view.backing_dir()).map(|dir| dir.let_go_all(LET_GO_TIMEOUT));
                let_go(files.unwrap_or_default());
                code
            }
        }
    }
}

/// Drops each of `held` on this thread once no other holds it (waiting at most
/// [`LET_GO_TIMEOUT`] in all): a request's worker or a look-ahead thread may still hold the
/// view or a backing file for a moment after the session ended, and a backing file is
/// finished (its map saved, or synced and renamed into place) only as it is dropped, which
/// must happen before the process exits.
fn let_go<T>(held: Vec<Arc<T>>) {
    let deadline = Instant::now() + LET_GO_TIMEOUT;
    for held in held {
        while Arc::strong_count(&held) > 1 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        drop(held);
    }
}

/// True while the mount of device `dev` is still on `mountpoint`: the topmost mount there is
/// not another one (the mount point may itself be a mount, which stays after ours goes).
fn still_mounted(mountpoint: &Path, dev: Option<&str>) -> bool {
    super::mount_table::resolve(mountpoint)
        .ok()
        .and_then(|p| super::mount_table::mounted_at(&p))
        .is_some_and(|m| dev.is_none_or(|dev| m.dev == dev))
}

/// The daemon's exit status once its session `ended`. An unmount can tear the connection down
/// while a request is being read, and the kernel then answers that read "connection aborted"
/// instead of "no device": with the mount gone (`still_mounted` false), that is the normal end.
fn exit_code(ended: std::io::Result<()>, still_mounted: impl FnOnce() -> bool) -> i32 {
    match ended {
        Ok(()) => 0,
        Err(e) if Errno::from_io_error(&e) == Some(Errno::CONNABORTED) && !still_mounted() => {
            log::debug!("session ended with the unmount: {e}");
            0
        }
        Err(e) => {
            log::error!("session ended: {e}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::exit_code;
    use rustix::io::Errno;

    #[test]
    fn an_aborted_session_is_a_normal_end_only_once_the_mount_is_gone() {
        let aborted = || Err(Errno::CONNABORTED.into());
        let other = || Err(Errno::IO.into());
        assert_eq!(exit_code(Ok(()), || true), 0);
        assert_eq!(exit_code(aborted(), || false), 0);
        assert_eq!(exit_code(aborted(), || true), 1, "aborted, still mounted");
        assert_eq!(exit_code(other(), || false), 1);
    }
}
