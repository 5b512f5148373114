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
            // Passed as a plain option: the kernel takes it as well as fusermount3 does
            // (fuser's own Subtype is dropped when root mounts with mount(2)).
            o if o.starts_with("subtype=") => MountOption::CUSTOM(o.to_string()),
            other => MountOption::CUSTOM(other.to_string()),
        };
        // A later option overrides an earlier one (one subtype at most: the kernel takes one).
        options.retain(|o| o != &parsed && !(is_subtype(o) && is_subtype(&parsed)));
        options.push(parsed);
    }
    if !named {
        options.push(MountOption::FSName(fsname.to_string()));
    }
    if !options.iter().any(is_subtype) {
        options.push(MountOption::CUSTOM("subtype=zarrfs".into()));
    }
    Ok(MountOptions { options, acl })
}

fn is_subtype(option: &MountOption) -> bool {
    matches!(option, MountOption::CUSTOM(o) if o.starts_with("subtype="))
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
        let subtype = |m: &MountOptions| m.options.iter().filter(|o| is_subtype(o)).count();
        assert_eq!(subtype(&m), 1);
        assert!(m
            .options
            .contains(&MountOption::CUSTOM("subtype=zarrfs".into())));
        let named = parse_mount_options(&["subtype=a,subtype=b".into()], "s").unwrap();
        assert_eq!(subtype(&named), 1);
        assert!(named
            .options
            .contains(&MountOption::CUSTOM("subtype=b".into())));
    }
}
