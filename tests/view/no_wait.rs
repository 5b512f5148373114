//! Calls told not to wait (`Wait::No`, what the FUSE request threads ask first): what is in
//! memory is answered, exactly as the waiting call answers it, while the store is stalled and
//! another call holds the lock of a directory being loaded; what needs work (a directory not
//! loaded yet, a size to measure, a selection file to make) is `WouldBlock` at once, and the
//! waiting call does it.

use std::sync::mpsc::channel;
use std::sync::Arc;
use std::time::Duration;
use zarrfs::meta::LoadOptions;
use zarrfs::store::{Layer, MemoryStore, Request, Store, StoreError};
use zarrfs::view::{FileKind, ViewError, Wait, ROOT_INO, ZOM_FILE};

/// Holds every request for a key under `far/` while closed, counting the requests held.
struct Gate {
    inner: MemoryStore,
    /// Whether closed, and how many requests wait.
    state: parking_lot::Mutex<(bool, usize)>,
    changed: parking_lot::Condvar,
}

impl Gate {
    fn set_closed(&self, closed: bool) {
        self.state.lock().0 = closed;
        self.changed.notify_all();
    }

    /// Returns once a request is held.
    fn until_one_is_held(&self) {
        let mut state = self.state.lock();
        while state.1 == 0 {
            self.changed.wait(&mut state);
        }
    }
}

impl Layer for Gate {
    type Step = ();

    fn inner(&self) -> Result<&dyn Store, StoreError> {
        Ok(&self.inner)
    }

    fn before(&self, request: &Request<'_>) -> Result<(), StoreError> {
        if !request.key().starts_with("far") {
            return Ok(());
        }
        let mut state = self.state.lock();
        state.1 += 1;
        self.changed.notify_all();
        while state.0 {
            self.changed.wait(&mut state);
        }
        state.1 -= 1;
        Ok(())
    }
}

const GROUP: &str = r#"{"zarr_format": 3, "node_type": "group"}"#;

fn array_doc(data_type: &str, shape: u64, fill: &str, codec: &str) -> String {
    format!(
        r#"{{"zarr_format": 3, "node_type": "array", "shape": [{shape}],
        "data_type": "{data_type}", "fill_value": {fill},
        "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [2]}}}},
        "chunk_key_encoding": {{"name": "default", "configuration": {{"separator": "/"}}}},
        "codecs": [{codec}]}}"#
    )
}

/// `loaded/a` (4 int32), `loaded/s` (3 strings, no chunk stored) and `far/x0`..`far/x3`,
/// behind a gate.
fn gated_store() -> Arc<Gate> {
    let mut s = MemoryStore::new();
    s.insert("zarr.json", GROUP);
    s.insert("loaded/zarr.json", GROUP);
    let bytes = r#"{"name": "bytes", "configuration": {"endian": "little"}}"#;
    s.insert("loaded/a/zarr.json", array_doc("int32", 4, "0", bytes));
    let vlen = r#"{"name": "vlen-utf8", "configuration": {}}"#;
    s.insert("loaded/s/zarr.json", array_doc("string", 3, "\"NA\"", vlen));
    s.insert("far/zarr.json", GROUP);
    for i in 0..4 {
        s.insert(
            format!("far/x{i}/zarr.json"),
            array_doc("int32", 4, "0", bytes),
        );
    }
    Arc::new(Gate {
        inner: s,
        state: parking_lot::Mutex::new((false, 0)),
        changed: parking_lot::Condvar::new(),
    })
}

/// Runs `f` on a thread and fails the test instead of hanging when it takes over a minute.
fn within_a_minute<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("a call told not to wait waited")
}

