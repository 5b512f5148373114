//! Who has used a cached chunk since it was loaded, so that drop-behind (see
//! [`super::ChunkCache::discard`]) takes out of the shared cache only the chunks of one reader.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Who asks the cache for a chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum User {
    /// The read-ahead, loading it for a reader to come (not a use).
    ReadAhead,
    /// A reader, through file handle N (0: no handle, told apart from none).
    Reader(u64),
}

/// The users of one cached chunk so far: none (0), the reads of one file handle (its number),
/// or more than that ([`SEVERAL`]).
#[derive(Debug, Default)]
pub(super) struct Users(AtomicU64);

/// More users than one file handle's reads.
const SEVERAL: u64 = u64::MAX;

impl Users {
    /// Counts a use by `user`.
    pub fn add(&self, user: User) {
        let code = match user {
            User::ReadAhead => return,
            User::Reader(0) => SEVERAL,
            User::Reader(fh) => fh,
        };
        let _ = self.0.fetch_update(Relaxed, Relaxed, |now| match now {
            0 => Some(code),
            _ if now == code || now == SEVERAL => None,
            _ => Some(SEVERAL),
        });
    }

    /// True when no reader but those through handle `fh` has used the chunk.
    pub fn only(&self, fh: u64) -> bool {
        let now = self.0.load(Relaxed);
        now == 0 || now == fh
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_is_one_handles_until_another_reader_uses_it() {
        let users = Users::default();
        users.add(User::ReadAhead);
        assert!(users.only(3), "loaded ahead, used by nobody");
        users.add(User::Reader(3));
        users.add(User::Reader(3));
        assert!(users.only(3) && !users.only(4));
        users.add(User::Reader(4));
        assert!(!users.only(3) && !users.only(4));
        let anonymous = Users::default();
        anonymous.add(User::Reader(0));
        assert!(
            !anonymous.only(3),
            "a read with no handle is another reader"
        );
    }
}
