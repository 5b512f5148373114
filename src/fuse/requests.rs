//! Requests answered off the FUSE request threads.
//!
//! A read may wait on the network, and a lookup, `stat`, `open`, listing or `df` may load
//! groups, a whole subtree, or decode every chunk of an array to measure it; were they answered
//! on the request threads, a few stalled requests would hold every thread and `ls`, `stat` and
//! reads of cached chunks would wait behind them. So the request thread hands each of them to
//! this pool (all but the lookups, `stat`s and listings the view answers from memory at once)
//! and returns at once. Workers are started as requests arrive (up to
//! [`MAX_WORKERS`]) and end when idle. Each request's reply, whatever its type, is kept here
//! until it is answered: by its worker, by the deadline (EIO once the store's time bound has
//! passed, however many requests are waiting; the work goes on, and what it loads stays for
//! the next request), or by [`RequestPool::close`] when the daemon ends with requests still
//! waiting.

use fuser::Errno;
use parking_lot::{Condvar, Mutex};
use std::any::Any;
use std::collections::{HashMap, VecDeque};
use std::fmt::Display;
use std::marker::PhantomData;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// Most workers at once.
pub const MAX_WORKERS: usize = 1024;
/// How long an idle worker waits for a request before it ends.
const IDLE_EXIT: Duration = Duration::from_secs(10);
/// How often deadlines are checked.
const DEADLINE_TICK: Duration = Duration::from_millis(100);

/// A reply that can be answered with an error (one of fuser's reply types, or a test's
/// stand-in).
pub trait ErrorReply: Send + 'static {
    /// Answers with `errno`.
    fn error(self, errno: Errno);
}

/// Implements [`ErrorReply`] for fuser's reply types.
macro_rules! error_replies {
    ($($reply:ident),*) => {$(
        impl ErrorReply for fuser::$reply {
            fn error(self, errno: Errno) {
                fuser::$reply::error(self, errno)
            }
        }
    )*};
}

error_replies!(
    ReplyData,
    ReplyEntry,
    ReplyAttr,
    ReplyOpen,
    ReplyDirectory,
    ReplyDirectoryPlus,
    ReplyStatfs
);

/// A pending reply of any type: answered with an error by the deadline or at close, or given
/// back to its ticket, which knows its type.
trait AnyReply: Send {
    fn error(self: Box<Self>, errno: Errno);
    fn into_any(self: Box<Self>) -> Box<dyn Any + Send>;
}

