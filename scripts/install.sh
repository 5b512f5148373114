#!/usr/bin/env bash
# Installs zarrfs where mount(8), fstab and systemd find it, with its manual page and shell
# completions:
#   PREFIX/bin/zarrfs                                    (mount helpers search only the system PATH:
#                                                         /usr/local/bin is on it, ~/.cargo/bin is not)
#   PREFIX/share/man/man1/zarrfs.1                       (man zarrfs)
#   PREFIX/share/bash-completion/completions/zarrfs
#   PREFIX/share/zsh/site-functions/_zarrfs
#   PREFIX/share/fish/vendor_completions.d/zarrfs.fish
# Usage: scripts/install.sh [PREFIX]      (default /usr/local; run as root for it)
# ZARRFS_BIN=path/to/zarrfs installs that binary instead of building one with cargo install.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix="${1:-/usr/local}"
mkdir -p "$prefix/bin"
if [ -n "${ZARRFS_BIN:-}" ]; then
  install -m 0755 "$ZARRFS_BIN" "$prefix/bin/zarrfs"
else
  cargo install --locked --path . --root "$prefix"
fi
zarrfs="$prefix/bin/zarrfs"
share="$prefix/share"
mkdir -p "$share/man/man1" "$share/bash-completion/completions" "$share/zsh/site-functions" \
  "$share/fish/vendor_completions.d"
"$zarrfs" --generate man > "$share/man/man1/zarrfs.1"
"$zarrfs" --generate bash > "$share/bash-completion/completions/zarrfs"
"$zarrfs" --generate zsh > "$share/zsh/site-functions/_zarrfs"
"$zarrfs" --generate fish > "$share/fish/vendor_completions.d/zarrfs.fish"
# man-db's index, where there is one (man finds the page without it too).
command -v mandb >/dev/null && mandb -q "$share/man" 2>/dev/null || true
echo "installed $zarrfs, its manual page (man zarrfs) and bash, zsh and fish completions"
