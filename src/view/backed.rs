//! Arrays served from, and written into, backing files (see [`crate::backing`]).

use super::array_file::ArrayFile;
use crate::backing::{BackingDir, BackingFile, Identity};
use crate::store::Store;
use std::sync::{Arc, Mutex, OnceLock};

/// The cache directory of a view and what identifies its arrays.
pub(super) struct Backing {
    pub dir: Arc<BackingDir>,
    pub store: Arc<dyn Store>,
    pub location: String,
}

/// One array's link to its backing file.
#[derive(Default)]
pub(super) struct ArrayBacking {
    /// Computed at the first open; `None` when the store could not be listed.
    identity: OnceLock<Option<Identity>>,
    file: Mutex<Option<Arc<BackingFile>>>,
}

impl ArrayBacking {
    /// The backing file, when attached.
    pub fn get(&self) -> Option<Arc<BackingFile>> {
        self.file.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Attaches the array's backing file unless attached already (at every open until it is:
    /// another mount may have finished writing it meanwhile).
    pub fn attach(&self, backing: &Backing, array: &ArrayFile, metadata: &[u8]) {
        let mut slot = self.file.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_some() {
            return;
        }
        let label = array.display_path();
        let identity = self.identity.get_or_init(|| {
            Identity::of(
                backing.store.as_ref(),
                &backing.location,
                array.path(),
                metadata,
            )
            .map_err(|e| log::warn!("{label}: cannot list its chunks: {e}; served uncached"))
            .ok()
        });
        if let Some(id) = identity {
            *slot = backing
                .dir
                .attach(id, array.data_size(), label)
                .map(Arc::new);
        }
    }
}
