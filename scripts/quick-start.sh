#!/usr/bin/env bash
# Runs the README's quick start word for word (the block between its quick-start markers), as a
# new user would after the install prerequisites: a real `cargo install` into /usr/local (a
# release build, minutes), then a mount of the demo store, reads, unmount, and `man zarrfs`.
# tests/docs.rs runs the same block with ZARRFS_BIN set, which skips the build.
set -euo pipefail
cd "$(dirname "$0")/.."
block=$(sed -n '/^<!-- quick-start/,/^<!-- end quick-start -->/p' README.md | sed '1,2d;$d' | sed '$d')
[ -n "$block" ] || { echo "no quick-start block in README.md" >&2; exit 1; }
export MANPAGER=cat PAGER=cat
bash -euxo pipefail -c "$block"