#[test]
fn loaded_names_are_answered_without_waiting_while_a_directory_loads_from_a_stalled_store() {
    let gate = gated_store();
    let store: Arc<dyn Store> = gate.clone();
    let view = zarrfs::view::from_store(store, "root", 1 << 20, &LoadOptions::default()).unwrap();
    let view = Arc::new(view);
    let loaded = view.lookup(ROOT_INO, "loaded").unwrap().ino;
    let far = view.lookup(ROOT_INO, "far").unwrap().ino;
    // What the waiting calls answer, `loaded` loaded on the way.
    let a = view.lookup(loaded, "a").unwrap();
    let listing = view.readdir(loaded, 0).unwrap();
    let names: Vec<&str> = listing.iter().map(|e| e.name.as_str()).collect();
    let subtree = [".header.cdl", ".ncstream", ".zom.json"];
    let expected = [
        &[".", "..", ".group.json"],
        &subtree[..],
        &["a", "a.json", "a.npy"],
    ];
    assert_eq!(
        names,
        [&expected.concat()[..], &["s", "s.json", "s.npy"]].concat()
    );
    let ino_of = |name: &str| listing.iter().find(|e| e.name == name).unwrap().ino;
    let (zom, s, s_npy) = (ino_of(ZOM_FILE), ino_of("s"), ino_of("s.npy"));
    let subtree = subtree.map(ino_of);

    // `far` is loaded by a call that the stalled store holds, with its directory's lock.
    gate.set_closed(true);
    let loading = {
        let view = view.clone();
        std::thread::spawn(move || view.lookup(far, "x1"))
    };
    gate.until_one_is_held();

    let answers = {
        let view = view.clone();
        within_a_minute(move || {
            let listed: Vec<_> = (view
                .readdir_with(loaded, 0, usize::MAX, Wait::No)
                .unwrap()
                .iter())
            .map(|e| (e.ino, view.listed_attr(e.ino, Wait::No)))
            .collect();
            (
                view.lookup_with(loaded, "a", Wait::No),
                view.getattr_with(a.ino, Wait::No),
                view.readdir_with(loaded, 0, usize::MAX, Wait::No),
                listed,
                [
                    view.lookup_with(loaded, "nothing", Wait::No),
                    view.lookup_with(loaded, "nothing[1]", Wait::No),
                    view.lookup_with(loaded, "a.json[1]", Wait::No),
                ],
                [
                    view.lookup_with(far, "x1", Wait::No),
                    view.getattr_with(s, Wait::No),
                    view.getattr_with(zom, Wait::No),
                    view.lookup_with(loaded, "a[1:3]", Wait::No),
                ],
                view.readdir_with(far, 0, usize::MAX, Wait::No),
            )
        })
    };
    let (got_a, attr_a, got_listing, listed, nothing, needs_work, far_listing) = answers;
    assert_eq!(got_a, Ok(a));
    assert_eq!(attr_a, Ok(a));
    assert_eq!(got_listing, Ok(listing.clone()));
    // Not selections of an array of a loaded directory: not found without waiting.
    assert_eq!(nothing, [Err(ViewError::NotFound); 3]);
    // Every entry's attributes as a listing hands them out: the files showing the subtree not
    // measured yet (size unknown), the sizes of the strings' files to scan.
    for (ino, attr) in listed {
        match ino {
            _ if ino == s || ino == s_npy => assert_eq!(attr, Err(ViewError::WouldBlock)),
            _ if subtree.contains(&ino) => {
                let attr = attr.unwrap();
                assert_eq!(
                    (attr.kind, attr.size, attr.exact),
                    (FileKind::File, 0, false)
                );
            }
            _ => assert_eq!(attr, view.listed_attr(ino, Wait::Yes), "inode {ino}"),
        }
    }
    // A name in the directory being loaded, a size to scan or measure, a selection to make.
    assert_eq!(needs_work, [Err(ViewError::WouldBlock); 4]);
    assert_eq!(far_listing, Err(ViewError::WouldBlock));
    assert!(!loading.is_finished(), "the store is still stalled");

    gate.set_closed(false);
    let x1 = loading.join().unwrap().unwrap();
    assert_eq!(view.lookup_with(far, "x1", Wait::No), Ok(x1));
    assert_eq!(x1.size, 16);
    // What the waiting calls did is in memory for the next call that does not wait.
    let strings = view.getattr(s).unwrap();
    assert_eq!((strings.size, strings.exact), (9, true));
    assert_eq!(view.getattr_with(s, Wait::No), Ok(strings));
    let measured = view.getattr(zom).unwrap();
    assert_eq!(view.getattr_with(zom, Wait::No), Ok(measured));
    let slice = view.lookup(loaded, "a[1:3]").unwrap();
    assert_eq!(slice.size, 8);
    assert_eq!(view.lookup_with(loaded, "a[1:3]", Wait::No), Ok(slice));
    view.forget(slice.ino, 2);
}

/// A large string array (more elements than are scanned on the spot) whose size scan is under
/// way on the sizer thread, held by the stalled store: its size is "not known yet" (0, not
/// exact), answered without waiting as the waiting call answers it, not `WouldBlock`.
#[test]
fn a_large_string_array_being_scanned_is_answered_as_unknown_without_waiting() {
    let mut s = MemoryStore::new();
    s.insert("zarr.json", GROUP);
    s.insert("far/zarr.json", GROUP);
    let vlen = r#"{"name": "vlen-utf8", "configuration": {}}"#;
    let elements = zarrfs::view::SYNC_SCAN_MAX + 10;
    s.insert(
        "far/big/zarr.json",
        array_doc("string", elements, "\"NA\"", vlen),
    );
    let gate = Arc::new(Gate {
        inner: s,
        state: parking_lot::Mutex::new((false, 0)),
        changed: parking_lot::Condvar::new(),
    });
    let store: Arc<dyn Store> = gate.clone();
    let view = zarrfs::view::from_store(store, "root", 1 << 20, &LoadOptions::default()).unwrap();
    let view = Arc::new(view);
    let far = view.lookup(ROOT_INO, "far").unwrap().ino;
    // Listed, not measured: the scan starts at the first call that needs the size.
    view.readdir(far, 0).unwrap();
    gate.set_closed(true);
    // The first waiting call hands the scan to the sizer thread, which the store holds.
    let big = view.lookup(far, "big").unwrap();
    let unknown = view.getattr(big.ino).unwrap();
    let big = big.ino;
    assert_eq!((unknown.size, unknown.exact), (0, false));
    gate.until_one_is_held();
    let answered = {
        let view = view.clone();
        within_a_minute(move || view.getattr_with(big, Wait::No))
    };
    assert_eq!(answered, Ok(unknown));
    gate.set_closed(false);
}
