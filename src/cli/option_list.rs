//! zarrfs's own options written as `-o` mount options (`-o cache_size=2G,anonymous`), as
//! mount(8) and /etc/fstab pass them: each becomes the command-line option of the same name,
//! looked up in the clap definition, so the two spellings cannot drift apart.

use super::error::OptionError;
use clap::Command;

/// `argv` with every zarrfs option inside a `-o` list moved out as `--name[=value]` (`_` or `-`
/// in the name); what is left of each list stays a `-o` list of mount options.
pub fn expand(argv: Vec<String>, cmd: &Command) -> Result<Vec<String>, OptionError> {
    let mut args = argv.into_iter();
    let mut out: Vec<String> = args.next().into_iter().collect();
    let mut moved = Vec::new();
    while let Some(arg) = args.next() {
        let list = match arg.as_str() {
            "--" => {
                out.push(arg);
                out.extend(args.by_ref());
                break;
            }
            "-o" => match args.next() {
                Some(list) => list,
                // clap says the value is missing.
                None => {
                    out.push(arg);
                    break;
                }
            },
            a if a.starts_with("-o") => a["-o".len()..].trim_start_matches('=').to_string(),
            a => match bundled_list(a, cmd) {
                // `-fo LIST` (or `-foLIST`): the switches before `o` stay, the list is expanded.
                Some((switches, rest)) => {
                    out.push(switches.to_string());
                    match rest {
                        "" => match args.next() {
                            Some(list) => list,
                            None => {
                                out.push("-o".into());
                                break;
                            }
                        },
                        rest => rest.trim_start_matches('=').to_string(),
                    }
                }
                None => {
                    out.push(arg);
                    continue;
                }
            },
        };
        let mut kept = Vec::new();
        for item in items(&list) {
            match own_option(cmd, item)? {
                Some(option) => moved.push(option),
                None => kept.push(item),
            }
        }
        if !kept.is_empty() {
            out.push("-o".into());
            out.push(kept.join(","));
        }
    }
    out.splice(1..1, moved);
    Ok(out)
}

/// The items of a comma-separated `-o` list, trimmed, as libmount splits it: not at a comma
/// inside double quotes (`cache_dir="/data/a,b"`).
pub fn items(list: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut quoted) = (0, false);
    for (at, c) in list.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                out.push(&list[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    out.push(&list[start..]);
    out.into_iter()
        .map(str::trim)
        .filter(|i| !i.is_empty())
        .collect()
}

/// `value` without one pair of surrounding double quotes, as libmount quotes a value.
pub fn unquote(value: &str) -> &str {
    value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or(value)
}

/// For a bundle of short switches ending in `-o` (`-fo LIST`, `-vvoLIST`): the switches
/// (`-f`, `-vv`) and what follows the `o` in the same argument.
fn bundled_list<'a>(arg: &'a str, cmd: &Command) -> Option<(&'a str, &'a str)> {
    let shorts = arg.strip_prefix('-').filter(|s| !s.starts_with('-'))?;
    let at = shorts.find('o')?;
    let switch = |c: char| {
        cmd.get_arguments()
            .any(|a| a.get_short() == Some(c) && !a.get_action().takes_values())
    };
    (at > 0 && shorts[..at].chars().all(switch)).then(|| (&arg[..at + 1], &shorts[at + 1..]))
}

/// Long options that cannot work through mount(8), refused in `-o` lists, and why.
const NOT_IN_LISTS: &[(&str, &str)] = &[
    (
        "foreground",
        "mount(8) would wait for it until unmounted; run zarrfs -f STORE MOUNTPOINT instead",
    ),
    (
        "generate",
        "it prints and mounts nothing; run zarrfs --generate WHAT instead",
    ),
];

