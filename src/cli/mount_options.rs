//! `-o` mount options as mount(8), mount.fuse3 and /etc/fstab pass them, and as sshfs and other
//! FUSE filesystems take them. zarrfs's own options written as `-o name=value` are turned into
//! command-line options before this (see `option_list`).

use super::error::OptionError;
use super::option_list::unquote;
use fuser::{MountOption, SessionACL};

/// Mount options and the access rule they ask for.
#[derive(Debug, PartialEq)]
pub struct MountOptions {
    /// Options passed to the kernel.
    pub options: Vec<MountOption>,
    /// Who may use the mount (`allow_other`, `allow_root`).
    pub acl: SessionACL,
    /// One-line notices for the user (an `rw` that was mounted read-only).
    pub notices: Vec<String>,
}

/// Options of mount(8), fstab and systemd that concern them, not the filesystem: accepted and
/// left alone (mount(8) and mount.fuse3 drop most of them before zarrfs sees them).
const USERSPACE_OPTIONS: &[&str] = &[
    "defaults", "auto", "noauto", "user", "nouser", "users", "owner", "group", "nofail", "_netdev",
    "ro",
];

/// mount(2) flags mount(8) passes that change nothing on a read-only FUSE mount without links
/// (access times, lazy time stamps, link following, i_version, mandatory locks, the kernel's
/// `silent`): accepted and ignored.
const IGNORED_FLAGS: &[&str] = &[
    "diratime",
    "nodiratime",
    "relatime",
    "norelatime",
    "strictatime",
    "nostrictatime",
    "lazytime",
    "nolazytime",
    "symfollow",
    "nosymfollow",
    "iversion",
    "noiversion",
    "mand",
    "nomand",
    "silent",
    "loud",
];

/// The options a kernel FUSE mount takes beyond mount(2)'s flags, for the message that refuses
/// an unknown one.
const KNOWN: &str = "allow_other, allow_root, default_permissions, auto_unmount, fsname=NAME, \
                     subtype=NAME, max_read=BYTES, ro, rw, dev, nodev, suid, nosuid, exec, noexec, \
                     atime, noatime, sync, async, dirsync, relatime and the other flags \
                     zarrfs ignores, and mount(8)'s defaults, auto, noauto, user, \
                     nouser, users, owner, group, nofail, _netdev, x-*, comment=*";

/// Parses comma-separated `-o` lists. The mount is always read-only: `rw` mounts read-only with
/// a notice, as mount(8) does for a write-protected device. A later option overrides an earlier
/// one (`dev` after the default `nodev`).
pub fn parse_mount_options(lists: &[String]) -> Result<MountOptions, OptionError> {
    let mut options = vec![MountOption::RO, MountOption::NoDev, MountOption::NoSuid];
    let mut acl = SessionACL::Owner;
    let mut notices = Vec::new();
    for opt in lists.iter().flat_map(|l| super::option_list::items(l)) {
        let parsed = match opt {
            o if USERSPACE_OPTIONS.contains(&o) || IGNORED_FLAGS.contains(&o) => continue,
            o if o.starts_with("x-") || o.starts_with("comment=") => continue,
            "rw" => {
                notices.push("option rw: zarrfs mounts are read-only, mounting read-only".into());
                continue;
            }
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
            "nodev" => MountOption::NoDev,
            "suid" => MountOption::Suid,
            "nosuid" => MountOption::NoSuid,
            "exec" => MountOption::Exec,
            "noexec" => MountOption::NoExec,
            "atime" => MountOption::Atime,
            "noatime" => MountOption::NoAtime,
            "sync" => MountOption::Sync,
            "async" => MountOption::Async,
            "dirsync" => MountOption::DirSync,
            o if o.starts_with("fsname=") => {
                MountOption::FSName(unquote(&o["fsname=".len()..]).to_string())
            }
            // Passed as a plain option: the kernel takes it as well as fusermount3 does
            // (fuser's own Subtype is dropped when root mounts with mount(2)).
            // fusermount3 and the kernel split option strings at commas, and neither unescapes
            // a subtype: one with a comma would fail the mount after the store loaded.
            o if o.starts_with("subtype=") => match unquote(&o["subtype=".len()..]) {
                name if name.contains(',') => return Err(OptionError::SubtypeComma(o.to_string())),
                name => MountOption::CUSTOM(format!("subtype={name}")),
            },
            o if o.starts_with("max_read=") => {
                let value = &o["max_read=".len()..];
                if value.parse::<u32>().map_or(true, |n| n == 0) {
                    return Err(OptionError::MaxRead(o.to_string()));
                }
                MountOption::CUSTOM(o.to_string())
            }
            other => {
                return Err(OptionError::UnknownMountOption {
                    option: other.to_string(),
                    known: KNOWN,
                })
            }
        };
        options.retain(|o| !overrides(&parsed, o));
        options.push(parsed);
    }
    // fuser has fusermount3 unmount the mount only for one opened to others (fusermount3's
    // auto_unmount without allow_other is libfuse's alone): said now, not after the store loaded.
    if options.contains(&MountOption::AutoUnmount) && acl == SessionACL::Owner {
        return Err(OptionError::AutoUnmountAlone);
    }
    if !options.iter().any(is_subtype) {
        options.push(MountOption::CUSTOM("subtype=zarrfs".into()));
    }
    Ok(MountOptions {
        options,
        acl,
        notices,
    })
}

