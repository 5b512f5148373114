//! Daemonizing like sshfs: the parent returns only once the child's mount answers, and prints
//! the child's error if it fails.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::Path;

/// The child's end of the readiness pipe.
pub struct Ready {
    pipe: File,
}

impl Ready {
    /// Tells the parent the mount works, then detaches from the terminal: stdin and stdout go to
    /// /dev/null, stderr to `log_file` or (without one) /dev/null with logging sent to syslog.
    pub fn succeed(mut self, log_file: Option<&Path>) {
        let log = log_file.and_then(|path| {
            let opened = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path);
            opened
                .inspect_err(|e| eprintln!("zarrfs: cannot open log file {}: {e}", path.display()))
                .ok()
        });
        let _ = self.pipe.write_all(b"ok\n");
        redirect("/dev/null", &[0, 1]);
        match log {
            // SAFETY: dup2 on valid descriptors.
            Some(f) => unsafe {
                libc::dup2(f.as_raw_fd(), 2);
            },
            None => {
                redirect("/dev/null", &[2]);
                super::logging::use_syslog();
            }
        }
    }

    /// Tells the parent why the mount failed.
    pub fn fail(mut self, message: &str) {
        let _ = self
            .pipe
            .write_all(format!("error: {message}\n").as_bytes());
    }
}

fn redirect(path: &str, fds: &[i32]) {
    if let Ok(f) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
    {
        for &fd in fds {
            // SAFETY: dup2 on valid descriptors.
            unsafe { libc::dup2(f.as_raw_fd(), fd) };
        }
    }
}

/// Forks. The child starts a new session and runs `work`, which must call [`Ready::succeed`] or
/// [`Ready::fail`]; its return value is the child's exit code. The parent waits for the verdict
/// and returns the process exit code. Call before any thread is started.
pub fn daemonize(work: impl FnOnce(Ready) -> i32) -> i32 {
    let mut fds = [0i32; 2];
    // SAFETY: fds is a valid array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        eprintln!("zarrfs: pipe: {}", std::io::Error::last_os_error());
        return 1;
    }
    // SAFETY: fork before any thread exists; both sides own their ends of the pipe.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        eprintln!("zarrfs: fork: {}", std::io::Error::last_os_error());
        return 1;
    }
    // SAFETY: each descriptor is owned by exactly one File from here on.
    let (mut reader, writer) = unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) };
    if pid == 0 {
        drop(reader);
        // SAFETY: plain syscalls in the child.
        unsafe {
            libc::setsid();
            libc::chdir(c"/".as_ptr());
        }
        let code = work(Ready { pipe: writer });
        std::process::exit(code);
    }
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
            let mut status = 0;
            // SAFETY: waiting for our own child.
            unsafe { libc::waitpid(pid, &mut status, 0) };
            eprintln!(
                "zarrfs: the background process ended before the mount was ready (status {status})"
            );
            1
        }
    }
}
