//! Reads answered off the FUSE request threads.
//!
//! A read may wait on the network; were it answered on the request thread, a few stalled reads
//! would hold every thread and `ls`, `stat` and reads of cached chunks would wait behind them.
//! So the request thread hands each read to this pool and returns at once. Workers are started
//! as reads arrive (up to [`MAX_WORKERS`]; the kernel bounds the reads in flight anyway) and end
//! when idle. Each read's reply is kept here until it is answered: by its worker, by the
//! deadline (EIO once the store's time bound has passed, however many reads are waiting), or
//! by [`ReadPool::close`] when the daemon ends with readers still waiting.

use fuser::Errno;
use parking_lot::{Condvar, Mutex};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// Most workers at once.
pub const MAX_WORKERS: usize = 1024;
/// How long an idle worker waits for a read before it ends.
const IDLE_EXIT: Duration = Duration::from_secs(10);
/// How often deadlines are checked.
const DEADLINE_TICK: Duration = Duration::from_millis(100);

/// A reply that can be answered with an error (fuser's `ReplyData`, or a test's stand-in).
pub trait ErrorReply: Send + 'static {
    /// Answers with `errno`.
    fn error(self, errno: Errno);
}

impl ErrorReply for fuser::ReplyData {
    fn error(self, errno: Errno) {
        fuser::ReplyData::error(self, errno)
    }
}

/// Which read a pending reply answers: inode, offset, size (for the log).
type ReadOf = (u64, u64, u32);

struct Pending<R> {
    reply: R,
    read: ReadOf,
    deadline: Option<Instant>,
}

type Job = Box<dyn FnOnce() + Send>;

struct State<R> {
    jobs: VecDeque<Job>,
    pending: HashMap<u64, Pending<R>>,
    next: u64,
    workers: usize,
    idle: usize,
    /// Set by [`ReadPool::close`]: every reply, pending or new, is answered with it.
    closed: Option<Errno>,
}

struct Inner<R> {
    state: Mutex<State<R>>,
    work: Condvar,
    timeout: Option<Duration>,
}

/// The pool of read workers.
pub struct ReadPool<R: ErrorReply> {
    inner: Arc<Inner<R>>,
}

/// One read's claim on its reply: [`Ticket::take`] gives the reply to answer, unless the
/// deadline or [`ReadPool::close`] answered it first. A ticket dropped with its reply still
/// pending (the read panicked) answers EIO.
pub struct Ticket<R: ErrorReply> {
    id: u64,
    inner: Arc<Inner<R>>,
}

impl<R: ErrorReply> Ticket<R> {
    /// The reply, if nobody answered it yet.
    pub fn take(&self) -> Option<R> {
        self.inner
            .state
            .lock()
            .pending
            .remove(&self.id)
            .map(|p| p.reply)
    }
}

impl<R: ErrorReply> Drop for Ticket<R> {
    fn drop(&mut self) {
        if let Some(reply) = self.take() {
            reply.error(Errno::EIO);
        }
    }
}

impl<R: ErrorReply> ReadPool<R> {
    /// A pool whose reads get EIO once `timeout` has passed since they arrived (never, without).
    pub fn new(timeout: Option<Duration>) -> Self {
        let inner = Arc::new(Inner {
            state: Mutex::new(State {
                jobs: VecDeque::new(),
                pending: HashMap::new(),
                next: 0,
                workers: 0,
                idle: 0,
                closed: None,
            }),
            work: Condvar::new(),
            timeout,
        });
        if timeout.is_some() {
            let weak = Arc::downgrade(&inner);
            let spawned = std::thread::Builder::new()
                .name("read-deadlines".into())
                .spawn(move || enforce_deadlines(weak));
            if let Err(e) = spawned {
                log::warn!("cannot start the thread that ends overdue reads: {e}");
            }
        }
        ReadPool { inner }
    }

    /// True when reads on this pool get EIO at a deadline (the store is remote).
    pub fn has_deadline(&self) -> bool {
        self.inner.timeout.is_some()
    }

    /// Runs `job` for the read `read` on a worker; `job` answers `reply` through its ticket.
    pub fn submit(&self, reply: R, read: ReadOf, job: impl FnOnce(Ticket<R>) + Send + 'static) {
        let mut st = self.inner.state.lock();
        if let Some(errno) = st.closed {
            drop(st);
            return reply.error(errno);
        }
        let id = st.next;
        st.next += 1;
        let deadline = self.inner.timeout.map(|t| Instant::now() + t);
        st.pending.insert(
            id,
            Pending {
                reply,
                read,
                deadline,
            },
        );
        let ticket = Ticket {
            id,
            inner: self.inner.clone(),
        };
        st.jobs.push_back(Box::new(move || job(ticket)));
        if st.jobs.len() <= st.idle || st.workers >= MAX_WORKERS {
            drop(st);
            self.inner.work.notify_one();
            return;
        }
        st.workers += 1;
        drop(st);
        let inner = self.inner.clone();
        let spawned = std::thread::Builder::new()
            .name("read".into())
            .spawn(move || work(&inner));
        if let Err(e) = spawned {
            log::warn!("cannot start a read worker: {e}");
            let mut st = self.inner.state.lock();
            st.workers -= 1;
            // With no worker at all, this thread does the work itself.
            if st.workers == 0 {
                let job = st.jobs.pop_front();
                drop(st);
                if let Some(job) = job {
                    job();
                }
            }
        }
    }

    /// Answers every pending read, and every read still to come, with `errno`: for readers
    /// cut off when the daemon ends.
    pub fn close(&self, errno: Errno) {
        let pending: Vec<R> = {
            let mut st = self.inner.state.lock();
            st.closed = Some(errno);
            st.pending.drain().map(|(_, p)| p.reply).collect()
        };
        self.inner.work.notify_all();
        for reply in pending {
            reply.error(errno);
        }
    }
}