/// `--name[=value]` when `item` (`name` or `name=value`) names a long option of `cmd`.
fn own_option(cmd: &Command, item: &str) -> Result<Option<String>, OptionError> {
    let (name, value) = match item.split_once('=') {
        Some((n, v)) => (n, Some(unquote(v))),
        None => (item, None),
    };
    let long = name.replace('_', "-");
    let Some(arg) = cmd.get_arguments().find(|a| a.get_long() == Some(&long)) else {
        return Ok(None);
    };
    if let Some(&(_, why)) = NOT_IN_LISTS.iter().find(|(l, _)| *l == long) {
        return Err(OptionError::NotInList {
            item: item.to_string(),
            why,
        });
    }
    let takes_value = arg.get_action().takes_values();
    match (takes_value, value) {
        (true, Some(v)) => Ok(Some(format!("--{long}={v}"))),
        (false, None) => Ok(Some(format!("--{long}"))),
        (true, None) => {
            let value_name = arg
                .get_value_names()
                .and_then(|n| n.first())
                .map_or("VALUE".to_string(), |n| n.to_string());
            Err(OptionError::ValueMissing {
                item: item.to_string(),
                name: name.to_string(),
                value_name,
            })
        }
        (false, Some(_)) => Err(OptionError::SwitchWithValue {
            item: item.to_string(),
            name: name.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::MountArgs;
    use clap::CommandFactory;

    fn expanded(args: &[&str]) -> Result<Vec<String>, OptionError> {
        let argv = std::iter::once("zarrfs")
            .chain(args.iter().copied())
            .map(String::from)
            .collect();
        expand(argv, &MountArgs::command())
    }

    #[test]
    fn moves_zarrfs_options_out_of_o_lists() {
        let got = expanded(&[
            "s",
            "m",
            "-o",
            "ro,cache_size=2G,nodev,anonymous",
            "-oread-ahead=4M,allow_other",
            "-o",
            "cache_dir=/var/cache/z dir",
        ])
        .unwrap();
        assert_eq!(
            got,
            [
                "zarrfs",
                "--cache-size=2G",
                "--anonymous",
                "--read-ahead=4M",
                "--cache-dir=/var/cache/z dir",
                "s",
                "m",
                "-o",
                "ro,nodev",
                "-o",
                "allow_other",
            ]
        );
        let args = <MountArgs as clap::Parser>::try_parse_from(got).unwrap();
        assert_eq!(args.options.cache_size, 2 << 30);
        assert!(args.options.anonymous);
        assert_eq!(args.options.read_ahead, Some(4 << 20));
    }

    #[test]
    fn an_o_list_after_bundled_switches_is_expanded_too() {
        let got = expanded(&["s", "m", "-fo", "cache_size=2G,ro", "-vvoanonymous"]).unwrap();
        assert_eq!(
            got,
            [
                "zarrfs",
                "--cache-size=2G",
                "--anonymous",
                "s",
                "m",
                "-f",
                "-o",
                "ro",
                "-vv"
            ]
        );
        let args = <MountArgs as clap::Parser>::try_parse_from(got).unwrap();
        assert_eq!(args.options.cache_size, 2 << 30);
        assert!(args.options.anonymous && args.options.foreground);
        // Not a bundle of switches: left to clap.
        assert_eq!(expanded(&["-xo", "a"]).unwrap(), ["zarrfs", "-xo", "a"]);
        assert_eq!(expanded(&["--foo"]).unwrap(), ["zarrfs", "--foo"]);
    }

    /// A value in double quotes (libmount's quoting) is taken without them, commas and all.
    #[test]
    fn a_quoted_value_is_one_item_without_its_quotes() {
        let got = expanded(&["-o", "cache_dir=\"/tmp/a,b\",ro,fsname=\"x,y\"", "s", "m"]).unwrap();
        assert_eq!(
            got,
            [
                "zarrfs",
                "--cache-dir=/tmp/a,b",
                "-o",
                "ro,fsname=\"x,y\"",
                "s",
                "m"
            ]
        );
        assert_eq!(items(" a,\"b,c\" ,,d"), ["a", "\"b,c\"", "d"]);
        assert_eq!(unquote("\""), "\"");
    }

    /// An option given twice (an fstab line's, then the command line's) takes the later value;
    /// options that take a list keep every value.
    #[test]
    fn the_later_of_two_values_wins() {
        let got = expanded(&[
            "-o",
            "cache_size=2G,anonymous,allow_target=/a",
            "-o",
            "cache_size=4G,anonymous,allow_target=/b",
            "--cache-size",
            "3G",
            "s",
            "m",
        ])
        .unwrap();
        let args = <MountArgs as clap::Parser>::try_parse_from(got).unwrap();
        assert_eq!(args.options.cache_size, 3 << 30);
        assert!(args.options.anonymous);
        assert_eq!(args.options.allow_target, ["/a", "/b"]);
        let got = expanded(&["-o", "cache_size=2G", "-o", "cache_size=4G", "s", "m"]).unwrap();
        let args = <MountArgs as clap::Parser>::try_parse_from(got).unwrap();
        assert_eq!(args.options.cache_size, 4 << 30);
    }

    #[test]
    fn every_long_option_has_an_o_form_but_those_mount_cannot_run() {
        let cmd = MountArgs::command();
        for arg in cmd.get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            if NOT_IN_LISTS.iter().any(|(l, _)| *l == long) {
                continue;
            }
            let item = match arg.get_action().takes_values() {
                true => format!("{}=x", long.replace('-', "_")),
                false => long.replace('-', "_"),
            };
            let option = own_option(&cmd, &item).unwrap();
            assert!(option.is_some_and(|o| o.starts_with(&format!("--{long}"))));
        }
    }

    #[test]
    fn says_what_is_wrong_with_a_zarrfs_option() {
        let err = expanded(&["-o", "cache_size", "s", "m"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("cache_size=SIZE"), "{err}");
        let err = expanded(&["-o", "anonymous=yes", "s", "m"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("takes no value"), "{err}");
        for (list, says) in [
            ("foreground", "zarrfs -f"),
            ("ro,generate=man", "zarrfs --generate"),
        ] {
            let err = expanded(&["-o", list, "s", "m"]).unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
        }
        // Past `--` nothing is an option.
        let got = expanded(&["--", "-o", "x"]).unwrap();
        assert_eq!(got, ["zarrfs", "--", "-o", "x"]);
    }
}
