//! The `zarrfs` command: argument parsing, daemonizing, logging, signals, unmount.

mod args;
mod daemon;
mod error;
mod generate;
mod logging;
mod mount_error;
mod mount_options;
mod mount_point;
mod mount_table;
mod option_list;
mod pidfile;
mod progress;
mod serve;
mod size;
mod unmount;

pub use args::{Generated, MountArgs, Options, UnmountArgs};
pub use error::{MountError, OptionError, UnmountError};
pub use mount_options::{parse_mount_options, MountOptions};
pub use size::parse_size;
pub use unmount::{unmount, Unmounted};

use clap::{CommandFactory, Parser};
use std::path::Path;

/// Runs the command line; returns the process exit code.
pub fn main() -> i32 {
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("unmount") {
        let args = UnmountArgs::parse_from(
            std::iter::once("zarrfs unmount".to_string()).chain(argv.into_iter().skip(2)),
        );
        return match unmount(&args.mountpoint) {
            Ok(Unmounted::Done) => 0,
            Ok(Unmounted::DaemonStopped(pid)) => {
                let shown = args.mountpoint.display();
                eprintln!(
                    "zarrfs: unmounted {shown}; its daemon (pid {pid}) is stopped and ends only \
                     once continued (kill -CONT {pid}); until then a new mount on {shown} could be \
                     unmounted by it as it ends"
                );
                0
            }
            Err(e) => {
                eprintln!("zarrfs: {e}");
                1
            }
        };
    }
    let argv = match option_list::expand(argv, &MountArgs::command()) {
        Ok(argv) => argv,
        Err(e) => {
            eprintln!("zarrfs: {e}");
            return 2;
        }
    };
    let args = MountArgs::parse_from(argv);
    if let Some(what) = args.generate {
        return generate::print(what);
    }
    // clap requires both unless --generate is given.
    let (Some(store), Some(mountpoint)) = (&args.store, &args.mountpoint) else {
        return 2;
    };
    logging::init(args.options.verbose);
    crate::memory::tune_malloc();
    raise_descriptor_limit();
    match prepare(store, mountpoint, &args.options) {
        Ok(prepared) if args.options.foreground => serve::serve(prepared, None),
        Ok(prepared) => daemon::daemonize(|ready| serve::serve(prepared, Some(ready))),
        Err(e) => {
            eprintln!("zarrfs: {e}");
            e.exit_status()
        }
    }
}

/// Raises the soft limit of open descriptors to the hard limit (as Go's runtime does): a
/// mount serving many arrays from a cache directory, or many requests to a remote store at
/// once, needs more than the usual 1024; a debug line says so.
fn raise_descriptor_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let limit = getrlimit(Resource::Nofile);
    if limit.current == limit.maximum {
        return;
    }
    let shown = |n: Option<u64>| n.map_or("unlimited".to_string(), |n| n.to_string());
    let (from, to) = (shown(limit.current), shown(limit.maximum));
    let raised = rustix::process::Rlimit {
        current: limit.maximum,
        maximum: limit.maximum,
    };
    match setrlimit(Resource::Nofile, raised) {
        Ok(()) => log::debug!("open descriptors: soft limit raised from {from} to {to}"),
        Err(e) => log::debug!("open descriptors: soft limit {from} not raised to {to}: {e}"),
    }
}

/// Everything checked before the mount: the store opens, the mount point is a directory, the
/// options parse.
pub struct Prepared {
    store: Box<dyn crate::store::Store>,
    location: String,
    /// Requests to a remote store, shown while its hierarchy is scanned.
    requests: Option<std::sync::Arc<crate::store::RequestCounts>>,
    mountpoint: mount_point::MountPoint,
    mount_options: MountOptions,
    options: Options,
}

