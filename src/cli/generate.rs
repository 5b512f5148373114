//! `zarrfs --generate man|bash|zsh|fish`: the manual page and shell completions, made from the
//! command-line definition itself.

use super::{Generated, MountArgs};
use clap::CommandFactory;
use clap_complete::Shell;

/// Prints what `what` names on stdout; returns the exit code.
pub fn print(what: Generated) -> i32 {
    let mut out = std::io::stdout().lock();
    match write(what, &mut out) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("zarrfs: --generate: {e}");
            1
        }
    }
}

/// Sections of the manual page beyond those clap_mangen makes from the command line, each a
/// heading and its paragraphs.
const SECTIONS: &[(&str, &[&str])] = &[
    (
        "UNMOUNTING",
        &[
            "zarrfs unmount MOUNTPOINT unmounts a zarrfs mount and returns once its daemon has \
             ended (once the kernel has unmounted when it finds no pid record for the mount: \
             one made in another mount namespace or moved since); it refuses a mount zarrfs did not make, and cleans a dead mount (\"Transport \
             endpoint is not connected\") a killed daemon left behind. umount(8) and \
             fusermount3 -u work too. A mount in use (a process has a file open in it, or its \
             working directory) is busy and stays mounted.",
        ],
    ),
    (
        "SIGNALS",
        &[
            "SIGINT, SIGTERM and SIGHUP unmount the mount and end the daemon (or zarrfs -f). \
             If the mount is busy, zarrfs says so and keeps serving; the next signal tries \
             again and, if it is still busy, detaches the mount lazily (umount -l) and exits \
             with status 1. A signal while the store is still loading ends zarrfs with nothing \
             mounted. A mount another process already detached ends the daemon at the first \
             signal. SIGUSR1 is ignored.",
        ],
    ),
    (
        "EXIT STATUS",
        &[
            "0: mounted (zarrfs returns once the mount answers); for zarrfs -f and its daemon, \
             unmounted cleanly; for zarrfs unmount, unmounted.",
            "1: nothing mounted (the store cannot be opened or has no Zarr metadata, the mount \
             point is refused or already mounted, the mount failed), the mount detached lazily \
             while busy, or zarrfs unmount failed.",
            "2: invalid arguments or options; nothing was mounted.",
        ],
    ),
    (
        "FILES",
        &[
            "/run/zarrfs (as root), else $XDG_RUNTIME_DIR/zarrfs, /run/user/UID/zarrfs or \
             /tmp/zarrfs-UID: a pid record MAJOR:MINOR.pid for each mount (its daemon, start \
             time and mount point), which zarrfs unmount reads; and, where nothing listens on \
             /dev/log, the daemon's log MAJOR:MINOR.log (mode 0600).",
            "$XDG_CACHE_HOME/zarrfs or ~/.cache/zarrfs (/tmp/zarrfs-cache-UID when neither \
             variable is set, /var/cache/zarrfs as root): the cache directory of \
             --default-cache-dir.",
        ],
    ),
];

/// The command line as the manual and completions show it: `zarrfs unmount` (taken before
/// the mount's arguments are parsed) as a subcommand, and STORE and MOUNTPOINT as required
/// (as they are, but for --generate).
fn command() -> clap::Command {
    let unmount = super::UnmountArgs::command().name("unmount");
    MountArgs::command()
        .mut_arg("store", |a| {
            a.required_unless_present(clap::builder::Resettable::<clap::Id>::Reset)
                .required(true)
        })
        .mut_arg("mountpoint", |a| {
            a.required_unless_present(clap::builder::Resettable::<clap::Id>::Reset)
                .required(true)
        })
        .subcommand(unmount)
}

/// Writes the manual page or completions to `out`.
fn write(what: Generated, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let mut cmd = command();
    let shell = match what {
        Generated::Man => return manual(cmd, out),
        Generated::Bash => Shell::Bash,
        Generated::Zsh => Shell::Zsh,
        Generated::Fish => Shell::Fish,
    };
    clap_complete::generate(shell, &mut cmd, "zarrfs", out);
    Ok(())
}

/// The manual page: clap_mangen's sections, the examples of `--help` as they are laid out
/// there (unfilled: their columns would run together as a filled paragraph), then
/// [`SECTIONS`].
fn manual(cmd: clap::Command, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let help = cmd
        .get_after_help()
        .map(|h| h.to_string())
        .unwrap_or_default();
    // The section's heading says it.
    let examples = help.strip_prefix("Examples:\n").unwrap_or(&help);
    let man = clap_mangen::Man::new(cmd);
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    man.render_options_section(out)?;
    let mut roff = roff::Roff::new();
    roff.control("SH", ["EXAMPLES"]).control("nf", []);
    for line in examples.lines() {
        roff.text([roff::roman(line)]);
    }
    roff.control("fi", []);
    for (heading, paragraphs) in SECTIONS {
        roff.control("SH", [*heading]);
        for paragraph in *paragraphs {
            roff.control("PP", []).text([roff::roman(*paragraph)]);
        }
    }
    roff.to_writer(out)?;
    man.render_version_section(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manual_and_completions_name_every_option() {
        for what in [
            Generated::Man,
            Generated::Bash,
            Generated::Zsh,
            Generated::Fish,
        ] {
            let mut out = Vec::new();
            write(what, &mut out).unwrap();
            // roff escapes hyphens.
            let text = String::from_utf8(out).unwrap().replace("\\-", "-");
            for option in [
                "cache-size",
                "cache-dir",
                "endpoint",
                "anonymous",
                "read-ahead",
                "unmount",
            ] {
                assert!(text.contains(option), "{what:?} lacks {option}");
            }
        }
    }

    #[test]
    fn the_manual_has_its_sections_once_each_and_required_operands() {
        let mut out = Vec::new();
        write(Generated::Man, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        for heading in [
            "NAME",
            "SYNOPSIS",
            "DESCRIPTION",
            "OPTIONS",
            "EXAMPLES",
            "UNMOUNTING",
            "SIGNALS",
            "EXIT STATUS",
            "FILES",
        ] {
            let line = format!("\n.SH {heading}\n");
            let quoted = format!("\n.SH \"{heading}\"\n");
            let count = text.matches(&line).count() + text.matches(&quoted).count();
            assert_eq!(count, 1, "{heading}");
        }
        assert!(!text.contains("Examples:"), "EXAMPLES repeats its heading");
        // Required operands are shown without brackets.
        assert!(!text.contains("[\\fISTORE\\fR]"), "STORE shown as optional");
        assert!(
            !text.contains("[\\fIMOUNTPOINT\\fR]"),
            "MOUNTPOINT shown as optional"
        );
        assert!(text.contains("SIGHUP"));
        // DESCRIPTION says more than NAME.
        let section = |name: &str| {
            let from = text.find(&format!(".SH {name}\n")).unwrap();
            let body = &text[from..];
            body[1..].split("\n.SH ").next().unwrap().to_string()
        };
        let name = section("NAME");
        let summary = name.lines().nth(1).unwrap().split("\\- ").nth(1).unwrap();
        assert!(
            !section("DESCRIPTION").contains(summary),
            "DESCRIPTION repeats NAME"
        );
    }
}
