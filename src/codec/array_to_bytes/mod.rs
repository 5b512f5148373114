//! Array→bytes codecs: each chain has exactly one, turning the chunk's elements into bytes.
//! `bytes` stores the elements themselves (in a byte order, so it decodes in place); zarr-
//! extensions' `packbits`, zarrs' `zfp` and numcodecs' `zfpy` store a form of their own size;
//! `sharding_indexed` stores a grid of inner chunks with an index (decoded by readers through
//! [`sharding::ShardedArray`], not by the pipeline); `vlen-*` and the numcodecs object codecs
//! store variable-length elements.

pub(crate) mod bitpack;
pub(crate) mod bytes;
pub(crate) mod object;
pub(crate) mod sharding;
pub mod vlen;
pub(crate) mod zfp;
mod zfp_stream;
pub(crate) mod zfpy;
