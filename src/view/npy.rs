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
    // numpy's `_wrap_header`: the dict, its padding to the alignment and a line break, after
    // a length field of `len_bytes` bytes.
    let hlen = body.len() + 1;
    let pad = |len_bytes: usize| ARRAY_ALIGN - (MAGIC.len() + 2 + len_bytes + hlen) % ARRAY_ALIGN;
    let wrap = |major: u8, len_bytes: usize| -> Vec<u8> {
        let total = hlen + pad(len_bytes);
        let mut out = Vec::with_capacity(MAGIC.len() + 2 + len_bytes + total);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&[major, 0]);
        out.extend_from_slice(&(total as u32).to_le_bytes()[..len_bytes]);
        out.extend_from_slice(&body);
        out.extend(std::iter::repeat_n(b' ', pad(len_bytes)));
        out.push(b'\n');
        out
    };
    // As `_wrap_header_guess_version`: version 1 while the padded length fits its 2 bytes,
    // else 2; 3 (UTF-8) for a dict that is not Latin-1.
    if version_3 {
        wrap(3, 4)
    } else if hlen + pad(2) <= usize::from(u16::MAX) {
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
    use crate::meta::Field;

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

    #[test]
    fn the_version_is_numpys_at_the_length_limit() {
        // numpy.save of np.zeros(1, [(f"f{i:05d}", "i1") for i in range(n)]) writes version
        // 1 with a 65526-byte padded header up to n = 3444, version 2 from n = 3445 on.
        let fields = |n: usize| {
            let field = |i| Field {
                name: format!("f{i:05}"),
                dtype: DataType::Int(1),
                shape: Vec::new(),
                offset: i,
            };
            DataType::Structured((0..n).map(field).collect())
        };
        for (n, version, length, total) in [
            (3441, 1, 65462, 65472),
            (3442, 1, 65526, 65536),
            (3444, 1, 65526, 65536),
            (3445, 2, 65588, 65600),
        ] {
            let header = npy_header(&fields(n), &[1]);
            let length_field = match version {
                1 => u32::from(u16::from_le_bytes([header[8], header[9]])),
                _ => u32::from_le_bytes([header[8], header[9], header[10], header[11]]),
            };
            assert_eq!(
                (header[6], length_field, header.len()),
                (version, length, total)
            );
            assert!(header.ends_with(b" \n"), "{n}");
        }
    }
}
