//! `-o` mount options, as sshfs and other FUSE filesystems take them.

use fuser::{MountOption, SessionACL};

/// Mount options and the access rule they ask for.
#[derive(Debug, PartialEq)]
pub struct MountOptions {
    /// Options passed to the kernel.
    pub options: Vec<MountOption>,
    /// Who may use the mount (`allow_other`, `allow_root`).
    pub acl: SessionACL,
}

/// Parses comma-separated `-o` lists. The mount is always read-only: `rw` is refused.
pub fn parse_mount_options(lists: &[String], fsname: &str) -> Result<MountOptions, String> {
    let mut options = vec![MountOption::RO, MountOption::NoDev, MountOption::NoSuid];
    let mut acl = SessionACL::Owner;
    let mut named = false;
    for opt in lists
        .iter()
        .flat_map(|l| l.split(','))
        .map(str::trim)
        .filter(|o| !o.is_empty())
    {
        let parsed = match opt {
            "ro" | "nodev" | "nosuid" => continue,
            "rw" => return Err("option \"rw\": zarrfs mounts are read-only".into()),
            "allow_other" => {
                acl = SessionACL::All;
                continue;
            }
            "allow_root" => {
                acl = SessionACL::RootAndOwner;
                continue;
            }
            "default_permissions" => MountOption::DefaultPermissions,
            "auto_unmount" => MountOption::AutoUnmount,
            "dev" => MountOption::Dev,
            "suid" => MountOption::Suid,
            "exec" => MountOption::Exec,
            "noexec" => MountOption::NoExec,
            "atime" => MountOption::Atime,
            "noatime" => MountOption::NoAtime,
            "sync" => MountOption::Sync,
            "async" => MountOption::Async,
            "dirsync" => MountOption::DirSync,
            o if o.starts_with("fsname=") => {
                named = true;
                MountOption::FSName(o["fsname=".len()..].to_string())
            }
            o if o.starts_with("subtype=") => {
                MountOption::Subtype(o["subtype=".len()..].to_string())
            }
            other => MountOption::CUSTOM(other.to_string()),
        };
        options.retain(|o| o != &parsed);
        options.push(parsed);
    }
    if !named {
        options.push(MountOption::FSName(fsname.to_string()));
    }
    if !options.iter().any(|o| matches!(o, MountOption::Subtype(_))) {
        options.push(MountOption::Subtype("zarrfs".into()));
    }
    Ok(MountOptions { options, acl })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sshfs_style_lists() {
        let m = parse_mount_options(
            &[
                "allow_other,default_permissions".into(),
                "max_read=1048576".into(),
            ],
            "s",
        )
        .unwrap();
        assert_eq!(m.acl, SessionACL::All);
        assert!(m.options.contains(&MountOption::DefaultPermissions));
        assert!(m
            .options
            .contains(&MountOption::CUSTOM("max_read=1048576".into())));
        assert!(m.options.contains(&MountOption::RO));
        assert!(m.options.contains(&MountOption::FSName("s".into())));
        assert!(parse_mount_options(&["rw".into()], "s").is_err());
    }
}
