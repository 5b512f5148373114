//! numcodecs `astype`: stores elements converted to `encode_dtype`; decoding converts them back
//! to `decode_dtype` with numpy's casting rules.

use super::{numtype_or_stored, Numeric, Op};
use crate::codec::config::{bad, get_numtype};
use crate::codec::numtype::NumType;
use crate::codec::{CodecError, StoredElem};
use crate::meta::CodecSpec;

/// `astype` from a config with `encode_dtype` and `decode_dtype` (default: the array's).
pub(crate) fn build(spec: &CodecSpec, elem: &StoredElem) -> Result<Numeric, CodecError> {
    let from =
        get_numtype(spec, "encode_dtype")?.ok_or_else(|| bad(spec, "missing 'encode_dtype'"))?;
    let to = numtype_or_stored(spec, "decode_dtype", elem, "needs a numeric 'decode_dtype'")?;
    Ok(Numeric::new(spec, to, from, Op::Cast))
}

/// Casts whole `from` elements of `encoded` to the `to` elements of `out`.
pub(super) fn cast(from: NumType, to: NumType, encoded: &[u8], out: &mut [u8]) {
    if from == to {
        out.copy_from_slice(encoded);
        return;
    }
    for (src, dst) in encoded
        .chunks_exact(from.size)
        .zip(out.chunks_exact_mut(to.size))
    {
        to.write(from.read(src), dst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::BytesToBytes;
    use crate::meta::DataType;
    use serde_json::json;

    #[test]
    fn casts_and_defaults_decode_dtype() {
        let elem = StoredElem::le(DataType::Int(4));
        let spec = CodecSpec::new("astype", json!({"encode_dtype": "|i1"}));
        let c = build(&spec, &elem).unwrap();
        let mut out = [0u8; 8];
        assert_eq!(c.decode(&[0xff, 2], &mut out), Ok(8));
        assert_eq!(out, [0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0]);
        assert!(c.decode(&[1, 2, 3], &mut out).is_err());
        let spec = CodecSpec::new("astype", json!({"decode_dtype": "<i4"}));
        assert!(matches!(
            build(&spec, &elem),
            Err(CodecError::BadConfig { .. })
        ));
    }
}
