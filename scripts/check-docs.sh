#!/usr/bin/env bash
# The API docs as docs.rs builds its default page: csi-proxy-client on
# Linux, every feature, `--cfg docsrs` (Cargo.toml,
# [package.metadata.docs.rs]); fails when a public item of the
# `host-process` feature, or one a Windows build has, is missing from them.
#
#   scripts/check-docs.sh             # build the docs, then check them
#   scripts/check-docs.sh --no-build  # check what $CARGO_TARGET_DIR/doc holds
#   scripts/check-docs.sh --nightly   # build with the nightly toolchain, as docs.rs does
#
# `--cfg docsrs` turns on `#![feature(doc_cfg)]` (the "Windows only"
# badges), which needs a nightly rustdoc. By default the stable toolchain's
# rustdoc is run with RUSTC_BOOTSTRAP=1 through a wrapper, so that only
# rustdoc sees it: the dependencies' builds (shared with `cargo doc`,
# `cargo check`) stay as they are, and the check costs one rustdoc run of
# the crate. `--nightly` builds every dependency again with nightly.
#
# What must be there, read from the sources (nothing is listed by hand):
# - every `pub` item and `Node` method whose own `#[cfg]` names `windows` or
#   the `host-process` feature;
# - in the `host_process` module, each `pub use` and each top-level `pub`
#   item of its public submodules (`windows` included);
# - the stand-in that the Linux docs show for the Windows-only code
#   (src/host_process/windows_docs.rs) has the same public items and
#   signatures as src/host_process/windows/mod.rs, and the same
#   `Node::host_process` signature as src/node/connect.rs.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
target=${CARGO_TARGET_DIR:-target}
case "$target" in /*) ;; *) target="$repo/$target" ;; esac

build=1
nightly=0
for arg in "$@"; do
  case "$arg" in
    --no-build) build=0 ;;
    --nightly) nightly=1 ;;
    *) echo "check-docs.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done

if [ "$(uname -s)" != Linux ]; then
  echo "check-docs.sh: docs.rs's default page is built on Linux; this is $(uname -s)" >&2
  exit 2
fi

if [ "$build" = 1 ]; then
  export RUSTDOCFLAGS="--cfg docsrs -D warnings"
  if [ "$nightly" = 1 ]; then
    cargo +nightly doc --quiet -p csi-proxy-client --all-features --no-deps
  else
    wrapper="$target/check-docs/rustdoc"
    mkdir -p "$(dirname "$wrapper")"
    printf '#!/bin/sh\nRUSTC_BOOTSTRAP=1 exec rustdoc "$@"\n' >"$wrapper"
    chmod +x "$wrapper"
    RUSTDOC="$wrapper" cargo doc --quiet -p csi-proxy-client --all-features --no-deps
  fi
fi

doc="$target/doc/csi_proxy_client"
if [ ! -f "$doc/index.html" ]; then
  echo "check-docs.sh: no docs in $doc (run without --no-build)" >&2
  exit 2
fi

failures=0
fail() { echo "check-docs.sh: $*" >&2; failures=$((failures + 1)); }
checked=0

# The rustdoc page of an item of kind $1 named $2 in the module directory $3.
page() {
  local kind=$1 name=$2 dir=$3
  case "$kind" in
    mod) echo "$dir/$name/index.html" ;;
    const) echo "$dir/constant.$name.html" ;;
    "async fn") echo "$dir/fn.$name.html" ;;
    *) echo "$dir/$kind.$name.html" ;;
  esac
}

# Items whose own cfg attribute names windows or host-process, anywhere in
# src/: "FILE|INDENT|KIND|NAME" (INDENT empty for a top-level item, else a
# method or an item in an inline module).
platform_items() {
  find src -name '*.rs' -print0 | sort -z | xargs -0 awk '
    FNR == 1 { cfg = 0 }
    /^[[:space:]]*#\[cfg\(/ {
      if ($0 ~ /windows|"host-process"/ && $0 !~ /not\(windows\)|test/) cfg = 1
      next
    }
    /^[[:space:]]*(#\[|\/\/)/ { next }
    {
      if (cfg && match($0, /^[[:space:]]*pub (async fn|fn|struct|enum|trait|const|static|type|mod) [A-Za-z_][A-Za-z0-9_]*/)) {
        line = substr($0, RSTART, RLENGTH)
        indent = line; sub(/pub .*/, "", indent)
        rest = line; sub(/^[[:space:]]*pub /, "", rest)
        kind = rest; sub(/ [A-Za-z_][A-Za-z0-9_]*$/, "", kind)
        name = rest; sub(/.* /, "", name)
        printf "%s|%s|%s|%s\n", FILENAME, (indent == "" ? "" : "    "), kind, name
      }
      cfg = 0
    }'
}

