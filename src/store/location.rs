//! What the STORE argument names: a local path, `file://`, `s3://`, `gs://`, `az://`/`abfs://`,
//! `http(s)://`, and netCDF's URLs with a `#mode=...` fragment.

use super::StoreError;
use std::path::PathBuf;
use url::Url;

/// What a local store must be, from netCDF's `file`/`zip` mode words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocalKind {
    /// A directory or a zip file, whichever the path is.
    Any,
    /// A directory (`mode=...,file`).
    Dir,
    /// A zip file (`mode=...,zip`).
    Zip,
}

/// Where a store lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// A directory or zip file on this machine.
    Local { path: PathBuf, kind: LocalKind },
    /// An S3 bucket. `endpoint` is set by an https-form URL naming a non-AWS host, or an AWS
    /// service other than the region's plain S3 endpoint (China, FIPS, an access point,
    /// Transfer Acceleration); it is addressed path-style, or with `virtual_hosted` as the
    /// bucket's own host.
    S3 {
        bucket: String,
        prefix: String,
        endpoint: Option<String>,
        region: Option<String>,
        virtual_hosted: bool,
    },
    /// A Google Cloud Storage bucket.
    Gcs { bucket: String, prefix: String },
    /// An Azure Blob Storage container; `url` is the `az://` or `abfs://` URL the client parses.
    Azure { url: String, prefix: String },
    /// Plain HTTP(S): keys are fetched below `url`; nothing can be listed.
    Http { url: Url },
}

/// Mode words of netCDF URLs (`#mode=nczarr,s3`) that only name the format: zarrfs finds the
/// dialect from the metadata itself, so they are accepted and change nothing.
const FORMAT_WORDS: &[&str] = &[
    "nczarr",
    "zarr",
    "xarray",
    "noxarray",
    "consolidated",
    "v2",
    "v3",
];

/// Why a URL names no store zarrfs can open.
#[derive(Debug, thiserror::Error)]
enum BadUrl {
    /// Not a URL at all.
    #[error(transparent)]
    Parse(#[from] url::ParseError),
    /// A `mode=bytes` fragment.
    #[error("mode=bytes is for netCDF-4 files, not Zarr stores")]
    Bytes,
    /// A mode word zarrfs does not know.
    #[error("unknown mode word {0:?}")]
    ModeWord(String),
    /// `mode=...,file` on a remote URL.
    #[error("mode word `file` names a local directory: use a file:// URL or a path")]
    RemoteFile,
    /// No bucket in the host or the path.
    #[error("the URL names no bucket")]
    NoBucket,
    /// An `amazonaws.com` host that is not one of S3's API endpoints.
    #[error("{0} is not an S3 API endpoint zarrfs knows")]
    NotS3(String),
    /// An S3 website endpoint, which serves pages, not the S3 API.
    #[error("{0} is an S3 website endpoint, not the S3 API: use s3://BUCKET/KEY")]
    Website(String),
    /// A scheme zarrfs does not read.
    #[error(
        "unknown scheme {0}:// (use a path, file://, s3://, gs://, az://, abfs:// or http(s)://)"
    )]
    Scheme(String),
}

/// True when a STORE argument is a local path: it has no `scheme://`.
pub fn is_local_path(arg: &str) -> bool {
    !arg.contains("://")
}

/// Parses a STORE argument. Anything without `scheme://` is a local path.
pub fn parse(arg: &str) -> Result<Location, StoreError> {
    if is_local_path(arg) {
        return Ok(Location::Local {
            path: PathBuf::from(arg),
            kind: LocalKind::Any,
        });
    }
    parse_url(arg).map_err(|why| {
        let shown = super::display_url(arg);
        StoreError::Invalid(format!("{shown}: {why}"))
    })
}

