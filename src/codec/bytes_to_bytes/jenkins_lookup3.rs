//! numcodecs `jenkins_lookup3`: Bob Jenkins' lookup3 hash (HDF5's `H5_checksum_lookup3`) of the
//! payload, appended little-endian.

use super::checksum::Checksum;
use crate::codec::config::{bad, field, get_usize};
use crate::codec::CodecError;
use crate::meta::CodecSpec;

/// The `jenkins_lookup3` codec: config `initval` (default 0); a `prefix` is not supported.
pub(crate) fn build(spec: &CodecSpec) -> Result<Checksum, CodecError> {
    let initval = get_usize(spec, "initval")?.unwrap_or(0);
    let initval = u32::try_from(initval).map_err(|_| bad(spec, "'initval' exceeds 32 bits"))?;
    if field(spec, "prefix").is_some() {
        return Err(CodecError::unsupported(
            &spec.name,
            "a 'prefix' is not supported",
        ));
    }
    Checksum::build(
        spec,
        false,
        false,
        Box::new(move |d: &[u8]| lookup3(d, initval)),
    )
}

/// lookup3's `hashlittle` over bytes, as HDF5 computes it.
fn lookup3(data: &[u8], initval: u32) -> u32 {
    let init = 0xdead_beef_u32
        .wrapping_add(data.len() as u32)
        .wrapping_add(initval);
    let (mut a, mut b, mut c) = (init, init, init);
    let word = |k: &[u8]| {
        let mut w = [0u8; 4];
        w[..k.len()].copy_from_slice(k);
        u32::from_le_bytes(w)
    };
    let mut rest = data;
    while rest.len() > 12 {
        a = a.wrapping_add(word(&rest[0..4]));
        b = b.wrapping_add(word(&rest[4..8]));
        c = c.wrapping_add(word(&rest[8..12]));
        mix(&mut a, &mut b, &mut c);
        rest = &rest[12..];
    }
    if rest.is_empty() {
        return c;
    }
    let mut tail = [0u8; 12];
    tail[..rest.len()].copy_from_slice(rest);
    a = a.wrapping_add(word(&tail[0..4]));
    b = b.wrapping_add(word(&tail[4..8]));
    c = c.wrapping_add(word(&tail[8..12]));
    final_mix(&mut a, &mut b, &mut c);
    c
}

fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *a = a.wrapping_sub(*c) ^ c.rotate_left(4);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a) ^ a.rotate_left(6);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b) ^ b.rotate_left(8);
    *b = b.wrapping_add(*a);
    *a = a.wrapping_sub(*c) ^ c.rotate_left(16);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a) ^ a.rotate_left(19);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b) ^ b.rotate_left(4);
    *b = b.wrapping_add(*a);
}

fn final_mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *c = (*c ^ *b).wrapping_sub(b.rotate_left(14));
    *a = (*a ^ *c).wrapping_sub(c.rotate_left(11));
    *b = (*b ^ *a).wrapping_sub(a.rotate_left(25));
    *c = (*c ^ *b).wrapping_sub(b.rotate_left(16));
    *a = (*a ^ *c).wrapping_sub(c.rotate_left(4));
    *b = (*b ^ *a).wrapping_sub(a.rotate_left(14));
    *c = (*c ^ *b).wrapping_sub(b.rotate_left(24));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn known_values() {
        // From lookup3.c's self-test (hashlittle).
        assert_eq!(lookup3(b"", 0), 0xdead_beef);
        assert_eq!(lookup3(b"Four score and seven years ago", 0), 0x1777_0551);
        assert_eq!(lookup3(b"Four score and seven years ago", 1), 0xcd62_8161);
    }

    #[test]
    fn prefix_is_unsupported() {
        let spec = CodecSpec::new("jenkins_lookup3", json!({"prefix": "AAE="}));
        assert!(matches!(build(&spec), Err(CodecError::Unsupported(_))));
    }
}
