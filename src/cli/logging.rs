//! Logging to stderr, and once daemonized to a log file or syslog.

use nix::syslog::{openlog, syslog, Facility, LogFlags, Severity};
use std::fs::File;
use std::io::Write;
use std::os::unix::net::{UnixDatagram, UnixStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

static TO_SYSLOG: AtomicBool = AtomicBool::new(false);

/// The socket syslog(3) writes to.
const SYSLOG_SOCKET: &str = "/dev/log";

/// Writes log records to stderr, or to syslog once [`use_syslog`] was called.
struct Sink;

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if TO_SYSLOG.load(Ordering::Relaxed) {
            let text = String::from_utf8_lossy(buf);
            for line in text.lines().filter(|l| !l.is_empty()) {
                // nix: syslog(3) is a library call, not a syscall rustix wraps.
                let _ = syslog(Severity::LOG_WARNING, &line.replace('\0', " "));
            }
            Ok(buf.len())
        } else {
            std::io::stderr().write(buf)
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// Sets up `log` at the level `-v` asks for (warn, info, debug, trace); `RUST_LOG` overrides.
pub fn init(verbose: u8) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    // object_store logs its retries (through tracing's log records) at info: seen with -v.
    let default = format!("zarrfs={level},object_store={level},fuser=error");
    let _ = env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(default))
        .target(env_logger::Target::Pipe(Box::new(Sink)))
        .try_init();
}

/// Opens `--log-file` for the daemon's log (appending; a link is followed, as the user named the
/// file); says why on stderr when it cannot.
pub fn open_log_file(path: &Path) -> Option<File> {
    let opened = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path);
    opened
        .inspect_err(|e| eprintln!("zarrfs: cannot open log file {}: {e}", path.display()))
        .ok()
}

/// Where a daemon without `--log-file` logs when there is no syslog to take its lines (as in
/// most containers): a file beside its pid file, named after the mount's device, opened never
/// through a link. Says where (or why not) once on stderr. None when syslog listens.
pub fn fallback_file(mountpoint: &Path) -> Option<File> {
    // syslog(3) tries a datagram socket, then a stream socket.
    let datagram = UnixDatagram::unbound().and_then(|s| s.connect(SYSLOG_SOCKET));
    if datagram.is_ok() || UnixStream::connect(SYSLOG_SOCKET).is_ok() {
        return None;
    }
    let dev = super::pidfile::device_of(mountpoint)?;
    let opened = super::pidfile::dir()
        .map_err(|e| e.to_string())
        .and_then(|dir| {
            let file = dir.join(format!("{dev}.log"));
            match super::pidfile::open_private(&file, true) {
                Ok(opened) => Ok((opened, file)),
                Err(e) => Err(format!("{}: {e}", file.display())),
            }
        });
    match opened {
        Ok((opened, file)) => {
            eprintln!(
                "zarrfs: no syslog here ({SYSLOG_SOCKET} does not answer): logging to {}",
                file.display()
            );
            Some(opened)
        }
        Err(why) => {
            eprintln!(
                "zarrfs: no syslog here ({SYSLOG_SOCKET} does not answer), and no log file: \
                 {why}; the daemon's log is lost (use --log-file)"
            );
            None
        }
    }
}

/// Sends further log records to syslog (ident `zarrfs`).
pub fn use_syslog() {
    let _ = openlog(Some(c"zarrfs"), LogFlags::LOG_PID, Facility::LOG_DAEMON);
    TO_SYSLOG.store(true, Ordering::Relaxed);
}