/// Parses a STORE argument that is a URL.
fn parse_url(arg: &str) -> Result<Location, BadUrl> {
    let url = Url::parse(arg)?;
    let words = mode_words(&url)?;
    let has = |w: &str| words.iter().any(|x| x == w);
    let path = decoded_path(&url);
    let kind = if has("zip") {
        LocalKind::Zip
    } else if has("file") {
        LocalKind::Dir
    } else {
        LocalKind::Any
    };
    match url.scheme() {
        "file" => Ok(Location::Local {
            path: PathBuf::from(format!("/{path}")),
            kind,
        }),
        _ if kind == LocalKind::Dir => Err(BadUrl::RemoteFile),
        "s3" | "s3a" => Ok(Location::S3 {
            bucket: host(&url)?,
            prefix: path,
            endpoint: None,
            region: None,
            virtual_hosted: false,
        }),
        "gs" => Ok(Location::Gcs {
            bucket: host(&url)?,
            prefix: path,
        }),
        "az" | "adl" | "azure" | "abfs" | "abfss" => Ok(Location::Azure {
            url: without_fragment(&url),
            prefix: path,
        }),
        "http" | "https" if has("s3") => s3_https(&url, path),
        "http" | "https" if has("gs3") => {
            let (bucket, prefix) = split_bucket(&path)?;
            Ok(Location::Gcs { bucket, prefix })
        }
        "http" | "https" => {
            let mut base = url.clone();
            base.set_fragment(None);
            let trimmed = base.path().trim_end_matches('/').to_string();
            base.set_path(&trimmed);
            Ok(Location::Http { url: base })
        }
        other => Err(BadUrl::Scheme(other.to_string())),
    }
}

/// True when a remote store URL names a zip file: a `.zip` path or the mode word `zip`.
pub fn names_zip(arg: &str) -> bool {
    let Ok(url) = Url::parse(arg) else {
        return false;
    };
    url.path().trim_end_matches('/').ends_with(".zip")
        || mode_words(&url).is_ok_and(|w| w.iter().any(|w| w == "zip"))
}

/// True when a remote store URL names a JSON file (a kerchunk reference set): a `.json` path.
pub fn names_json(arg: &str) -> bool {
    Url::parse(arg).is_ok_and(|url| url.path().trim_end_matches('/').ends_with(".json"))
}

/// The words of a netCDF `#mode=a,b,c` fragment (other `key=value` pairs are ignored); refuses
/// words zarrfs does not know, and `bytes` (netCDF-4 files over HTTP, not Zarr).
fn mode_words(url: &Url) -> Result<Vec<String>, BadUrl> {
    let Some(fragment) = url.fragment() else {
        return Ok(Vec::new());
    };
    let mut words = Vec::new();
    for pair in fragment.split('&') {
        if let Some(list) = pair.strip_prefix("mode=") {
            words.extend(
                list.split(',')
                    .filter(|w| !w.is_empty())
                    .map(str::to_string),
            );
        }
    }
    for w in &words {
        match w.as_str() {
            "s3" | "gs3" | "file" | "zip" => {}
            "bytes" => return Err(BadUrl::Bytes),
            w if FORMAT_WORDS.contains(&w) => {}
            w => return Err(BadUrl::ModeWord(w.to_string())),
        }
    }
    Ok(words)
}

/// The URL's path without its leading and trailing `/`, percent-decoded.
fn decoded_path(url: &Url) -> String {
    let raw = url.path().trim_matches('/');
    percent_encoding::percent_decode_str(raw)
        .decode_utf8_lossy()
        .into_owned()
}

fn host(url: &Url) -> Result<String, BadUrl> {
    url.host_str()
        .filter(|h| !h.is_empty())
        .map(str::to_string)
        .ok_or(BadUrl::NoBucket)
}

fn without_fragment(url: &Url) -> String {
    let mut u = url.clone();
    u.set_fragment(None);
    u.to_string()
}

/// `bucket/prefix...` → (bucket, prefix).
fn split_bucket(path: &str) -> Result<(String, String), BadUrl> {
    let (bucket, prefix) = path.split_once('/').unwrap_or((path, ""));
    if bucket.is_empty() {
        return Err(BadUrl::NoBucket);
    }
    Ok((bucket.to_string(), prefix.to_string()))
}

