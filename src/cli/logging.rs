//! Logging to stderr, and once daemonized to a log file or syslog.

use env_logger::fmt::ConfigurableFormat;
use log::Level;
use nix::syslog::{openlog, syslog, Facility, LogFlags, Severity};
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::{UnixDatagram, UnixStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

static TO_SYSLOG: AtomicBool = AtomicBool::new(false);

/// The socket syslog(3) writes to.
const SYSLOG_SOCKET: &str = "/dev/log";

/// Writes log records to stderr, or to syslog those [`init`]'s format marked for it.
struct Sink;

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let Some((severity, lines)) = for_syslog(buf) else {
            return std::io::stderr().write(buf);
        };
        for line in lines {
            // nix: syslog(3) is a library call, not a syscall rustix wraps.
            let _ = syslog(severity, &line.replace('\0', " "));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// The syslog severity of records at `level`.
fn severity(level: Level) -> Severity {
    match level {
        Level::Error => Severity::LOG_ERR,
        Level::Warn => Severity::LOG_WARNING,
        Level::Info => Severity::LOG_INFO,
        Level::Debug | Level::Trace => Severity::LOG_DEBUG,
    }
}

/// A record formatted for syslog (its level's digit, then the record without a timestamp):
/// the severity to send it at, and its non-empty lines. None for a record formatted for
/// stderr.
fn for_syslog(record: &[u8]) -> Option<(Severity, Vec<String>)> {
    let (&digit, text) = record.split_first()?;
    let level = Level::iter().nth(usize::from(digit.checked_sub(b'1')?))?;
    let text = String::from_utf8_lossy(text);
    let lines = text.lines().filter(|l| !l.is_empty()).map(String::from);
    Some((severity(level), lines.collect()))
}

/// Sets up `log` at the level `-v` asks for (warn, info, debug, trace); `RUST_LOG` overrides.
/// Records read `[TIME LEVEL target] message`; once [`use_syslog`] was called, syslog stamps
/// the time and takes the level as the severity, so they go there without either.
pub fn init(verbose: u8) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    // object_store logs its retries (through tracing's log records) at info: seen with -v.
    let default = format!("zarrfs={level},object_store={level},fuser=error");
    let stamped = ConfigurableFormat::default();
    let mut unstamped = ConfigurableFormat::default();
    unstamped.timestamp(None);
    let _ = env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(default))
        .format(move |buf, record| {
            if !TO_SYSLOG.load(Ordering::Relaxed) {
                return stamped.format(buf, record);
            }
            // The level's digit (1 for error), which the sink takes off.
            write!(buf, "{}", record.level() as usize)?;
            unstamped.format(buf, record)
        })
        .target(env_logger::Target::Pipe(Box::new(Sink)))
        .try_init();
}

/// Opens `--log-file` for the daemon's log (appending; a link is followed, as the user named the
/// file); says why on stderr when it cannot. A file it creates is private (0600), as the
/// fallback file is: logs name the paths looked up. An existing file keeps its mode.
pub fn open_log_file(path: &Path) -> Option<File> {
    let opened = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syslog_takes_each_level_as_its_severity_and_no_timestamp() {
        let at = |level: Level| {
            let record = format!("{}[{level:<5} zarrfs::x] one\n    two\n", level as usize);
            for_syslog(record.as_bytes()).unwrap()
        };
        let lines = vec!["[INFO  zarrfs::x] one".to_string(), "    two".to_string()];
        assert_eq!(at(Level::Info), (Severity::LOG_INFO, lines));
        assert_eq!(at(Level::Error).0, Severity::LOG_ERR);
        assert_eq!(at(Level::Warn).0, Severity::LOG_WARNING);
        assert_eq!(at(Level::Debug).0, Severity::LOG_DEBUG);
        assert_eq!(at(Level::Trace).0, Severity::LOG_DEBUG);
        // A record formatted for stderr (stamped) is not for syslog.
        assert_eq!(
            for_syslog(b"[2026-11-28T10:57:57Z INFO  zarrfs::x] one\n"),
            None
        );
        assert_eq!(for_syslog(b"0x"), None);
        assert_eq!(for_syslog(b""), None);
    }
}
