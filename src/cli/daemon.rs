//! Daemonizing like sshfs: the parent returns only once the child's mount answers, and prints
//! the child's error if it fails.

use nix::unistd::{fork, ForkResult};
use rustix::pipe::{pipe_with, PipeFlags};
use rustix::process::{
    chdir, getpid, getppid, set_parent_process_death_signal, setsid, waitpid, Pid,
    Signal as RustixSignal, WaitOptions,
};
use rustix::stdio::{dup2_stderr, dup2_stdin, dup2_stdout};
use std::fs::File;
use std::io::{Read, Write};

/// The child's end of the readiness pipe.
pub struct Ready {
    pipe: File,
}

impl Ready {
    /// Tells the parent the mount works, then detaches from the terminal: a new session, stdin
    /// and stdout to /dev/null, stderr to `log` or (without one) /dev/null with logging sent to
    /// syslog.
    ///
    /// The session starts only now, once mounted, as libfuse's daemons do: an automount
    /// (`x-systemd.automount`) lets through to its mount point only the process group of the
    /// mount command, so a lookup made from a new session would wait on the pending automount,
    /// which completes only with this mount.
    pub fn succeed(mut self, log: Option<File>) {
        let _ = setsid();
        // The mount command exits on this verdict: the daemon lives on without it.
        let _ = set_parent_process_death_signal(None);
        let _ = self.pipe.write_all(b"ok\n");
        let null = dev_null();
        if let Some(null) = &null {
            let _ = dup2_stdin(null);
            let _ = dup2_stdout(null);
        }
        if let Some(stderr) = log.as_ref().or(null.as_ref()) {
            let _ = dup2_stderr(stderr);
        }
        if log.is_none() {
            super::logging::use_syslog();
        }
    }

    /// Tells the parent why the mount failed.
    pub fn fail(mut self, message: &str) {
        let _ = self
            .pipe
            .write_all(format!("error: {message}\n").as_bytes());
    }
}

/// /dev/null, open for reading and writing.
fn dev_null() -> Option<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
        .ok()
}

/// Forks. The child runs `work`, which must call [`Ready::succeed`] (which starts a new session)
/// or [`Ready::fail`]; its return value is the child's exit code. The parent waits for the verdict
/// and returns the process exit code. Call before any thread is started.
pub fn daemonize(work: impl FnOnce(Ready) -> i32) -> i32 {
    let (reader, writer) = match pipe_with(PipeFlags::CLOEXEC) {
        Ok(ends) => ends,
        Err(e) => {
            eprintln!("zarrfs: pipe: {}", std::io::Error::from(e));
            return 1;
        }
    };
    let (mut reader, writer) = (File::from(reader), File::from(writer));
    let parent = getpid();
    // nix, not rustix: rustix forks only as `runtime::kernel_fork`, for language runtimes (it
    // skips libc's fork handlers, which the allocator and stdio rely on); nix calls libc's fork.
    // SAFETY: fork before any thread exists; both sides own their ends of the pipe.
    let child = match unsafe { fork() } {
        Ok(ForkResult::Parent { child }) => child,
        Ok(ForkResult::Child) => {
            drop(reader);
            // Until the mount is ready, the mount command ending (killed, or Ctrl-C in its
            // terminal, which reaches this process too until its session starts) ends the
            // loading too: no mount appears after the user gave up on it, and a mount point
            // made for it is removed.
            let _ = set_parent_process_death_signal(Some(RustixSignal::TERM));
            if getppid() != Some(parent) {
                std::process::exit(1);
            }
            let _ = chdir("/");
            let code = work(Ready { pipe: writer });
            std::process::exit(code);
        }
        Err(e) => {
            eprintln!("zarrfs: fork: {}", std::io::Error::from(e));
            return 1;
        }
    };
    drop(writer);
    let mut verdict = String::new();
    let _ = reader.read_to_string(&mut verdict);
    match verdict.lines().next() {
        Some("ok") => 0,
        Some(line) => {
            eprintln!("zarrfs: {}", line.strip_prefix("error: ").unwrap_or(line));
            1
        }
        None => {
            let waited =
                Pid::from_raw(child.as_raw()).map(|p| waitpid(Some(p), WaitOptions::empty()));
            let how = match waited {
                Some(Ok(Some((_, status)))) => {
                    match (status.exit_status(), status.terminating_signal()) {
                        (Some(code), _) => format!("exit status {code}"),
                        (_, Some(signal)) => format!("killed by signal {signal}"),
                        _ => format!("wait status {}", status.as_raw()),
                    }
                }
                _ => "no status".to_string(),
            };
            eprintln!("zarrfs: the background process ended before the mount was ready ({how})");
            1
        }
    }
}