/// netCDF's S3 URLs in https form: an AWS host (see [`aws_host`]), or any other host as a
/// path-style endpoint.
fn s3_https(url: &Url, path: String) -> Result<Location, BadUrl> {
    let host = host(url)?;
    if let Some(location) = aws_host(&host, &path)? {
        return Ok(location);
    }
    let (bucket, prefix) = split_bucket(&path)?;
    let mut endpoint = format!("{}://{host}", url.scheme());
    if let Some(port) = url.port() {
        endpoint.push_str(&format!(":{port}"));
    }
    Ok(Location::S3 {
        bucket,
        prefix,
        endpoint: Some(endpoint),
        region: None,
        virtual_hosted: false,
    })
}

/// The bucket named by an AWS S3 `host` (`[BUCKET.]SERVICE[.dualstack][.REGION].amazonaws.com`,
/// or `.amazonaws.com.cn`; the service is the last label that is `s3` or starts with `s3-`)
/// and the URL's `path`, and its region: `s3` and the old
/// `s3-REGION` and `s3-external-1` (us-east-1) are read through the region's own endpoint;
/// China's, `s3-fips` and the dual-stack FIPS endpoint path-style through the host's service;
/// `s3-accelerate` (which names no region) and access points
/// (`NAME-ACCOUNT.s3-accesspoint.REGION`) through the bucket's own host. `None` for a host
/// outside AWS.
fn aws_host(host: &str, path: &str) -> Result<Option<Location>, BadUrl> {
    let Some((rest, domain)) = [".amazonaws.com", ".amazonaws.com.cn"]
        .into_iter()
        .find_map(|d| Some((host.strip_suffix(d)?, d)))
    else {
        return Ok(None);
    };
    let labels: Vec<&str> = rest.split('.').collect();
    let not_s3 = || BadUrl::NotS3(host.to_string());
    let s3_at = labels
        .iter()
        .rposition(|l| *l == "s3" || l.starts_with("s3-"))
        .ok_or_else(not_s3)?;
    let service = labels[s3_at];
    if service.starts_with("s3-website") {
        return Err(BadUrl::Website(host.to_string()));
    }
    // What follows the service: `dualstack`, then the region where the host names one.
    let after: Vec<&str> = labels[s3_at + 1..]
        .iter()
        .copied()
        .filter(|l| *l != "dualstack")
        .collect();
    let named = match after.as_slice() {
        [] => None,
        [r] if is_region(r) => Some(r.to_string()),
        _ => return Err(not_s3()),
    };
    let (region, virtual_hosted) = match service {
        "s3" | "s3-fips" => (named, false),
        "s3-accesspoint" if named.is_some() && s3_at > 0 => (named, true),
        "s3-accelerate" if named.is_none() => (None, true),
        "s3-external-1" if named.is_none() => (Some("us-east-1".to_string()), false),
        old if named.is_none() && is_region(&old["s3-".len()..]) => {
            (Some(old["s3-".len()..].to_string()), false)
        }
        _ => return Err(not_s3()),
    };
    let (bucket, prefix) = if s3_at == 0 {
        split_bucket(path)?
    } else {
        (labels[..s3_at].join("."), path.to_string())
    };
    let service_host = format!("{}{domain}", labels[s3_at..].join("."));
    let endpoint = if virtual_hosted {
        Some(format!("https://{bucket}.{service_host}"))
    } else if service == "s3-fips" || domain != ".amazonaws.com" {
        Some(format!("https://{service_host}"))
    } else {
        None
    };
    Ok(Some(Location::S3 {
        bucket,
        prefix,
        endpoint,
        region,
        virtual_hosted,
    }))
}

