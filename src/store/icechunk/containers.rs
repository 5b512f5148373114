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
        let config: Config = match files::read(repo, "repo", FileTypeBin::RepoInfo)? {
            Some((version, buffer)) => {
                let info = icechunk_format::serializers::deserialize_repo_info(version, buffer)
                    .map_err(|e| files::corrupt(repo, "repo", e))?;
                info.config()
                    .map_err(|e| files::corrupt(repo, "repo", format!("configuration: {e}")))?
                    .unwrap_or_default()
            }
            None => match repo.get("config.yaml")? {
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
            return Ok(url.to_string());
        }
        let (name, path) = location.parse_vcc().ok_or_else(|| {
            StoreError::Invalid(format!(
                "{url}: a relative location without a container name"
            ))
        })?;
        match self.0.get(name) {
            Some(prefix) => Ok(format!("{prefix}{path}")),
            None => Err(StoreError::Invalid(format!(
                "{url}: the repository configures no virtual chunk container named {name:?}"
            ))),
        }
    }
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
}