impl MountOptions {
    /// Names the mount after the store's `location` (the source `mount` and `df` show), unless
    /// `fsname=` named it.
    pub fn name_after(&mut self, location: &str) {
        if !self.options.iter().any(is_fsname) {
            self.options.push(MountOption::FSName(location.to_string()));
        }
    }
}

/// True when fuser will have fusermount3 make the mount: for `auto_unmount`, and when this process
/// may not call mount(2) itself (it lacks CAP_SYS_ADMIN; fuser then falls back to the helper).
fn through_helper(options: &[MountOption]) -> bool {
    use rustix::thread::{capabilities, CapabilitySet};
    let may_mount =
        capabilities(None).is_ok_and(|c| c.effective.contains(CapabilitySet::SYS_ADMIN));
    options.contains(&MountOption::AutoUnmount) || !may_mount
}

/// `options` as fuser is to be given them. fuser passes them to fusermount3 as one `-o` list,
/// which the helper splits at every comma not behind a backslash, taking `\X` as `X` in
/// `fsname=` (a store path with a comma or a backslash): when the helper mounts, the fsname is
/// escaped as libfuse escapes it. mount(2) takes it as it is.
pub fn for_fuser(options: Vec<MountOption>) -> Vec<MountOption> {
    if !through_helper(&options) {
        return options;
    }
    escaped_for_helper(options)
}

/// [`for_fuser`]'s escaping: `\` and `,` in the fsname behind a backslash.
fn escaped_for_helper(options: Vec<MountOption>) -> Vec<MountOption> {
    let escape = |name: &str| name.replace('\\', "\\\\").replace(',', "\\,");
    options
        .into_iter()
        .map(|o| match o {
            MountOption::FSName(name) => MountOption::FSName(escape(&name)),
            other => other,
        })
        .collect()
}

/// True when `new` replaces `old`: the same option, its opposite, or a second subtype (the
/// kernel takes one).
fn overrides(new: &MountOption, old: &MountOption) -> bool {
    use MountOption::*;
    let opposite = |a, b| {
        matches!(
            (a, b),
            (&Dev, &NoDev)
                | (&Suid, &NoSuid)
                | (&Exec, &NoExec)
                | (&Atime, &NoAtime)
                | (&Sync, &Async)
        )
    };
    new == old
        || (is_subtype(new) && is_subtype(old))
        || (is_fsname(new) && is_fsname(old))
        || opposite(new, old)
        || opposite(old, new)
}