/// True for an AWS region name: `us-east-1`, `us-gov-west-1`, `cn-north-1`, `eu-central-2`.
fn is_region(name: &str) -> bool {
    let parts: Vec<&str> = name.split('-').collect();
    parts.len() >= 3
        && parts[..parts.len() - 1]
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase()))
        && parts[parts.len() - 1].bytes().all(|b| b.is_ascii_digit())
        && !parts[parts.len() - 1].is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s3(bucket: &str, prefix: &str, endpoint: Option<&str>, region: Option<&str>) -> Location {
        Location::S3 {
            bucket: bucket.into(),
            prefix: prefix.into(),
            endpoint: endpoint.map(String::from),
            region: region.map(String::from),
            virtual_hosted: false,
        }
    }

    /// An S3 location addressed at the bucket's own host.
    fn s3_host(bucket: &str, prefix: &str, endpoint: &str, region: Option<&str>) -> Location {
        Location::S3 {
            bucket: bucket.into(),
            prefix: prefix.into(),
            endpoint: Some(endpoint.into()),
            region: region.map(String::from),
            virtual_hosted: true,
        }
    }

    /// Every form of AWS S3 host: the bucket, the region to sign for, and the endpoint where
    /// the region's own (`https://s3.REGION.amazonaws.com`, path-style) is not the service the
    /// host names.
    #[test]
    fn knows_the_forms_of_aws_hosts() {
        let https = |host: &str, path: &str| parse(&format!("https://{host}/{path}#mode=zarr,s3"));
        let cases = [
            ("s3.amazonaws.com", "b/k", s3("b", "k", None, None)),
            ("b.s3.amazonaws.com", "k", s3("b", "k", None, None)),
            (
                "s3-x.s3.us-east-2.amazonaws.com",
                "k",
                s3("s3-x", "k", None, Some("us-east-2")),
            ),
            (
                "s3-eu-west-1.amazonaws.com",
                "b/k",
                s3("b", "k", None, Some("eu-west-1")),
            ),
            (
                "b.s3-us-gov-west-1.amazonaws.com",
                "k",
                s3("b", "k", None, Some("us-gov-west-1")),
            ),
            (
                "s3-external-1.amazonaws.com",
                "b/k",
                s3("b", "k", None, Some("us-east-1")),
            ),
            (
                "b.s3.dualstack.ap-south-1.amazonaws.com",
                "k",
                s3("b", "k", None, Some("ap-south-1")),
            ),
            (
                "s3.cn-north-1.amazonaws.com.cn",
                "b/k",
                s3(
                    "b",
                    "k",
                    Some("https://s3.cn-north-1.amazonaws.com.cn"),
                    Some("cn-north-1"),
                ),
            ),
            (
                "b.s3.dualstack.cn-northwest-1.amazonaws.com.cn",
                "k",
                s3(
                    "b",
                    "k",
                    Some("https://s3.dualstack.cn-northwest-1.amazonaws.com.cn"),
                    Some("cn-northwest-1"),
                ),
            ),
            (
                "b.s3-fips.us-east-2.amazonaws.com",
                "k",
                s3(
                    "b",
                    "k",
                    Some("https://s3-fips.us-east-2.amazonaws.com"),
                    Some("us-east-2"),
                ),
            ),
            (
                "s3-fips.dualstack.us-west-1.amazonaws.com",
                "b/k",
                s3(
                    "b",
                    "k",
                    Some("https://s3-fips.dualstack.us-west-1.amazonaws.com"),
                    Some("us-west-1"),
                ),
            ),
            (
                "b.s3-accelerate.amazonaws.com",
                "k",
                s3_host("b", "k", "https://b.s3-accelerate.amazonaws.com", None),
            ),
            (
                "s3-accelerate.dualstack.amazonaws.com",
                "b/k",
                s3_host(
                    "b",
                    "k",
                    "https://b.s3-accelerate.dualstack.amazonaws.com",
                    None,
                ),
            ),
            (
                "ap-123456789012.s3-accesspoint.eu-west-2.amazonaws.com",
                "k",
                s3_host(
                    "ap-123456789012",
                    "k",
                    "https://ap-123456789012.s3-accesspoint.eu-west-2.amazonaws.com",
                    Some("eu-west-2"),
                ),
            ),
        ];
        for (host, path, want) in cases {
            assert_eq!(https(host, path).unwrap(), want, "{host}");
        }
        for (host, why) in [
            ("b.s3-website-us-east-1.amazonaws.com", "website"),
            ("b.s3-website.eu-west-1.amazonaws.com", "website"),
            ("ec2.us-east-1.amazonaws.com", "not an S3 API endpoint"),
            (
                "b.s3-control.us-east-1.amazonaws.com",
                "not an S3 API endpoint",
            ),
            (
                "s3-accesspoint.eu-west-2.amazonaws.com",
                "not an S3 API endpoint",
            ),
        ] {
            let err = https(host, "b/k").unwrap_err().to_string();
            assert!(err.contains(why), "{host}: {err}");
        }
    }

    #[test]
    fn parses_every_form() {
        let local = |p: &str, kind| Location::Local {
            path: PathBuf::from(p),
            kind,
        };
        let gcs = |bucket: &str, prefix: &str| Location::Gcs {
            bucket: bucket.into(),
            prefix: prefix.into(),
        };
        let azure = |url: &str, prefix: &str| Location::Azure {
            url: url.into(),
            prefix: prefix.into(),
        };
        let cases = [
            ("data/x.zarr", local("data/x.zarr", LocalKind::Any)),
            ("/d/x.zip", local("/d/x.zip", LocalKind::Any)),
            ("file:///d/x%20y.zarr", local("/d/x y.zarr", LocalKind::Any)),
            (
                "file:///d/x.zarr#mode=zarr,file",
                local("/d/x.zarr", LocalKind::Dir),
            ),
            (
                "file:///d/x.zip#mode=nczarr,zip",
                local("/d/x.zip", LocalKind::Zip),
            ),
            ("s3://b/p/q.zarr", s3("b", "p/q.zarr", None, None)),
            ("s3://b", s3("b", "", None, None)),
            ("s3://b/p/", s3("b", "p", None, None)),
            (
                "https://s3.us-west-2.amazonaws.com/b/k.zarr#mode=nczarr,s3",
                s3("b", "k.zarr", None, Some("us-west-2")),
            ),
            (
                "https://b.c.s3.eu-west-1.amazonaws.com/k#mode=zarr,s3",
                s3("b.c", "k", None, Some("eu-west-1")),
            ),
            (
                "http://127.0.0.1:9000/b/k/x.zarr#mode=nczarr,s3",
                s3("b", "k/x.zarr", Some("http://127.0.0.1:9000"), None),
            ),
            ("gs://b/p", gcs("b", "p")),
            (
                "https://storage.googleapis.com/b/p#mode=zarr,gs3",
                gcs("b", "p"),
            ),
            ("az://c/p/x.zarr", azure("az://c/p/x.zarr", "p/x.zarr")),
            (
                "abfs://c@acct.dfs.core.windows.net/p",
                azure("abfs://c@acct.dfs.core.windows.net/p", "p"),
            ),
            (
                "https://h.org/data/x.zarr/#mode=nczarr",
                Location::Http {
                    url: Url::parse("https://h.org/data/x.zarr").unwrap(),
                },
            ),
        ];
        for (arg, want) in cases {
            assert_eq!(parse(arg).unwrap(), want, "{arg}");
        }
    }

    #[test]
    fn knows_remote_zip_files() {
        assert!(names_zip("s3://b/p/x.zip"));
        assert!(names_zip("https://h/x.zip/#mode=nczarr"));
        assert!(names_zip("https://h/archive#mode=nczarr,zip"));
        assert!(!names_zip("s3://b/p/x.zarr"));
        assert!(!names_zip("https://h/x.zip.d/y.zarr"));
    }

    #[test]
    fn refuses_what_it_cannot_serve() {
        for (arg, why) in [
            ("ftp://h/x", "unknown scheme"),
            ("https://h/x#mode=bytes", "netCDF-4"),
            ("https://h/x#mode=zarr,frob", "unknown mode word"),
            ("https://h/x.zarr#mode=zarr,file", "local directory"),
            ("s3:///x", "no bucket"),
        ] {
            let err = parse(arg).unwrap_err().to_string();
            assert!(err.contains(why), "{arg}: {err}");
        }
    }
}
