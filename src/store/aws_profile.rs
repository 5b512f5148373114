//! Keys and region of an AWS profile from the aws command line's files (`~/.aws/credentials`,
//! `~/.aws/config`), which the S3 client does not read itself. Only static keys are read;
//! a profile that gets them from SSO, a role or a process says so (see [`Profile::keys_through`]).

use std::path::PathBuf;

/// What a profile provides.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Profile {
    /// The profile's name.
    pub name: String,
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    pub session_token: Option<String>,
    pub region: Option<String>,
    /// How the profile gets its keys when it has none of its own (`sso_session`, `role_arn`,
    /// ...), which zarrfs does not follow.
    pub keys_through: Option<&'static str>,
}

/// The profile `AWS_PROFILE` (or `default`) names, from `AWS_SHARED_CREDENTIALS_FILE` (default
/// `~/.aws/credentials`) and `AWS_CONFIG_FILE` (default `~/.aws/config`); `None` when neither
/// file has it.
pub fn load() -> Option<Profile> {
    let name = std::env::var("AWS_PROFILE")
        .or_else(|_| std::env::var("AWS_DEFAULT_PROFILE"))
        .unwrap_or_else(|_| "default".to_string());
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let file = |var: &str, rel: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(rel)))
            .and_then(|p| std::fs::read_to_string(p).ok())
            .unwrap_or_default()
    };
    let credentials = file("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials");
    let config = file("AWS_CONFIG_FILE", ".aws/config");
    parse(&credentials, &config, &name)
}

/// The profile `name` from the texts of the credentials file (sections `[name]`) and the config
/// file (sections `[profile name]`, or `[default]`); the credentials file wins.
pub fn parse(credentials: &str, config: &str, name: &str) -> Option<Profile> {
    let in_config = if name == "default" {
        "default".to_string()
    } else {
        format!("profile {name}")
    };
    let (config, credentials) = (section(config, &in_config), section(credentials, name));
    if config.is_none() && credentials.is_none() {
        return None;
    }
    let all: Vec<_> = config.into_iter().chain(credentials).flatten().collect();
    let get = |key: &str| {
        all.iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    };
    let access_key_id = get("aws_access_key_id");
    let keys_through = match access_key_id {
        Some(_) => None,
        None => [
            "sso_session",
            "sso_start_url",
            "role_arn",
            "credential_process",
        ]
        .into_iter()
        .find(|k| get(k).is_some()),
    };
    Some(Profile {
        name: name.to_string(),
        access_key_id,
        secret_access_key: get("aws_secret_access_key"),
        session_token: get("aws_session_token"),
        region: get("region"),
        keys_through,
    })
}

/// The `key = value` lines of section `[name]` of an INI text, or `None` without that section.
fn section(text: &str, name: &str) -> Option<Vec<(String, String)>> {
    let mut found = None;
    let mut current = false;
    for line in text.lines().map(str::trim) {
        if let Some(header) = header(line) {
            current = header == name;
            if current && found.is_none() {
                found = Some(Vec::new());
            }
        } else if let (true, Some((k, v))) = (current, line.split_once('=')) {
            if !line.starts_with('#') && !line.starts_with(';') {
                let pairs: &mut Vec<_> = found.get_or_insert_with(Vec::new);
                pairs.push((k.trim().to_string(), v.trim().to_string()));
            }
        }
    }
    found
}

/// The section name of a header line, `[name]`, with what follows its last `]` ignored
/// (`[prod]  # comment`), as Python's configparser, which the aws command line uses, reads it.
fn header(line: &str) -> Option<&str> {
    let inside = line.strip_prefix('[')?;
    Some(inside[..inside.rfind(']')?].trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    const CREDENTIALS: &str = "\
[default]
aws_access_key_id = AKDEFAULT
aws_secret_access_key = secret-default

[work]
aws_access_key_id=AKWORK
aws_secret_access_key=secret=with=equals
aws_session_token = token
";
    const CONFIG: &str = "\
[default]
region = us-east-2
[profile work]
# a comment
region = eu-central-1
[profile sso]
sso_session = corp
region = ap-south-1
";

    #[test]
    fn reads_keys_and_region_of_the_named_profile() {
        let work = parse(CREDENTIALS, CONFIG, "work").unwrap();
        assert_eq!(
            work,
            Profile {
                name: "work".into(),
                access_key_id: Some("AKWORK".into()),
                secret_access_key: Some("secret=with=equals".into()),
                session_token: Some("token".into()),
                region: Some("eu-central-1".into()),
                keys_through: None,
            }
        );
        let default = parse(CREDENTIALS, CONFIG, "default").unwrap();
        assert_eq!(default.access_key_id.as_deref(), Some("AKDEFAULT"));
        assert_eq!(default.region.as_deref(), Some("us-east-2"));
        let sso = parse(CREDENTIALS, CONFIG, "sso").unwrap();
        assert_eq!(
            (sso.access_key_id, sso.region.as_deref(), sso.keys_through),
            (None, Some("ap-south-1"), Some("sso_session"))
        );
        assert_eq!(parse(CREDENTIALS, CONFIG, "absent"), None);
        assert_eq!(parse("", "", "default"), None);
    }

    /// A comment after a section header ends the previous section all the same: the keys
    /// below it are the commented profile's, not the one before.
    #[test]
    fn a_header_followed_by_a_comment_starts_its_section() {
        let credentials = "\
[default]
aws_access_key_id = AKDEFAULT
aws_secret_access_key = secret-default
[prod]  # production account
aws_access_key_id = AKPROD
aws_secret_access_key = secret-prod
";
        let config = "[profile prod] ; eu\nregion = eu-west-3\n";
        let default = parse(credentials, "", "default").unwrap();
        assert_eq!(default.access_key_id.as_deref(), Some("AKDEFAULT"));
        assert_eq!(default.secret_access_key.as_deref(), Some("secret-default"));
        let prod = parse(credentials, config, "prod").unwrap();
        assert_eq!(prod.access_key_id.as_deref(), Some("AKPROD"));
        assert_eq!(prod.secret_access_key.as_deref(), Some("secret-prod"));
        assert_eq!(prod.region.as_deref(), Some("eu-west-3"));
    }
}
