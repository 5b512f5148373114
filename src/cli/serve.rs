//! Loading the hierarchy, mounting, waiting for a signal or an unmount.

use super::daemon::Ready;
use super::unmount::{detach, Refusal};
use super::Prepared;
use crate::fuse::ZarrFs;
use crate::view::ReadPolicy;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a fresh mount may take to answer before we give up.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// Chunk requests a remote store has in flight while reading ahead (loopback S3 peaks at 8-16 in
/// flight; more cover higher latency).
const REMOTE_IN_FLIGHT: usize = 16;

/// Signals that end the mount, plus SIGUSR1 which the session thread sends when it ends.
fn signal_set() -> libc::sigset_t {
    // SAFETY: sigset operations on a local set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGUSR1] {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Mounts and serves until unmounted; returns the exit code. With `ready`, reports the outcome
/// of the mount to the waiting parent.
pub fn serve(p: Prepared, ready: Option<Ready>) -> i32 {
    let set = signal_set();
    // SAFETY: blocking signals in this (only) thread; threads spawned later inherit the mask.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    let log_file = p.options.log_file.clone();
    let (location, mountpoint) = (p.location.clone(), p.mountpoint.clone());
    let mounted = match mount(p) {
        Ok(m) => m,
        Err(e) => {
            mountpoint.release();
            match ready {
                Some(r) => r.fail(&e),
                None => eprintln!("zarrfs: {e}"),
            }
            return 1;
        }
    };
    if let Some(r) = ready {
        let log_file = log_file.or_else(|| super::logging::fallback_file(&mounted.mountpoint));
        r.succeed(log_file.as_deref());
    }
    log::info!(
        "serving {location} on {} (pid {})",
        mounted.mountpoint.display(),
        std::process::id()
    );
    mounted.wait(&set)
}

/// Has the allocator keep a sixteenth of the cache budget (at most 64 MiB) touched and ready
/// for decoded chunks, so the first reads of a mount do not wait for the kernel to back fresh
/// memory (see `huge_pages`); done on a thread of its own.
fn keep_memory_ready(cache_size: u64) {
    let bytes = (cache_size / 16).min(64 << 20) as usize;
    let spawned = std::thread::Builder::new()
        .name("ready-memory".into())
        .spawn(move || crate::huge_pages::keep_ready(bytes));
    if let Err(e) = spawned {
        log::warn!("cannot start the thread that readies memory: {e}");
    }
}

struct Mounted {
    thread: std::thread::JoinHandle<std::io::Result<()>>,
    mountpoint: std::path::PathBuf,
    /// Removed when the daemon ends, after the session has finished.
    _pid_file: Option<super::pidfile::PidFile>,
}

fn mount(p: Prepared) -> Result<Mounted, String> {
    let started = Instant::now();
    let progress = p
        .requests
        .clone()
        .map(|c| super::progress::Progress::start(c, &p.location));
    let store: Arc<dyn crate::store::Store> = Arc::from(p.store);
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
            Err(e) => log::warn!("cache dir {}: {e}; serving without it", dir.display()),
        }
    }
    if p.options.no_previews {
        view.hide_previews();
    }
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    view.set_read_policy(if p.requests.is_some() {
        ReadPolicy::remote(REMOTE_IN_FLIGHT)
    } else {
        ReadPolicy::local(cores)
    });
    let view = Arc::new(view);
    log::info!(
        "{}: {} files, loaded in {:.3} s",
        p.location,
        view.len(),
        started.elapsed().as_secs_f64()
    );
    // SAFETY: getuid/getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let fs = ZarrFs::new(view, uid, gid);
    let mut config = fuser::Config::default();
    config.mount_options = p.mount_options.options;
    config.acl = p.mount_options.acl;
    config.n_threads = Some(p.options.threads.unwrap_or((2 * cores).max(4)));
    config.clone_fd = true;
    let mountpoint = p.mountpoint.path;
    let session = fuser::Session::new(fs, &mountpoint, &config)
        .map_err(|e| super::mount_error::explain(&e, &mountpoint))?;
    let thread = std::thread::Builder::new()
        .name("fuse".into())
        .spawn(move || {
            let result = session.run();
            // SAFETY: wakes the main thread's sigwait.
            unsafe { libc::kill(libc::getpid(), libc::SIGUSR1) };
            result
        })
        .map_err(|e| format!("cannot start the session thread: {e}"))?;
    if let Err(e) = wait_until_mounted(&mountpoint) {
        let _ = detach(&mountpoint, false);
        return Err(e);
    }
    set_read_ahead(&mountpoint, p.options.read_ahead);
    keep_memory_ready(p.options.cache_size);
    let pid_file = super::pidfile::PidFile::create(&mountpoint);
    Ok(Mounted {
        thread,
        mountpoint,
        _pid_file: pid_file,
    })
}