impl<R: ErrorReply> AnyReply for R {
    fn error(self: Box<Self>, errno: Errno) {
        ErrorReply::error(*self, errno)
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any + Send> {
        self
    }
}

/// A request as the log names it (`read inode 5, 4096 bytes at 0`): formatted only when a line
/// is written.
pub type What = Arc<dyn Display + Send + Sync>;

struct Pending {
    reply: Box<dyn AnyReply>,
    what: What,
    deadline: Option<Instant>,
}

type Job = Box<dyn FnOnce() + Send>;

struct State {
    jobs: VecDeque<Job>,
    pending: HashMap<u64, Pending>,
    next: u64,
    workers: usize,
    idle: usize,
    /// Set by [`RequestPool::close`]: every reply, pending or new, is answered with it.
    closed: Option<Errno>,
}

struct Inner {
    state: Mutex<State>,
    work: Condvar,
    timeout: Option<Duration>,
}

impl Inner {
    /// The reply of request `id`, unless it was answered already.
    fn take(&self, id: u64) -> Option<Box<dyn AnyReply>> {
        self.state.lock().pending.remove(&id).map(|p| p.reply)
    }
}

/// The pool of request workers.
pub struct RequestPool {
    inner: Arc<Inner>,
}

/// One request's claim on its reply: [`Ticket::take`] gives the reply to answer, unless the
/// deadline or [`RequestPool::close`] answered it first (then the worker gives back what the
/// kernel, never told, will not: a lookup counted, a file handle opened). A ticket dropped
/// with its reply still pending (the work panicked) answers EIO.
pub struct Ticket<R: ErrorReply> {
    id: u64,
    inner: Arc<Inner>,
    reply: PhantomData<fn() -> R>,
}

impl<R: ErrorReply> Ticket<R> {
    /// The reply, if nobody answered it yet.
    pub fn take(&self) -> Option<R> {
        let any = self.inner.take(self.id)?.into_any();
        // The ticket was made with the reply, of its type: the cast cannot fail (were it to,
        // the fuser reply dropped unanswered would answer EIO).
        any.downcast().ok().map(|reply| *reply)
    }
}

impl<R: ErrorReply> Drop for Ticket<R> {
    fn drop(&mut self) {
        if let Some(reply) = self.inner.take(self.id) {
            reply.error(Errno::EIO);
        }
    }
}

impl RequestPool {
    /// A pool whose requests get EIO once `timeout` has passed since they arrived (never,
    /// without).
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
                .name("deadlines".into())
                .spawn(move || enforce_deadlines(weak));
            if let Err(e) = spawned {
                log::warn!("cannot start the thread that ends overdue requests: {e}");
            }
        }
        RequestPool { inner }
    }

    /// True when requests on this pool get EIO at a deadline (the store is remote).
    pub fn has_deadline(&self) -> bool {
        self.inner.timeout.is_some()
    }

    /// Runs `job` for the request `what` (as the log names it) on a worker; `job` answers
    /// `reply` through its ticket.
    pub fn submit<R: ErrorReply>(
        &self,
        reply: R,
        what: What,
        job: impl FnOnce(Ticket<R>) + Send + 'static,
    ) {
        let mut st = self.inner.state.lock();
        if let Some(errno) = st.closed {
            drop(st);
            return reply.error(errno);
        }
        let id = st.next;
        st.next += 1;
        let deadline = self.inner.timeout.map(|t| Instant::now() + t);
        let reply = Box::new(reply);
        st.pending.insert(
            id,
            Pending {
                reply,
                what,
                deadline,
            },
        );
        let ticket = Ticket {
            id,
            inner: self.inner.clone(),
            reply: PhantomData,
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
            .name("request".into())
            .spawn(move || work(&inner));
        if let Err(e) = spawned {
            log::warn!("cannot start a request worker: {e}");
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

    /// Answers every pending request, and every request still to come, with `errno`: for
    /// the processes cut off when the daemon ends.
    pub fn close(&self, errno: Errno) {
        let pending: Vec<Box<dyn AnyReply>> = {
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
/// requests' panics are caught before, but not a panic while the job is dropped) ends the
/// worker as idleness does: counted out, so the pool starts others.
fn work(inner: &Inner) {
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

/// Answers EIO to every request past its deadline, until the pool is gone.
fn enforce_deadlines(pool: Weak<Inner>) {
    loop {
        std::thread::sleep(DEADLINE_TICK);
        let Some(inner) = pool.upgrade() else {
            return;
        };
        let now = Instant::now();
        let overdue: Vec<Pending> = (inner.state.lock().pending)
            .extract_if(|_, p| p.deadline.is_some_and(|d| d <= now))
            .map(|(_, p)| p)
            .collect();
        for p in overdue {
            log::warn!(
                "{}: no answer within {} s (see --timeout): EIO",
                p.what,
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

    /// A request named by `text` in the log.
    fn what(text: impl Display + Send + Sync + 'static) -> What {
        Arc::new(text)
    }

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
        let pool = RequestPool::new(Some(timeout));
        let (tx, rx) = mpsc::channel();
        let (release, stalled) = mpsc::channel::<()>();
        let stalled = Arc::new(Mutex::new(stalled));
        let started = Instant::now();
        // Far more stalled reads than any fixed number of threads.
        for i in 0..64 {
            let stalled = stalled.clone();
            pool.submit(
                Answer(tx.clone()),
                what(format!("read {i}")),
                move |ticket| {
                    let _ = stalled.lock().recv();
                    assert!(ticket.take().is_none(), "answered at the deadline already");
                },
            );
        }
        let quick = Answer(tx.clone());
        pool.submit(quick, what("read 99"), |ticket| {
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

    /// Another reply type: records the inode it was answered, or its error.
    struct Entry(mpsc::Sender<Result<u64, i32>>);

    impl ErrorReply for Entry {
        fn error(self, errno: Errno) {
            let _ = self.0.send(Err(errno.code()));
        }
    }

    #[test]
    fn replies_of_any_type_share_the_pool_and_a_job_answered_first_knows_it() {
        let pool = RequestPool::new(Some(Duration::from_millis(300)));
        let (data, data_answers) = mpsc::channel();
        let (entry, entry_answers) = mpsc::channel();
        let (undone, undos) = mpsc::channel();
        pool.submit(Answer(data), what("read 1"), |ticket| {
            let _ = ticket.take().unwrap().0.send(Ok(7));
        });
        pool.submit(Entry(entry.clone()), what("lookup 1"), |ticket| {
            let _ = ticket.take().unwrap().0.send(Ok(42));
        });
        // Work that outlasts the deadline: its reply is answered EIO, and the job learns it
        // when done (to give back what it counted).
        let (done, finish) = mpsc::channel::<()>();
        pool.submit(Entry(entry), what("lookup 2"), move |ticket| {
            let _ = finish.recv();
            if ticket.take().is_none() {
                let _ = undone.send(43);
            }
        });
        let wait = Duration::from_secs(10);
        assert_eq!(data_answers.recv_timeout(wait), Ok(Ok(7)));
        let mut entries = [0; 2].map(|_| entry_answers.recv_timeout(wait).unwrap());
        entries.sort();
        let eio = Err(rustix::io::Errno::IO.raw_os_error());
        assert_eq!(entries, [Ok(42), eio]);
        drop(done);
        assert_eq!(undos.recv_timeout(wait), Ok(43));
    }

    #[test]
    fn close_answers_pending_and_later_reads_with_its_errno() {
        let pool = RequestPool::new(None);
        let (tx, rx) = mpsc::channel();
        let (_hold, wait) = mpsc::channel::<()>();
        pool.submit(Answer(tx.clone()), what("read 1"), move |_ticket| {
            let _ = wait.recv();
        });
        pool.close(Errno::ENOTCONN);
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(5)),
            Ok(Err(rustix::io::Errno::NOTCONN.raw_os_error()))
        );
        pool.submit(Answer(tx.clone()), what("read 2"), |_| unreachable!());
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(5)),
            Ok(Err(rustix::io::Errno::NOTCONN.raw_os_error()))
        );
    }

    #[test]
    fn jobs_that_unwind_do_not_use_up_the_workers() {
        let pool = RequestPool::new(None);
        let (tx, rx) = mpsc::channel();
        // More unwinding jobs than there may be workers: each takes its worker with it.
        for i in 0..2 * MAX_WORKERS as u64 {
            pool.submit(Answer(tx.clone()), what(format!("read {i}")), |ticket| {
                drop(ticket.take());
                std::panic::resume_unwind(Box::new("a panic the read did not catch"));
            });
        }
        pool.submit(Answer(tx.clone()), what("read 99"), |ticket| {
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
        let pool = RequestPool::new(None);
        let (tx, rx) = mpsc::channel();
        pool.submit(Answer(tx), what("read 1"), |ticket| {
            let _ticket = ticket;
            let _ = std::panic::catch_unwind(|| panic!("bug"));
        });
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(5)),
            Ok(Err(rustix::io::Errno::IO.raw_os_error()))
        );
    }
}