/// A worker: runs jobs until it has been idle for [`IDLE_EXIT`]. A job that unwinds (its
/// reads' panics are caught before, but not a panic while the job is dropped) ends the worker
/// as idleness does: counted out, so the pool starts others.
fn work<R: ErrorReply>(inner: &Inner<R>) {
    let mut st = inner.state.lock();
    loop {
        if let Some(job) = st.jobs.pop_front() {
            drop(st);
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)).is_err() {
                inner.state.lock().workers -= 1;
                return;
            }
            st = inner.state.lock();
            continue;
        }
        st.idle += 1;
        let waited = inner.work.wait_for(&mut st, IDLE_EXIT);
        st.idle -= 1;
        if waited.timed_out() && st.jobs.is_empty() {
            st.workers -= 1;
            return;
        }
    }
}

/// Answers EIO to every read past its deadline, until the pool is gone.
fn enforce_deadlines<R: ErrorReply>(pool: Weak<Inner<R>>) {
    loop {
        std::thread::sleep(DEADLINE_TICK);
        let Some(inner) = pool.upgrade() else {
            return;
        };
        let now = Instant::now();
        let overdue: Vec<Pending<R>> = (inner.state.lock().pending)
            .extract_if(|_, p| p.deadline.is_some_and(|d| d <= now))
            .map(|(_, p)| p)
            .collect();
        for p in overdue {
            let (ino, offset, size) = p.read;
            log::warn!(
                "read of inode {ino}, {size} bytes at {offset}: no answer within {} s (see \
                 --timeout): EIO",
                inner.timeout.unwrap_or_default().as_secs_f64()
            );
            p.reply.error(Errno::EIO);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// Records what it was answered.
    struct Answer(mpsc::Sender<Result<u8, i32>>);

    impl ErrorReply for Answer {
        fn error(self, errno: Errno) {
            let _ = self.0.send(Err(errno.code()));
        }
    }

    #[test]
    fn stalled_reads_get_eio_at_their_deadline_and_others_are_answered_meanwhile() {
        // A bound long enough for 65 threads to start on a busy machine: the quick read is
        // answered before it, the stalled ones at it, not later.
        let timeout = Duration::from_secs(2);
        let pool = ReadPool::new(Some(timeout));
        let (tx, rx) = mpsc::channel();
        let (release, stalled) = mpsc::channel::<()>();
        let stalled = Arc::new(Mutex::new(stalled));
        let started = Instant::now();
        // Far more stalled reads than any fixed number of threads.
        for i in 0..64 {
            let stalled = stalled.clone();
            pool.submit(Answer(tx.clone()), (i, 0, 1), move |ticket| {
                let _ = stalled.lock().recv();
                assert!(ticket.take().is_none(), "answered at the deadline already");
            });
        }
        let quick = Answer(tx.clone());
        pool.submit(quick, (99, 0, 1), |ticket| {
            let reply = ticket.take().unwrap();
            let _ = reply.0.send(Ok(7));
        });
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(Ok(7)));
        for _ in 0..64 {
            assert_eq!(
                rx.recv_timeout(Duration::from_secs(10)),
                Ok(Err(rustix::io::Errno::IO.raw_os_error()))
            );
        }
        let waited = started.elapsed();
        assert!(
            waited >= timeout && waited < timeout * 2 + DEADLINE_TICK * 5,
            "{waited:?}"
        );
        drop(release);
    }

    #[test]
    fn close_answers_pending_and_later_reads_with_its_errno() {
        let pool = ReadPool::new(None);
        let (tx, rx) = mpsc::channel();
        let (_hold, wait) = mpsc::channel::<()>();
        pool.submit(Answer(tx.clone()), (1, 0, 1), move |_ticket| {
            let _ = wait.recv();
        });
        pool.close(Errno::ENOTCONN);
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(5)),
            Ok(Err(rustix::io::Errno::NOTCONN.raw_os_error()))
        );
        pool.submit(Answer(tx.clone()), (2, 0, 1), |_| unreachable!());
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(5)),
            Ok(Err(rustix::io::Errno::NOTCONN.raw_os_error()))
        );
    }

    #[test]
    fn jobs_that_unwind_do_not_use_up_the_workers() {
        let pool = ReadPool::new(None);
        let (tx, rx) = mpsc::channel();
        // More unwinding jobs than there may be workers: each takes its worker with it.
        for i in 0..2 * MAX_WORKERS as u64 {
            pool.submit(Answer(tx.clone()), (i, 0, 1), |ticket| {
                drop(ticket.take());
                std::panic::resume_unwind(Box::new("a panic the read did not catch"));
            });
        }
        pool.submit(Answer(tx.clone()), (99, 0, 1), |ticket| {
            let _ = ticket.take().unwrap().0.send(Ok(7));
        });
        let answered = std::iter::from_fn(|| rx.recv_timeout(Duration::from_secs(10)).ok());
        assert!(
            answered.into_iter().any(|a| a == Ok(7)),
            "the last read ran"
        );
    }

    #[test]
    fn a_read_that_panics_still_answers_eio() {
        let pool = ReadPool::new(None);
        let (tx, rx) = mpsc::channel();
        pool.submit(Answer(tx), (1, 0, 1), |ticket| {
            let _ticket = ticket;
            let _ = std::panic::catch_unwind(|| panic!("bug"));
        });
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(5)),
            Ok(Err(rustix::io::Errno::IO.raw_os_error()))
        );
    }
}
