//! numcodecs `quantize`: lossy rounding of floats. Decoding is the identity, apart from the cast
//! from `astype` back to `dtype`.

use super::{numtype_or_stored, Numeric, Op};
use crate::codec::config::{bad, get_numtype};
use crate::codec::numtype::Kind;
use crate::codec::{CodecError, StoredElem};
use crate::meta::CodecSpec;

/// `quantize` from a config with `dtype` (default: the array's) and optional `astype`.
pub(crate) fn build(spec: &CodecSpec, elem: &StoredElem) -> Result<Numeric, CodecError> {
    let dtype = numtype_or_stored(spec, "dtype", elem, "needs a float 'dtype'")?;
    let astype = get_numtype(spec, "astype")?.unwrap_or(dtype);
    if dtype.kind != Kind::Float || astype.kind != Kind::Float {
        return Err(bad(spec, "only floating point types are supported"));
    }
    Ok(Numeric::new(spec, dtype, astype, Op::Cast))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::DataType;
    use serde_json::json;

    #[test]
    fn rejects_integer_types() {
        let elem = StoredElem::le(DataType::Int(4));
        let spec = CodecSpec::new("quantize", json!({"digits": 2}));
        assert!(matches!(
            build(&spec, &elem),
            Err(CodecError::BadConfig { .. })
        ));
        let elem = StoredElem::le(DataType::Float(8));
        assert!(build(&spec, &elem).is_ok());
    }
}
