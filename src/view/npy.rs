//! NPY headers exactly as `numpy.save` writes them, so `A.npy` equals a numpy-saved file.

use super::kinds::Reply;
use super::ViewError;
use crate::meta::{py_str, py_tuple, DataType};

const MAGIC: &[u8] = b"\x93NUMPY";
/// numpy aligns the data to this many bytes.
const ARRAY_ALIGN: usize = 64;
/// numpy leaves room for the first axis to grow to this many digits.
const GROWTH_AXIS_MAX_DIGITS: usize = 21;

/// The NPY header (magic, version, length, dict, padding) for a C-order array.
pub fn npy_header(dtype: &DataType, shape: &[u64]) -> Vec<u8> {
    let descr = match dtype {
        DataType::Structured(_) => dtype.npy_descr(),
        other => py_str(&other.npy_descr()),
    };
    let mut dict = format!(
        "{{'descr': {descr}, 'fortran_order': False, 'shape': {}, }}",
        py_tuple(shape)
    );
    if let Some(first) = shape.first() {
        let digits = first.to_string().len();
        dict.push_str(&" ".repeat(GROWTH_AXIS_MAX_DIGITS.saturating_sub(digits)));
    }
    let latin1: Option<Vec<u8>> = dict.chars().map(|c| u8::try_from(c as u32).ok()).collect();
    let (body, version_3) = match latin1 {
        Some(bytes) => (bytes, false),
        None => (dict.into_bytes(), true),
    };
    let wrap = |major: u8, len_bytes: usize| -> Vec<u8> {
        let hlen = body.len() + 1;
        let pad = ARRAY_ALIGN - (MAGIC.len() + 2 + len_bytes + hlen) % ARRAY_ALIGN;
        let total = hlen + pad;
        let mut out = Vec::with_capacity(MAGIC.len() + 2 + len_bytes + total);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&[major, 0]);
        // The length in `len_bytes` bytes: version 1 (2 bytes) is chosen only where it fits.
        out.extend_from_slice(&(total as u32).to_le_bytes()[..len_bytes]);
        out.extend_from_slice(&body);
        out.extend(std::iter::repeat_n(b' ', pad));
        out.push(b'\n');
        out
    };
    if version_3 {
        wrap(3, 4)
    } else if body.len() + 1 + ARRAY_ALIGN <= usize::from(u16::MAX) {
        wrap(1, 2)
    } else {
        wrap(2, 4)
    }
}

/// Bytes `offset..offset+len` of a file made of `header` then data into `reply`, the data
/// part read by `data(data_offset, len, reply)` (answering early only when it is the whole read).
pub(super) fn read_after_header(
    header: &[u8],
    offset: u64,
    len: u64,
    reply: Reply,
    data: impl FnOnce(u64, u64, Reply) -> Result<(), ViewError>,
) -> Result<(), ViewError> {
    let hlen = header.len() as u64;
    if offset >= hlen {
        return data(offset - hlen, len, reply);
    }
    let Reply {
        out, into_reply, ..
    } = reply;
    let head_end = offset.saturating_add(len).min(hlen);
    out.extend_from_slice(&header[offset as usize..head_end as usize]);
    let rest = len - (head_end - offset);
    if rest > 0 {
        data(0, rest, Reply::new(out, into_reply))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_numpy_save() {
        // python3 -c "import numpy as np, io; b = io.BytesIO(); np.save(b, np.zeros((3, 4), '<f8')); print(b.getvalue()[:128])"
        let mut expected =
            b"\x93NUMPY\x01\x00v\x00{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }"
                .to_vec();
        expected.extend([b' '; 58]);
        expected.push(b'\n');
        assert_eq!(npy_header(&DataType::Float(8), &[3, 4]), expected);
        let scalar = npy_header(&DataType::Bool, &[]);
        assert_eq!(scalar.len() % 64, 0);
        assert!(String::from_utf8_lossy(&scalar)
            .contains("'descr': '|b1', 'fortran_order': False, 'shape': (), }"));
    }
}
