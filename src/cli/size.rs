//! Human byte sizes: `512M`, `2G`, `1.5GiB`, `1000000`.

use super::error::OptionError;

/// Parses a size with an optional binary unit suffix (K, M, G, T; `B`/`iB` allowed).
pub fn parse_size(text: &str) -> Result<u64, OptionError> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| OptionError::Size(text.to_string()))?;
    let unit = unit.trim().to_ascii_uppercase();
    let shift = match unit.trim_end_matches("IB").trim_end_matches('B') {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return Err(OptionError::SizeUnit(text.to_string())),
    };
    let bytes = value * (1u64 << shift) as f64;
    if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 {
        return Err(OptionError::SizeOutOfRange(text.to_string()));
    }
    Ok(bytes as u64)
}

/// Parses `--cache-size`: a size above zero. A cache of no bytes holds no chunk, so every read of
/// every array would fail.
pub fn parse_cache_size(text: &str) -> Result<u64, OptionError> {
    match parse_size(text)? {
        0 => Err(OptionError::NoCache(text.to_string())),
        bytes => Ok(bytes),
    }
}

/// The smallest readahead: one page. Below it the kernel would read nothing ahead at all.
const MIN_READ_AHEAD: u64 = 4096;

/// Parses `--read-ahead`: a size of at least one page (4K).
pub fn parse_read_ahead(text: &str) -> Result<u64, OptionError> {
    let bytes = parse_size(text)?;
    if bytes < MIN_READ_AHEAD {
        return Err(OptionError::ReadAheadBelowPage(text.to_string()));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::{parse_read_ahead, parse_size};

    #[test]
    fn read_ahead_is_at_least_a_page() {
        assert!(parse_read_ahead("3")
            .unwrap_err()
            .to_string()
            .contains("at least 4K"));
        assert!(parse_read_ahead("4095").is_err());
        assert_eq!(parse_read_ahead("4K").unwrap(), 4096);
        assert_eq!(parse_read_ahead("1M").unwrap(), 1 << 20);
    }

    #[test]
    fn units() {
        assert_eq!(parse_size("512M").unwrap(), 512 << 20);
        assert_eq!(parse_size("2G").unwrap(), 2 << 30);
        assert_eq!(parse_size("1.5GiB").unwrap(), 3 << 29);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("10kb").unwrap(), 10 << 10);
        assert!(parse_size("lots").is_err());
        assert!(parse_size("5X").is_err());
    }
}