while IFS='|' read -r file indent kind name; do
  # The docs-only stand-in is what is being checked for, not a source of items.
  [ "$file" = src/host_process/windows_docs.rs ] && continue
  checked=$((checked + 1))
  if [ -n "$indent" ]; then
    # A method: on its type's page (Node's for the node layer).
    if [ "$file" = "${file#src/node/}" ]; then
      grep -rqs --include='*.html' "id=\"method\.$name\"" "$doc" ||
        fail "method $name ($file) is missing from the Linux docs"
    else
      grep -qs "id=\"method\.$name\"" "$doc/node/struct.Node.html" ||
        fail "Node::$name ($file) is missing from the Linux docs"
    fi
  else
    # A top-level item: its page in the module directory its file is.
    dir=${file#src/}
    dir=${dir%.rs}
    dir=${dir%/mod}
    [ "$dir" = lib ] && dir=""
    [ -f "$(page "$kind" "$name" "$doc${dir:+/$dir}")" ] || fail "$kind $name ($file) is missing from the Linux docs"
  fi
done < <(platform_items)

# The host_process module: what it re-exports, and each public submodule's
# top-level public items.
hp=src/host_process
[ -f "$doc/host_process/index.html" ] || fail "the host_process module is missing from the Linux docs"
for name in $(sed -n 's/^pub use [a-z_]*::{\{0,1\}\([^};]*\)}\{0,1\};/\1/p' "$hp/mod.rs" | tr ',' ' '); do
  checked=$((checked + 1))
  # A re-export of a public submodule's item links to its page there.
  [ -n "$(find "$doc/host_process" -name "*.$name.html" -print -quit)" ] ||
    fail "host_process::$name is missing from the Linux docs"
done
for module in $(sed -n 's/^pub mod \([a-z_]*\);/\1/p' "$hp/mod.rs" | sort -u); do
  file="$hp/$module.rs"
  [ -f "$file" ] || file="$hp/$module/mod.rs"
  [ -f "$doc/host_process/$module/index.html" ] ||
    fail "host_process::$module is missing from the Linux docs"
  while read -r kind name; do
    checked=$((checked + 1))
    [ -f "$(page "$kind" "$name" "$doc/host_process/$module")" ] ||
      fail "host_process::$module::$name ($kind) is missing from the Linux docs"
  done < <(sed -nE 's/^pub (async fn|fn|struct|enum|trait|const|static|type|mod) ([A-Za-z_][A-Za-z0-9_]*).*/\1 \2/p' "$file")
done

# The stand-in matches the Windows code it stands for: the same public
# items with the same first line, and Node::host_process's signature.
signatures() { grep -E '^pub (async fn|fn|struct|enum|trait|const|static|type) ' "$1" | sort; }
if ! diff <(signatures "$hp/windows/mod.rs") <(signatures "$hp/windows_docs.rs") >/dev/null; then
  fail "the public items of $hp/windows_docs.rs differ from $hp/windows/mod.rs:"
  diff <(signatures "$hp/windows/mod.rs") <(signatures "$hp/windows_docs.rs") >&2 || true
fi
real=$(grep -E '^    pub fn host_process\(' src/node/connect.rs || true)
standin=$(grep -E '^    pub fn host_process\(' "$hp/windows_docs.rs" || true)
if [ -z "$real" ] || [ "$real" != "$standin" ]; then
  fail "Node::host_process: src/node/connect.rs has '$(echo $real)', the stand-in '$(echo $standin)'"
fi
grep -qs 'id="method\.host_process"' "$doc/node/struct.Node.html" ||
  fail "Node::host_process is missing from the Linux docs"

if [ "$failures" -gt 0 ]; then
  echo "check-docs.sh: $failures missing or different of $checked items checked" >&2
  exit 1
fi
echo "check-docs.sh: all $checked host-process and Windows items are in the Linux docs ($doc)"
