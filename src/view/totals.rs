//! What `df` shows of a mount: the decoded size of its arrays and its number of files.

use super::{Content, View};

/// Filesystem totals for `statfs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Totals {
    /// Bytes of every array's `A` file (variable-length arrays not counted: their size costs
    /// a scan).
    pub data_bytes: u64,
    /// Number of inodes.
    pub files: u64,
}

impl Totals {
    /// Blocks of `block` bytes holding [`Totals::data_bytes`], rounded up.
    pub fn blocks(&self, block: u32) -> u64 {
        self.data_bytes.div_ceil(u64::from(block.max(1)))
    }
}

impl View {
    /// The mount's totals for `df`: nothing is free on a read-only snapshot. The whole tree
    /// is loaded first (at the first call); a group that cannot be loaded now (logged) is
    /// left out of these totals, and loaded again at the next call.
    pub fn totals(&self) -> Totals {
        // Totals of what is loaded are still `df`'s best answer.
        self.load_subtree(super::ROOT_INO).ok();
        let data_bytes = self
            .inodes
            .iter()
            .filter_map(|(_, i)| match i.content {
                Content::Array(super::ArrayPart {
                    array: a,
                    npy: false,
                }) => Some(self.arrays[a as usize].data_size()),
                _ => None,
            })
            .fold(0u64, u64::saturating_add);
        Totals {
            data_bytes,
            files: self.inodes.count() as u64,
        }
    }
}
