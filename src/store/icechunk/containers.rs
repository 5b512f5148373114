//! The virtual chunk containers a repository configures, by name, for chunks whose location is
//! relative (`vcc://NAME/PATH`): spec v2 keeps the configuration in the `repo` file, spec v1 in
//! `config.yaml`. As icechunk resolves them, the chunk's URL is the container's `url_prefix`
//! followed by PATH.

use super::files;
use crate::store::{Store, StoreError};
use icechunk_format::format_constants::FileTypeBin;
use icechunk_format::manifest::VirtualChunkLocation;
use serde::Deserialize;
use std::collections::HashMap;

/// The part of icechunk's repository configuration read here.
#[derive(Deserialize, Default)]
struct Config {
    #[serde(default)]
    virtual_chunk_containers: Option<HashMap<String, Container>>,
}

#[derive(Deserialize)]
struct Container {
    #[serde(default)]
    name: Option<String>,
    url_prefix: String,
}

/// The `url_prefix` of each named container of a repository.
#[derive(Default)]
pub struct Containers(HashMap<String, String>);

impl Containers {
    /// The named containers of `repo`'s configuration (none when it has no configuration).
    pub fn load(repo: &dyn Store) -> Result<Self, StoreError> {
        let info = files::optional(files::read(repo, "repo", FileTypeBin::RepoInfo))?;
        let config: Config = match info {
            Some((version, buffer)) => {
                let info = icechunk_format::serializers::deserialize_repo_info(version, buffer)
                    .map_err(|e| files::corrupt(repo, "repo", e))?;
                info.config()
                    .map_err(|e| files::corrupt(repo, "repo", format!("configuration: {e}")))?
                    .unwrap_or_default()
            }
            None => match files::optional(repo.get("config.yaml"))? {
                Some(file) => serde_yaml_ng::from_slice(&file.bytes).map_err(|e| {
                    StoreError::Invalid(format!("{}/config.yaml: {e}", repo.describe()))
                })?,
                None => Config::default(),
            },
        };
        Ok(Self::named(config))
    }

    /// The containers of `config` that have a name.
    fn named(config: Config) -> Self {
        Containers(
            config
                .virtual_chunk_containers
                .unwrap_or_default()
                .into_values()
                .filter_map(|c| Some((c.name?, c.url_prefix)))
                .collect(),
        )
    }

    /// The URL of a virtual chunk at `location`: itself when absolute, the named container's
    /// prefix joined with the path when relative; an error naming a container not configured.
    pub fn url(&self, location: &VirtualChunkLocation) -> Result<String, StoreError> {
        let url = location.url();
        if !location.is_relative() {
            return target_url(url);
        }
        let (name, path) = location.parse_vcc().ok_or_else(|| {
            StoreError::Invalid(format!(
                "{url}: a relative location without a container name"
            ))
        })?;
        match self.0.get(name) {
            // As Icechunk's resolver, a prefix persisted without its final `/` gets one.
            Some(prefix) if prefix.ends_with('/') => target_url(&format!("{prefix}{path}")),
            Some(prefix) => target_url(&format!("{prefix}/{path}")),
            None => Err(StoreError::Invalid(format!(
                "{url}: the repository configures no virtual chunk container named {name:?}"
            ))),
        }
    }
}

/// An Icechunk location (a URL, percent-encoded) as the targets read it: HTTP URLs as they
/// are, file paths and object keys decoded (Icechunk reads them decoded too).
fn target_url(url: &str) -> Result<String, StoreError> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Ok(url.to_string());
    };
    if matches!(scheme, "http" | "https") {
        return Ok(url.to_string());
    }
    let rest = percent_encoding::percent_decode_str(rest)
        .decode_utf8()
        .map_err(|_| StoreError::Invalid(format!("{url}: not UTF-8 once decoded")))?;
    Ok(format!("{scheme}://{rest}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn containers() -> Containers {
        let yaml = "virtual_chunk_containers:\n  s3://b/:\n    name: b\n    url_prefix: s3://b/\n    \
                    store: !s3 {region: us-east-1}\n  gs://x/:\n    url_prefix: gs://x/\n    store: !gcs {}\n";
        Containers::named(serde_yaml_ng::from_str(yaml).unwrap())
    }

    #[test]
    fn relative_locations_join_the_named_prefix() {
        let c = containers();
        let at = |s: &str| VirtualChunkLocation::from_url(s).unwrap();
        assert_eq!(
            c.url(&at("vcc://b/dir/raw.bin")).unwrap(),
            "s3://b/dir/raw.bin"
        );
        assert_eq!(c.url(&at("s3://other/k")).unwrap(), "s3://other/k");
        let err = c.url(&at("vcc://x/raw.bin")).unwrap_err().to_string();
        assert!(
            err.contains("\"x\"") && err.contains("vcc://x/raw.bin"),
            "{err}"
        );
    }

    #[test]
    fn locations_are_decoded_except_http_urls_and_prefixes_end_in_a_slash() {
        let yaml =
            "virtual_chunk_containers:\n  s3://b/d:\n    name: b\n    url_prefix: s3://b/d\n    \
                    store: !s3 {region: us-east-1}\n";
        let c = Containers::named(serde_yaml_ng::from_str(yaml).unwrap());
        let at = |s: &str| VirtualChunkLocation::from_url(s).unwrap();
        assert_eq!(
            c.url(&at("vcc://b/my%20file%41.nc")).unwrap(),
            "s3://b/d/my fileA.nc"
        );
        assert_eq!(
            c.url(&at("file:///data/a%20b.nc")).unwrap(),
            "file:///data/a b.nc"
        );
        assert_eq!(
            c.url(&at("https://h/a%20b.nc")).unwrap(),
            "https://h/a%20b.nc"
        );
    }
}