fn is_fsname(option: &MountOption) -> bool {
    matches!(option, MountOption::FSName(_))
}

fn is_subtype(option: &MountOption) -> bool {
    matches!(option, MountOption::CUSTOM(o) if o.starts_with("subtype="))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sshfs_style_lists() {
        let m = parse_mount_options(&[
            "allow_other,default_permissions".into(),
            "max_read=1048576".into(),
        ])
        .unwrap();
        assert_eq!(m.acl, SessionACL::All);
        assert!(m.options.contains(&MountOption::DefaultPermissions));
        assert!(m
            .options
            .contains(&MountOption::CUSTOM("max_read=1048576".into())));
        assert!(m.options.contains(&MountOption::RO));
        assert!(!m.options.iter().any(is_fsname));
        let subtype = |m: &MountOptions| m.options.iter().filter(|o| is_subtype(o)).count();
        assert_eq!(subtype(&m), 1);
        assert!(m
            .options
            .contains(&MountOption::CUSTOM("subtype=zarrfs".into())));
        let named = parse_mount_options(&["subtype=a,subtype=\"b\"".into()]).unwrap();
        assert_eq!(subtype(&named), 1);
        assert!(named
            .options
            .contains(&MountOption::CUSTOM("subtype=b".into())));
    }

    /// What fusermount3 does with the `-o` list fuser joins: splits it at commas not behind a
    /// backslash, and unescapes `fsname=` and `subtype=` (libfuse's util/fusermount.c).
    fn as_fusermount3_reads(list: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut rest = list;
        while !rest.is_empty() {
            let escape_ok = rest.starts_with("fsname=") || rest.starts_with("subtype=");
            let bytes = rest.as_bytes();
            let mut len = 0;
            while len < bytes.len() {
                if escape_ok && bytes[len] == b'\\' && len + 1 < bytes.len() {
                    len += 1;
                } else if bytes[len] == b',' {
                    break;
                }
                len += 1;
            }
            let (item, tail) = rest.split_at(len);
            let mut text = String::new();
            let mut chars = item.chars();
            while let Some(c) = chars.next() {
                match c {
                    '\\' if escape_ok => text.push(chars.next().unwrap_or('\\')),
                    c => text.push(c),
                }
            }
            out.push(text);
            rest = tail.strip_prefix(',').unwrap_or(tail);
        }
        out
    }

    /// A store path with commas and backslashes reaches fusermount3 as one fsname, as it is.
    #[test]
    fn the_helper_reads_the_fsname_as_it_is() {
        for name in [
            "/d/a,b.zarr",
            "/d/back\\slash,",
            "\\,\\\\,,",
            "/plain/s.zarr",
        ] {
            let mut m = parse_mount_options(&["ro,noatime".into()]).unwrap();
            m.name_after(name);
            let list: Vec<String> = escaped_for_helper(m.options)
                .iter()
                .map(|o| match o {
                    MountOption::FSName(n) => format!("fsname={n}"),
                    MountOption::CUSTOM(c) => c.clone(),
                    other => format!("{other:?}"),
                })
                .collect();
            let read = as_fusermount3_reads(&list.join(","));
            assert_eq!(read.len(), list.len(), "{name}: {read:?}");
            assert!(read.contains(&format!("fsname={name}")), "{name}: {read:?}");
        }
    }

    /// The store's location names the mount unless `fsname=` did (the last one).
    #[test]
    fn the_mount_is_named_after_the_store_unless_fsname_names_it() {
        let fsnames = |m: &MountOptions| -> Vec<MountOption> {
            m.options.iter().filter(|o| is_fsname(o)).cloned().collect()
        };
        let mut m = parse_mount_options(&[]).unwrap();
        m.name_after("/data/s.zarr");
        assert_eq!(fsnames(&m), [MountOption::FSName("/data/s.zarr".into())]);
        let mut m = parse_mount_options(&["fsname=a,fsname=\"b,c\"".into()]).unwrap();
        m.name_after("/data/s.zarr");
        assert_eq!(fsnames(&m), [MountOption::FSName("b,c".into())]);
    }

    /// What mount(8) and mount.fuse3 pass: `rw,dev,suid` for a plain `mount -t fuse.zarrfs`,
    /// `ro,noatime,noexec,nosuid,nodev` for a `user` fstab line.
    #[test]
    fn takes_what_mount_and_mount_fuse3_pass() {
        let m = parse_mount_options(&["rw,dev,suid".into()]).unwrap();
        assert_eq!(m.notices.len(), 1);
        assert!(m.notices[0].contains("read-only"), "{:?}", m.notices);
        assert!(m.options.contains(&MountOption::RO));
        for (wanted, gone) in [
            (MountOption::Dev, MountOption::NoDev),
            (MountOption::Suid, MountOption::NoSuid),
        ] {
            assert!(m.options.contains(&wanted) && !m.options.contains(&gone));
        }
        let fstab = "defaults,ro,noatime,noexec,nosuid,nodev,auto,noauto,user,users,nofail,\
                     _netdev,x-systemd.automount,x-systemd.idle-timeout=60,comment=x";
        let m = parse_mount_options(&[fstab.into()]).unwrap();
        assert!(m.notices.is_empty());
        assert!(m.options.contains(&MountOption::NoExec));
        assert!(m.options.contains(&MountOption::NoAtime));
        let m = parse_mount_options(&["exec,noexec,suid,nosuid".into()]).unwrap();
        assert!(!m.options.contains(&MountOption::Exec));
        assert!(!m.options.contains(&MountOption::Suid));
        for (list, kept, gone) in [
            ("sync,async", MountOption::Async, MountOption::Sync),
            ("async,sync", MountOption::Sync, MountOption::Async),
            ("noatime,atime", MountOption::Atime, MountOption::NoAtime),
            ("noexec,exec", MountOption::Exec, MountOption::NoExec),
        ] {
            let m = parse_mount_options(&[list.into()]).unwrap();
            assert!(m.options.contains(&kept), "{list}: {:?}", m.options);
            assert!(!m.options.contains(&gone), "{list}: {:?}", m.options);
        }
    }

    #[test]
    fn auto_unmount_comes_with_allow_other_or_allow_root() {
        for list in ["auto_unmount,allow_other", "allow_root,auto_unmount"] {
            let m = parse_mount_options(&[list.into()]).unwrap();
            assert!(m.options.contains(&MountOption::AutoUnmount), "{list}");
        }
    }

    /// The flags of mount(8) that change nothing here are accepted, and passed to no one.
    #[test]
    fn takes_and_ignores_the_other_flags_of_mount() {
        let plain = parse_mount_options(&[]).unwrap();
        let all = IGNORED_FLAGS.join(",");
        assert_eq!(parse_mount_options(&[all]).unwrap(), plain);
        let m = parse_mount_options(&["relatime,nodiratime,noatime,lazytime".into()]).unwrap();
        assert!(m.options.contains(&MountOption::NoAtime), "{:?}", m.options);
        assert_eq!(m.options.len(), plain.options.len() + 1);
    }

    #[test]
    fn refuses_unknown_options_naming_them() {
        for (list, says) in [
            ("cache_sise=2G", "\"cache_sise=2G\""),
            ("kernel_cache", "unknown option \"kernel_cache\""),
            ("max_read=lots", "number of bytes"),
            ("auto_unmount", "allow_other or allow_root"),
            ("subtype=\"a,b\"", "comma"),
        ] {
            let err = parse_mount_options(&[list.into()]).unwrap_err().to_string();
            assert!(err.contains(says), "{list}: {err}");
        }
    }
}
