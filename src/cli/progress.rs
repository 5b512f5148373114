//! The mount command's progress line while a remote hierarchy is scanned.

use crate::store::RequestCounts;
use std::io::{IsTerminal, Write};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the line is refreshed.
const EVERY: Duration = Duration::from_secs(1);

/// Shows `scanning URL: N requests, M metadata objects` every second until dropped: rewritten
/// in place when stderr is a terminal, else as info log lines (seen with -v).
pub struct Progress {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<bool>>,
    counts: Arc<RequestCounts>,
    location: String,
    started: Instant,
}

impl Progress {
    /// Starts reporting the requests counted in `counts`.
    pub fn start(counts: Arc<RequestCounts>, location: &str) -> Progress {
        let (tx, rx) = mpsc::channel::<()>();
        let terminal = std::io::stderr().is_terminal();
        let (c, loc) = (counts.clone(), location.to_string());
        let thread = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || {
                let mut shown = false;
                while let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(EVERY) {
                    let line = format!("scanning {loc}: {}", summary(&c));
                    if terminal {
                        eprint!("\r{line}");
                        let _ = std::io::stderr().flush();
                        shown = true;
                    } else {
                        log::info!("{line}");
                    }
                }
                shown
            })
            .ok();
        Progress {
            stop: Some(tx),
            thread,
            counts,
            location: location.to_string(),
            started: Instant::now(),
        }
    }
}

fn summary(c: &RequestCounts) -> String {
    format!(
        "{} requests, {} metadata objects",
        c.requests(),
        c.objects()
    )
}

impl Drop for Progress {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(Ok(true)) = self.thread.take().map(|t| t.join()) {
            eprintln!();
        }
        log::info!(
            "{}: scanned in {:.2} s: {}",
            self.location,
            self.started.elapsed().as_secs_f64(),
            summary(&self.counts)
        );
    }
}
