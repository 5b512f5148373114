//! Array→array codecs: they change the chunk as an array (its shape, its element type) and keep
//! it an array. Zarr v3's `transpose` and zarr-extensions' `scale_offset` and `cast_value`; the
//! numcodecs filters, which zarr-python 3 also writes here, live in [`super::filters`].

pub(crate) mod cast_value;
mod scalar;
pub(crate) mod scale_offset;
pub(crate) mod transpose;
