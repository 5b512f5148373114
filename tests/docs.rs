//! The manual stays true: the README's quick start runs word for word and `man zarrfs` works
//! after it, the README's examples on the demo store run (the manual's fstab lines are mounted
//! by tests/fuse/fstab.rs), every command-line option is documented in both forms, and every link between the documents
//! resolves. Scripts run in a private mount namespace (`unshare -m`) with tmpfs on /usr/local and
//! /var/cache, so installing and caching touch nothing outside; the binary under test is
//! installed (`ZARRFS_BIN`), so no release build is made.

mod common;

use clap::CommandFactory;
use common::mount::{describe, root_fuse_ready, run_within};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap()
}

/// The documents: README.md and docs/*.md.
fn documents() -> Vec<PathBuf> {
    let mut out = vec![repo().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    out.extend(docs);
    out
}

/// Pages other developers write, linked from the README before they exist.
const WRITTEN_ELSEWHERE: &[&str] = &["docs/security.md", "docs/icechunk-and-references.md"];

/// GitHub's anchor of a heading.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(text: &str) -> Vec<String> {
    let mut in_code = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        } else if !in_code && line.starts_with('#') {
            out.push(slug(line.trim_start_matches('#')));
        }
    }
    out
}

#[test]
fn the_readme_is_short_and_every_link_resolves() {
    let readme = read("README.md");
    assert!(
        readme.lines().count() < 150,
        "README.md has {} lines",
        readme.lines().count()
    );
    let mut broken = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        let dir = doc.parent().unwrap();
        for (i, _) in text.match_indices("](") {
            let rest = &text[i + 2..];
            let target = &rest[..rest.find(')').unwrap()];
            if target.contains("://") {
                continue;
            }
            let (file, anchor) = target.split_once('#').unwrap_or((target, ""));
            let path = if file.is_empty() {
                doc.clone()
            } else {
                dir.join(file)
            };
            let rel = path
                .canonicalize()
                .ok()
                .and_then(|p| p.strip_prefix(repo()).ok().map(Path::to_path_buf));
            let named = dir.join(file);
            let elsewhere = WRITTEN_ELSEWHERE
                .iter()
                .any(|w| named.ends_with(w) || repo().join(w) == named);
            match rel {
                None if elsewhere => {}
                None => broken.push(format!("{}: {target}", doc.display())),
                Some(_) if anchor.is_empty() => {}
                Some(_) => {
                    let headings = anchors(&std::fs::read_to_string(&path).unwrap());
                    if !headings.iter().any(|h| h == anchor) {
                        broken.push(format!("{}: {target} (no such heading)", doc.display()));
                    }
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_option_is_in_the_configuration_page_in_both_forms() {
    let page = read("docs/configuration.md");
    let mut missing = Vec::new();
    for arg in zarrfs::cli::MountArgs::command().get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        if !page.contains(&format!("`--{long}")) {
            missing.push(format!("--{long}"));
        }
        let o_form = long.replace('-', "_");
        if long != "generate" && !page.contains(&format!("`{o_form}")) {
            missing.push(format!("-o {o_form}"));
        }
    }
    assert!(
        missing.is_empty(),
        "docs/configuration.md lacks {missing:?}"
    );
}

/// How long one script may take.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(180);

/// Runs `script` with bash from the repository's top directory in a private mount namespace
/// with tmpfs on /usr/local and /var/cache; `/tmp/zarr-demo` is unmounted however it ends.
fn run_isolated(script: &str) -> Output {
    let full = format!(
        "set -euo pipefail\n\
         mount -t tmpfs tmpfs /usr/local\n\
         mkdir -p /usr/local/bin\n\
         mount -t tmpfs tmpfs /var/cache\n\
         trap 'umount -l /tmp/zarr-demo 2>/dev/null || true' EXIT\n\
         {script}"
    );
    let mut cmd = Command::new("unshare");
    cmd.args(["-m", "--propagation", "private", "bash", "-c", &full])
        .current_dir(repo())
        .env("ZARRFS_BIN", env!("CARGO_BIN_EXE_zarrfs"))
        .env("MANPAGER", "cat")
        .env("PAGER", "cat");
    run_within(&mut cmd, SCRIPT_TIMEOUT)
}

/// One test at a time uses /tmp/zarr-demo, the path the README's examples name.
static DEMO_MOUNT: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

#[test]
fn the_quick_start_runs_word_for_word_and_man_zarrfs_works_after_it() {
    if !root_fuse_ready() {
        return;
    }
    let _one = DEMO_MOUNT.lock();
    let out = run_isolated("scripts/quick-start.sh");
    let all = describe(&out);
    assert!(out.status.success(), "{all}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    // od's first values of temperature, as the demo's writer stored them (zarr-python).
    assert!(
        stdout.contains("279.3") && stdout.contains("279.8"),
        "{all}"
    );
    assert!(stdout.contains("temperature.npy"), "{all}");
    // man zarrfs printed the page made from the command-line definition.
    assert!(
        stdout.contains("zarrfs(1)") || stdout.contains("ZARRFS(1)"),
        "{all}"
    );
    assert!(
        stdout.contains("cache-dir") || stdout.contains("cache‐dir"),
        "{all}"
    );
}

/// The README's blocks that mount the demo store, as they are.
fn demo_blocks() -> Vec<String> {
    let readme = read("README.md");
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in readme.lines() {
        match (&mut current, line) {
            (None, "```sh") => current = Some(String::new()),
            (Some(block), "```") => {
                if block.starts_with("zarrfs ")
                    && block.contains("examples/demo.zarr /tmp/zarr-demo")
                {
                    blocks.push(block.clone());
                }
                current = None;
            }
            (Some(block), l) => {
                block.push_str(l);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

#[test]
fn the_readme_examples_on_the_demo_store_run() {
    if !root_fuse_ready() {
        return;
    }
    let _one = DEMO_MOUNT.lock();
    let blocks = demo_blocks();
    assert!(blocks.len() >= 3, "only {} demo blocks", blocks.len());
    for block in blocks {
        assert!(
            block.trim_end().ends_with("zarrfs unmount /tmp/zarr-demo"),
            "{block}"
        );
        // After the quick start's install step, as the README says.
        let out = run_isolated(&format!("scripts/install.sh > /dev/null\n{block}"));
        assert!(out.status.success(), "{block}\n{}", describe(&out));
    }
}

/// One example of a document: the commands of a block (`$ ` lines) and the output it shows.
struct Example {
    doc: String,
    commands: Vec<String>,
    shown: Vec<String>,
}

/// The shell sessions of `doc` (blocks whose lines start with `$ `).
fn sessions(doc: &str) -> Vec<Example> {
    let mut out = Vec::new();
    let mut block: Option<Example> = None;
    for line in read(doc).lines() {
        match (&mut block, line.starts_with("```")) {
            (None, true) => {
                block = Some(Example {
                    doc: doc.into(),
                    commands: Vec::new(),
                    shown: Vec::new(),
                })
            }
            (Some(_), true) => out.extend(block.take().filter(|b| !b.commands.is_empty())),
            (Some(b), false) => match line.strip_prefix("$ ") {
                Some(command) => b.commands.push(command.to_string()),
                None if !b.commands.is_empty() => b.shown.push(line.to_string()),
                None => {}
            },
            (None, false) => {}
        }
    }
    out
}

/// The ```python blocks of `doc`.
fn python_blocks(doc: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut block: Option<String> = None;
    for line in read(doc).lines() {
        match (&mut block, line) {
            (None, "```python") => block = Some(String::new()),
            (Some(_), "```") => out.extend(block.take()),
            (Some(b), l) => {
                b.push_str(l);
                b.push('\n');
            }
            (None, _) => {}
        }
    }
    out
}

/// Output lines that depend on the machine, the day or the run, or that the document elides.
fn varies(line: &str) -> bool {
    line.contains("...")
        || line.contains("[...]")
        || line.starts_with("-r--r--r--")
        || line.contains("/examples/demo.zarr ")
        || line.starts_with("Filesystem")
        || line.trim().is_empty()
        || (line.starts_with(' ') && line.trim_start().starts_with('#'))
        || line.trim_start().starts_with('"')
        || line.trim_start().starts_with('{')
        || line.trim_start().starts_with('}')
        || line.trim_start().starts_with("\"")
}

/// The shell sessions and Python programs of what-the-mount-shows.md run against the demo store
/// mounted at /tmp/zarr-demo (each session in a fresh working directory): every command
/// succeeds, and every output line the page shows (but those that vary: dates, sizes of a run,
/// elisions) is printed.
#[test]
fn the_sessions_of_what_the_mount_shows_run_on_the_demo_store() {
    if !root_fuse_ready() {
        return;
    }
    let _one = DEMO_MOUNT.lock();
    let examples = sessions("docs/what-the-mount-shows.md");
    assert!(examples.len() >= 8, "only {} sessions", examples.len());
    let work = tempfile::tempdir().unwrap();
    let mut script =
        String::from("scripts/install.sh > /dev/null\nzarrfs examples/demo.zarr /tmp/zarr-demo\n");
    for (i, example) in examples.iter().enumerate() {
        let dir = work.path().join(i.to_string());
        std::fs::create_dir(&dir).unwrap();
        script.push_str(&format!("echo '@@ {i}'\n( cd '{}'\n", dir.display()));
        for command in &example.commands {
            script.push_str(command);
            script.push('\n');
        }
        script.push_str(")\n");
    }
    let programs = python_blocks("docs/what-the-mount-shows.md");
    assert!(!programs.is_empty(), "no python example");
    for program in programs {
        script.push_str(&format!("python3 - <<'PYTHON'\n{program}PYTHON\n"));
    }
    script.push_str("echo '@@ end'\nzarrfs unmount /tmp/zarr-demo\n");
    let out = run_isolated(&script);
    assert!(out.status.success(), "{}", describe(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let compared: usize = examples
        .iter()
        .map(|e| e.shown.iter().filter(|l| !varies(l)).count())
        .sum();
    assert!(compared >= 30, "only {compared} output lines compared");
    for (i, example) in examples.iter().enumerate() {
        let start = stdout.find(&format!("@@ {i}\n")).unwrap();
        let end = stdout[start + 3..]
            .find("@@ ")
            .map_or(stdout.len(), |e| start + 3 + e);
        let printed = &stdout[start..end];
        for line in example.shown.iter().filter(|l| !varies(l)) {
            assert!(
                printed.lines().any(|p| p.trim_end() == line.trim_end()),
                "{}: {:?} shows {line:?}, not printed:\n{printed}",
                example.doc,
                example.commands
            );
        }
    }
}