/// Waits until the mount table shows the FUSE mount on `mountpoint` (the kernel holds every
/// request until the session has answered INIT). The mount itself is not asked: see
/// [`super::pidfile::device_of`].
fn wait_until_mounted(mountpoint: &Path) -> Result<(), String> {
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        if super::mount_table::mounted_at(mountpoint).is_some_and(|m| m.fstype.starts_with("fuse"))
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "{} did not appear in the mount table within {READY_TIMEOUT:?}",
                mountpoint.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Sets the mount's `read_ahead_kb` (the kernel's default is 128 KiB): with a larger one,
/// sequential reads arrive in large requests. Needs root.
fn set_read_ahead(mountpoint: &Path, bytes: u64) {
    let Some(dev) = super::pidfile::device_of(mountpoint) else {
        return;
    };
    let knob = format!("/sys/class/bdi/{dev}/read_ahead_kb");
    let kb = bytes / 1024;
    match std::fs::write(&knob, kb.to_string()) {
        Ok(()) => log::debug!("{knob} = {kb}"),
        Err(e) => log::info!(
            "cannot set {knob} to {kb}: {e}; reads stay at the kernel's default readahead"
        ),
    }
}

impl Mounted {
    /// Blocks until a signal asks to stop (then unmounts) or the mount goes away. A busy mount
    /// is not unmounted; the next signal tries again and, if it is still busy, detaches it
    /// lazily and ends the process.
    fn wait(self, set: &libc::sigset_t) -> i32 {
        let shown = self.mountpoint.display();
        let mut refused = false;
        let mut sig = 0;
        loop {
            // SAFETY: waiting for signals of a valid set.
            unsafe { libc::sigwait(set, &mut sig) };
            if sig == libc::SIGUSR1 {
                break;
            }
            log::info!("signal {sig}: unmounting {shown}");
            match detach(&self.mountpoint, false) {
                Ok(()) => break,
                Err(Refusal::Busy) if !refused => {
                    refused = true;
                    log::warn!(
                        "{shown} is busy (a process has a file open or its working directory \
                         in it), so it stays mounted; signal again (Ctrl-C) to retry, and if \
                         it is still busy zarrfs detaches it lazily and exits"
                    );
                }
                Err(Refusal::Busy) => {
                    let outcome = match detach(&self.mountpoint, true) {
                        Ok(()) => "detached it lazily (umount -l)".to_string(),
                        Err(e) => format!("could not detach it either ({e:?})"),
                    };
                    log::warn!(
                        "{shown} is still busy: {outcome} and exiting; processes still using \
                         it get \"Transport endpoint is not connected\""
                    );
                    return 1;
                }
                Err(Refusal::Failed(e)) => log::error!("unmounting {shown}: {e}"),
            }
        }
        match self.thread.join() {
            Ok(Ok(())) => 0,
            Ok(Err(e)) => {
                log::error!("session ended: {e}");
                1
            }
            Err(_) => 1,
        }
    }
}
