#!/usr/bin/env bash
# Fails when a crate of the workspace declares a dependency it does not use. The check
# is cargo-machete (stable Rust, reads the sources; no build needed), installed here at
# a pinned version when missing. A dependency it cannot see being used (one named only
# through a macro, say) is listed under [package.metadata.cargo-machete] `ignored` in
# that crate's Cargo.toml, with a comment saying why.
set -euo pipefail
cd "$(dirname "$0")/.."

version=0.9.2
if ! cargo machete --version 2>/dev/null | grep -q "$version"; then
  cargo install --locked cargo-machete --version "$version"
fi
cargo machete --with-metadata
