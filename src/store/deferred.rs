//! A store opened on first use. Recognising a remote Icechunk repository or reference set takes
//! requests, and requests start the network runtime, whose threads must not be started before
//! the mount command daemonizes (threads do not survive fork) and blocks its signals.

use super::{Latency, Layer, Store, StoreError};
use parking_lot::Mutex;
use std::sync::OnceLock;
use std::time::SystemTime;

/// How the store is opened.
type Opener = Box<dyn FnOnce() -> Result<Box<dyn Store>, StoreError> + Send>;

/// Forwards every call to the store `open` returns, opened by the first call.
pub struct Deferred {
    open: Mutex<Option<Opener>>,
    /// The opened store, or why it could not be opened (given to every later call).
    store: OnceLock<Result<Box<dyn Store>, StoreError>>,
    describe: String,
    opened: SystemTime,
}

impl Deferred {
    /// The store `open` makes, shown as `describe` until then.
    pub fn new(describe: String, open: Opener) -> Self {
        Deferred {
            open: Mutex::new(Some(open)),
            store: OnceLock::new(),
            describe,
            opened: SystemTime::now(),
        }
    }
}

impl Layer for Deferred {
    type Step = ();

    fn inner(&self) -> Result<&dyn Store, StoreError> {
        let opened = self.store.get_or_init(|| {
            let open = self.open.lock().take();
            match open {
                Some(open) => open(),
                None => Err(StoreError::Invalid(format!(
                    "{}: opening failed",
                    self.describe
                ))),
            }
        });
        match opened {
            Ok(store) => Ok(store.as_ref()),
            Err(e) => Err(e.clone()),
        }
    }

    /// Known without opening: what is deferred is always a remote store.
    fn latency(&self) -> Latency {
        Latency::Network
    }

    fn mtime(&self) -> SystemTime {
        self.store
            .get()
            .and_then(|s| s.as_ref().ok())
            .map_or(self.opened, |s| s.mtime())
    }

    fn describe(&self) -> String {
        self.describe.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_failed_open_gives_every_call_its_own_error() {
        let d = Deferred::new(
            "mem://x".into(),
            Box::new(|| {
                Err(StoreError::TimedOut {
                    what: "mem://x".into(),
                    after: Duration::from_secs(3),
                })
            }),
        );
        for _ in 0..2 {
            assert!(matches!(d.get("a"), Err(StoreError::TimedOut { .. })));
        }
    }
}