fn prepare(store: &str, mountpoint: &Path, options: &Options) -> Result<Prepared, MountError> {
    // First, so that a refused option is said (with status 2) whatever else is wrong.
    if handed_over(mountpoint) {
        return Err(OptionError::HandedOver(mountpoint.to_path_buf()).into());
    }
    let mut mount_options = parse_mount_options(&options.mount_options)?;
    let options = absolute_paths(options)?;
    let (store, location, requests) = open_store(store, &options)?;
    for unused in options.not_applying(requests.is_some()) {
        log::warn!("{unused}");
    }
    mount_options.name_after(&location);
    for notice in &mount_options.notices {
        eprintln!("zarrfs: {notice}");
    }
    // Last, as it may create the mount point.
    let mountpoint = mount_point::MountPoint::claim(mountpoint)?;
    Ok(Prepared {
        store,
        location,
        requests,
        mountpoint,
        mount_options,
        options,
    })
}

/// True for `/dev/fd/N`, the mount point mount.fuse3 passes with `-o drop_privileges`: a
/// connection to a mount it made itself.
fn handed_over(mountpoint: &Path) -> bool {
    mountpoint
        .to_str()
        .and_then(|p| p.strip_prefix("/dev/fd/"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// `options` with every relative path made absolute from the working directory: the daemon
/// changes to `/` before it opens the log file and the cache directory, and a remote reference
/// set or repository is recognised, and its allowed targets resolved, only after that.
fn absolute_paths(options: &Options) -> Result<Options, MountError> {
    let absolute = |option: &'static str, path: &Path| {
        std::path::absolute(path).map_err(|cause| MountError::Relative {
            option,
            path: path.to_path_buf(),
            cause,
        })
    };
    let mut options = options.clone();
    if let Some(file) = &options.log_file {
        options.log_file = Some(absolute("log-file", file)?);
    }
    // The default directory too: $XDG_CACHE_HOME or $HOME may be relative.
    if let Some(dir) = options.cache_dir() {
        options.cache_dir = Some(absolute("cache-dir", &dir)?);
        options.default_cache_dir = false;
    }
    for target in &mut options.allow_target {
        if crate::store::is_local_path(target) {
            *target = absolute("allow-target", Path::new(target))?
                .to_string_lossy()
                .into_owned();
        }
    }
    Ok(options)
}

/// An opened store, the location it is shown as, and its request counts when remote.
type Opened = (
    Box<dyn crate::store::Store>,
    String,
    Option<std::sync::Arc<crate::store::RequestCounts>>,
);

/// Opens the store: a local path (canonicalized) or a URL; a store whose bytes come over the
/// network (its latency says) counts its requests.
fn open_store(arg: &str, o: &Options) -> Result<Opened, MountError> {
    let failed = |cause| MountError::Store {
        store: match crate::store::is_local_path(arg) {
            true => arg.to_string(),
            false => crate::store::display_url(arg),
        },
        cause,
    };
    let remote = crate::store::RemoteOptions {
        endpoint: o.endpoint.clone(),
        region: o.region.clone(),
        anonymous: o.anonymous,
        timeout: std::time::Duration::from_secs(o.timeout),
        version: o.reference.clone(),
        allow_targets: o.allow_target.clone(),
        ..crate::store::RemoteOptions::default()
    };
    let (store, location) = if crate::store::is_local_path(arg) {
        let location = std::fs::canonicalize(arg)
            .map_err(|cause| MountError::StorePath {
                store: arg.to_string(),
                cause,
            })?
            .to_string_lossy()
            .into_owned();
        let store = crate::store::open_with(&location, &remote).map_err(failed)?;
        (store, location)
    } else {
        let store = crate::store::open_with(arg, &remote).map_err(failed)?;
        (store, crate::store::display_url(arg))
    };
    // As the store says: a local reference set whose targets are remote is counted too.
    if store.latency() == crate::store::Latency::Local {
        return Ok((store, location, None));
    }
    let (counted, counts) = crate::store::CountingStore::new(store);
    Ok((Box::new(counted), location, Some(counts)))
}
