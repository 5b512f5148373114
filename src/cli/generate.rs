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

/// Writes the manual page or completions to `out`.
fn write(what: Generated, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let mut cmd = MountArgs::command();
    let shell = match what {
        Generated::Man => return manual(cmd, out),
        Generated::Bash => Shell::Bash,
        Generated::Zsh => Shell::Zsh,
        Generated::Fish => Shell::Fish,
    };
    clap_complete::generate(shell, &mut cmd, "zarrfs", out);
    Ok(())
}

/// The manual page: clap_mangen's sections, then the examples of `--help` as they are laid out
/// there (unfilled: their columns would run together as a filled paragraph).
fn manual(cmd: clap::Command, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let examples = cmd
        .get_after_help()
        .map(|h| h.to_string())
        .unwrap_or_default();
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
            ] {
                assert!(text.contains(option), "{what:?} lacks {option}");
            }
        }
    }
}
