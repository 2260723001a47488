#!/usr/bin/env bash
# shellcheck disable=SC2034  # some pins are only read by the workflows, through --print-pins
# Builds the release archives of kubectl-kfsched and renders their krew manifest.
#
#   scripts/release.sh                   # the host's archive and dist/plugin.yaml
#   scripts/release.sh --cross           # every krew platform that builds on Linux: static
#                                        # x86_64/aarch64-unknown-linux-musl and x86_64-pc-windows-gnu
#   scripts/release.sh --target TRIPLE   # one platform (the release workflow, once per matrix entry)
#   scripts/release.sh --no-build --all  # dist/plugin.yaml from every platform's archive in dist/
#   scripts/release.sh --setup           # only install the tools --cross and tests/integrations/release.rs use
#   scripts/release.sh --wheel --target TRIPLE   # the archive and the Python wheel, from one build
#   scripts/release.sh --sdist                   # only the Python source distribution
#   kubectl krew install --manifest=dist/plugin.yaml --archive=dist/kubectl-kfsched_vX.Y.Z_<target>.tar.gz
#
# Builds are `cargo build --profile dist --locked` (stripped, LTO, no debug info), through
# `cargo zigbuild` for *-linux-musl and *-windows-gnu targets: zig is their linker and the C
# compiler of ring, so no cross toolchain is needed, and the same command works on any Linux
# or macOS host. With --wheel the build is `maturin build --profile dist --locked` instead
# (`--zig` for those targets: maturin links with the same zig), which runs cargo for the
# same binaries and packs them, with python/kfsched, into the wheel
# kfsched-<version>-py3-none-<platform>.whl; the archive is packed from those binaries, so
# one build makes both. Static *-linux-musl wheels carry both the manylinux2014 and the
# musllinux_1_2 tags (they need no libc of the system). What a build needs is installed
# first, once (stamped, 0 s when done): the rustup target, and ziglang, cargo-zigbuild,
# maturin, twine and auditwheel from PyPI in a venv.
#
# An archive (kubectl-kfsched_<tag>_<target>.tar.gz, .zip for Windows targets) holds
# kubectl-kfsched, the kubectl_complete-kfsched companion, LICENSE and README.md at its top
# level; <archive>.sha256 next to it and SHA256SUMS (every archive of the tag) are in
# `sha256sum` format. The manifest is rendered from krew-manifest.yaml (the krew-release-bot
# template) the way the bot renders it: each {{addURIAndSha "URL" .TagName}} becomes `uri:`
# and `sha256:`, here with the sha256 of the archive in the output directory instead of a
# download. A platform whose archive is not there is left out (a local install needs only
# the host's), unless --all or --placeholder.
#
# Options:
#   --target TRIPLE   cargo target to build; repeatable [default: the host's]
#   --cross           the targets above that build on Linux
#   --bin-dir DIR     package the binaries already in DIR instead of building (one target)
#   --out DIR         output directory [default: dist]
#   --base-url URL    uri prefix for the archives in the manifest [default: the template's
#                     GitHub release download URL]; e.g. a local HTTP server for validate-krew-manifest
#   --no-build        only render OUT/plugin.yaml (and OUT/SHA256SUMS) from the archives in OUT
#   --all             every platform of the template must have its archive in OUT (release CI)
#   --placeholder     platforms without an archive get an all-zero sha256 instead of being
#                     left out (how the committed plugin.yaml is made before the archives exist)
#   --tag TAG         [default: v<version in Cargo.toml>]
#   --wheel           also write each target's Python wheel into OUT (one build for both)
#   --sdist           write the Python source distribution kfsched-<version>.tar.gz into OUT
#                     (`maturin sdist`; pip builds it from source); alone, nothing else
#   --setup           install the build tools of the targets given, then exit; with no target
#                     (or --cross), those of all three and what tests/integrations/release.rs
#                     runs: qemu-user (apt-get), krew built for linux/arm64, actionlint
#   --print-pins      print versions.env's pins as KEY=VALUE lines (for $GITHUB_ENV) and exit
#
# Environment: KFSCHED_RELEASE_TOOLS (the venv, krew-linux-arm64, actionlint; default
# .cache/release-tools), KFSCHED_NO_APT=1 (never call apt-get), SOURCE_DATE_EPOCH (the
# archives' mtime; default: the last commit's time), CARGO_TARGET_DIR.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

# Version pins (RUST_TOOLCHAIN, ZIGLANG_VERSION, CARGO_ZIGBUILD_VERSION, KREW_VERSION,
# ACTIONLINT_VERSION, QEMU_USER_PACKAGE, GO_VERSION, ...) come from versions.env.
# shellcheck source=SCRIPTDIR/../versions.env
. "$root/versions.env"
CROSS_TARGETS=(x86_64-unknown-linux-musl aarch64-unknown-linux-musl x86_64-pc-windows-gnu)

tools=${KFSCHED_RELEASE_TOOLS:-$root/.cache/release-tools}
targets=() bin_dir='' out=$root/dist base_url='' build=1 mode=local tag='' setup=0 wheel=0 sdist=0
while [ $# -gt 0 ]; do
  case $1 in
    --target) targets+=("$2"); shift 2 ;;
    --cross) targets+=("${CROSS_TARGETS[@]}"); shift ;;
    --bin-dir) bin_dir=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --base-url) base_url=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --all) mode=all; shift ;;
    --placeholder) mode=placeholder; shift ;;
    --tag) tag=$2; shift 2 ;;
    --setup) setup=1; shift ;;
    --wheel) wheel=1; shift ;;
    --sdist) sdist=1; shift ;;
    --print-pins) grep -E '^[A-Z0-9_]+=' "$root/versions.env"; exit 0 ;;
    -h|--help) sed -n '3,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "release.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

sha256() { if command -v sha256sum >/dev/null; then sha256sum "$1" | cut -d' ' -f1; else shasum -a 256 "$1" | cut -d' ' -f1; fi; }
now() { date +%s; }

# ---- tools ----------------------------------------------------------------------------------
# uses_zig TRIPLE: built through cargo zigbuild.
uses_zig() { case $1 in *-linux-musl*|*-windows-gnu*) return 0 ;; *) return 1 ;; esac; }

ensure_rust_target() {
  rustup target list --installed 2>/dev/null | grep -qx "$1" && return 0
  echo "rustup target add $1" >&2
  rustup target add "$1" >&2
}

# ziglang, cargo-zigbuild, maturin, twine and auditwheel from PyPI, in their own venv.
zig_venv=$tools/zig-venv
ensure_zig() {
  local pins=("ziglang==$ZIGLANG_VERSION" "cargo-zigbuild==$CARGO_ZIGBUILD_VERSION" "maturin==$MATURIN_VERSION"
              "twine==$TWINE_VERSION" "auditwheel==$AUDITWHEEL_VERSION")
  local stamp; stamp="${pins[*]} $(python3 --version 2>&1)"
  if [ -f "$zig_venv/.stamp" ] && [ "$(cat "$zig_venv/.stamp")" = "$stamp" ] && [ -x "$zig_venv/bin/cargo-zigbuild" ]; then
    return 0
  fi
  local start; start=$(now)
  echo "installing ${pins[*]} into $zig_venv" >&2
  rm -rf "$zig_venv"
  python3 -m venv "$zig_venv"
  "$zig_venv/bin/python" -m pip install --quiet --disable-pip-version-check "${pins[@]}" >&2
  echo "$stamp" > "$zig_venv/.stamp"
  echo "zig $("$zig_venv/bin/python" -m ziglang version), $("$zig_venv/bin/cargo-zigbuild" --version) and $("$zig_venv/bin/maturin" --version) installed in $(( $(now) - start ))s" >&2
}

# Go tools of the release tests: krew for linux/arm64 (run under qemu-aarch64, so krew's own
# platform detection picks the arm64 archive) and actionlint.
go_tool() {  # NAME VERSION GOARCH PACKAGE LDFLAGS
  local name=$1 version=$2 arch=$3 pkg=$4 ldflags=$5
  local stamp; stamp="$version $arch $(go env GOVERSION)"
  if [ -f "$tools/.stamp-$name" ] && [ "$(cat "$tools/.stamp-$name")" = "$stamp" ] && [ -x "$tools/$name" ]; then
    echo "$name $version up to date in $tools" >&2
    return 0
  fi
  local start gopath; start=$(now)
  echo "building $name $version ($arch)" >&2
  # A cross-compiled `go install` lands in GOPATH/bin/linux_<arch>: a scratch GOPATH, the usual module cache.
  gopath=$(mktemp -d)
  (cd / && env -u GOBIN GOPATH="$gopath" GOMODCACHE="$(go env GOMODCACHE)" GOCACHE="$(go env GOCACHE)" \
    GOWORK=off GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOOS=linux GOARCH="$arch" \
    go install -trimpath -ldflags "$ldflags" "$pkg@$version")
  local built; built=$gopath/bin/$(basename "$pkg")
  [ -f "$built" ] || built=$gopath/bin/linux_$arch/$(basename "$pkg")
  mkdir -p "$tools"
  install -m 755 "$built" "$tools/$name"
  chmod -R u+w "$gopath" && rm -rf "$gopath"
  echo "$stamp" > "$tools/.stamp-$name"
  echo "$name $version built in $(( $(now) - start ))s" >&2
}

setup_tests() {
  if ! command -v qemu-aarch64 >/dev/null; then
    if [ "${KFSCHED_NO_APT:-}" != 1 ] && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
      echo "installing $QEMU_USER_PACKAGE with apt-get" >&2
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$QEMU_USER_PACKAGE" >/dev/null \
        || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$QEMU_USER_PACKAGE" >/dev/null; }
    else
      echo "release.sh: qemu-aarch64 not found: install $QEMU_USER_PACKAGE (or set KFSCHED_QEMU_AARCH64)" >&2
      exit 1
    fi
  fi
  go_tool krew-linux-arm64 "$KREW_VERSION" arm64 sigs.k8s.io/krew/cmd/krew \
    "-s -w -X sigs.k8s.io/krew/internal/version.gitTag=$KREW_VERSION -X sigs.k8s.io/krew/internal/version.gitCommit=$KREW_VERSION"
  go_tool actionlint "$ACTIONLINT_VERSION" "$(go env GOARCH)" github.com/rhysd/actionlint/cmd/actionlint "-s -w"
}

if [ "$setup" = 1 ]; then
  tests=0
  [ ${#targets[@]} -gt 0 ] || { targets=("${CROSS_TARGETS[@]}"); tests=1; }
  [ "${targets[*]}" != "${CROSS_TARGETS[*]}" ] || tests=1
  t0=$(now)
  for t in "${targets[@]}"; do
    ensure_rust_target "$t"
    if uses_zig "$t" || [ "$wheel" = 1 ]; then ensure_zig; fi
  done
  [ "$sdist" = 0 ] || ensure_zig
  [ "$tests" = 0 ] || setup_tests
  echo "release tools ready in $tools ($(( $(now) - t0 ))s)" >&2
  exit 0
fi

# ---- build ----------------------------------------------------------------------------------
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n1)
[ -n "$version" ] || { echo "release.sh: no version in Cargo.toml" >&2; exit 1; }
tag=${tag:-v$version}
mkdir -p "$out"
out=$(cd "$out" && pwd)

stage=
trap '[ -z "$stage" ] || rm -rf "$stage"' EXIT

if [ "$sdist" = 1 ]; then
  ensure_zig
  (cd "$root" && "$zig_venv/bin/maturin" sdist --out "$out")
  [ ${#targets[@]} -gt 0 ] || [ -n "$bin_dir" ] || exit 0
fi

# package TARGET BIN_DIR: the archive and its .sha256 in $out.
package() {
  local target=$1 dir=$2 exe='' b
  case $target in *windows*) exe=.exe ;; esac
  local name=kubectl-kfsched_${tag}_${target} archive
  stage=$(mktemp -d)
  for b in kubectl-kfsched kubectl_complete-kfsched; do
    [ -f "$dir/$b$exe" ] || { echo "release.sh: $dir/$b$exe not found" >&2; exit 1; }
    cp "$dir/$b$exe" "$stage/$b$exe"
    chmod 755 "$stage/$b$exe"
  done
  cp "$root/LICENSE" "$root/README.md" "$stage/"
  # Reproducible archives: fixed order, owner and mtime ($SOURCE_DATE_EPOCH, else the
  # commit's, else the epoch).
  local mtime; mtime=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct 2>/dev/null || echo 0)}
  touch -d "@$mtime" "$stage"/* 2>/dev/null \
    || TZ=UTC touch -t "$(date -u -r "$mtime" +%Y%m%d%H%M.%S)" "$stage"/*   # BSD touch (macOS)
  local files=("kubectl-kfsched$exe" "kubectl_complete-kfsched$exe" LICENSE README.md)
  case $target in
    *windows*)
      archive=$name.zip
      rm -f "$out/$archive"
      # -X: no uid/gid or Unix times, so only the DOS time, taken in UTC.
      (cd "$stage" && TZ=UTC zip -q -X "$out/$archive" "${files[@]}")
      ;;
    *)
      archive=$name.tar.gz
      if tar --version 2>/dev/null | grep -q 'GNU tar'; then
        tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$mtime" \
          -cf - "${files[@]}" | gzip -n -9 > "$out/$archive"
      else  # bsdtar (macOS): the files are listed in order already
        tar -C "$stage" --uid 0 --gid 0 --numeric-owner -cf - "${files[@]}" | gzip -n -9 > "$out/$archive"
      fi
      ;;
  esac
  rm -rf "$stage"; stage=
  echo "$(sha256 "$out/$archive")  $archive" > "$out/$archive.sha256"
  echo "wrote $out/$archive ($(wc -c < "$out/$archive" | tr -d ' ') bytes, sha256 $(cut -d' ' -f1 < "$out/$archive.sha256"))" >&2
}

if [ "$build" = 1 ]; then
  for f in LICENSE README.md; do
    [ -f "$root/$f" ] || { echo "release.sh: $f is missing: the archive must carry it" >&2; exit 1; }
  done
  [ ${#targets[@]} -gt 0 ] || targets=("$(rustc -vV | sed -n 's/^host: //p')")
  if [ -n "$bin_dir" ] && [ ${#targets[@]} -gt 1 ]; then
    echo "release.sh: --bin-dir packages one target" >&2; exit 2
  fi
  if [ "$wheel" = 1 ] && [ -n "$bin_dir" ]; then
    echo "release.sh: --wheel builds the binaries it packs; it does not take --bin-dir" >&2; exit 2
  fi
  for target in "${targets[@]}"; do
    dir=$bin_dir
    if [ -z "$dir" ] && [ "$wheel" = 1 ]; then
      start=$(now)
      ensure_rust_target "$target"
      ensure_zig
      zig=()
      if uses_zig "$target"; then zig=(--zig); fi
      compat=()
      case $target in *-linux-musl*) compat=(--compatibility manylinux2014 --compatibility musllinux_1_2) ;; esac
      echo "building kubectl-kfsched $tag and its wheel for $target (maturin build --profile dist --locked ${zig[*]})" >&2
      # maturin finds zig as `python -m ziglang` of the python on PATH.
      (cd "$root" && PATH="$zig_venv/bin:$PATH" "$zig_venv/bin/maturin" build --profile dist --locked \
        --target "$target" "${zig[@]}" "${compat[@]}" --out "$out" --quiet)
      echo "built $target and its wheel in $(( $(now) - start ))s" >&2
      dir=${CARGO_TARGET_DIR:-$root/target}/$target/dist
    elif [ -z "$dir" ]; then
      start=$(now)
      ensure_rust_target "$target"
      if uses_zig "$target"; then
        ensure_zig
        echo "building kubectl-kfsched $tag for $target (cargo zigbuild --profile dist --locked)" >&2
        (cd "$root" && PATH="$zig_venv/bin:$PATH" CARGO_ZIGBUILD_PYTHON_PATH="$zig_venv/bin/python" \
          cargo zigbuild --profile dist --locked --target "$target" --bins)
      else
        echo "building kubectl-kfsched $tag for $target (cargo build --profile dist --locked)" >&2
        (cd "$root" && cargo build --profile dist --locked --target "$target" --bins)
      fi
      echo "built $target in $(( $(now) - start ))s" >&2
      dir=${CARGO_TARGET_DIR:-$root/target}/$target/dist
    fi
    package "$target" "$dir"
  done
fi
python3 - "$root/krew-manifest.yaml" "$tag" "$out" "$base_url" "$mode" > "$out/plugin.yaml.tmp" <<'PY' || { rm -f "$out/plugin.yaml.tmp"; exit 1; }
import hashlib, os, re, sys

template_path, tag, out, base_url, mode = sys.argv[1:6]
version = re.search(r"\d+(\.\d+)+", tag)
version = version.group(0) if version else tag
ZERO = "\"" + "0" * 64 + "\""  # quoted: digits alone would be a YAML integer

# Rust target triple -> krew os/arch, to match a host build (say, linux-gnu) to the
# template's release archive for that platform (linux-musl).
def platform(triple):
    arch = {"x86_64": "amd64", "aarch64": "arm64", "i686": "386", "armv7": "arm"}.get(triple.split("-")[0])
    os_ = "windows" if "windows" in triple else "darwin" if "darwin" in triple else "linux" if "linux" in triple else None
    return (os_, arch)

ARCHIVE = re.compile(r"^kubectl-kfsched_" + re.escape(tag) + r"_(.+?)\.(tar\.gz|zip)$")
archives = {}
for f in sorted(os.listdir(out)):
    m = ARCHIVE.match(f)
    if m:
        archives.setdefault(platform(m.group(1)), []).append(f)

def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()

def values(s):
    return re.sub(r"\{\{-?\s*\.(TagName|Version)\s*-?\}\}", lambda m: tag if m.group(1) == "TagName" else version, s)

CALL = re.compile(r'\{\{-?\s*addURIAndSha\s+"([^"]*)"\s+\.TagName\s*(?:\|\s*indent\s+(\d+)\s*)?-?\}\}')

def resolve(url):
    """uri and sha256 for the template's URL, or None when there is no archive."""
    name = url.rsplit("/", 1)[-1]
    base = base_url.rstrip("/") if base_url else url.rsplit("/", 1)[0]
    if os.path.exists(os.path.join(out, name)):
        return f"{base}/{name}", sha256(os.path.join(out, name))
    m = ARCHIVE.match(name)
    found = archives.get(platform(m.group(1))) if m else None
    if found:
        return f"{base}/{found[0]}", sha256(os.path.join(out, found[0]))
    return None

def render_call(m):
    url = values(m.group(1))
    got = resolve(url)
    if got is None:
        uri, sha = (base_url.rstrip("/") + "/" + url.rsplit("/", 1)[-1]) if base_url else url, ZERO
    else:
        uri, sha = got
    text = f"uri: {uri}\n    sha256: {sha}"
    if m.group(2) is not None:  # the bot's `indent N`
        pad = " " * int(m.group(2))
        text = (pad + text.replace("    sha256:", "sha256:").replace("\n", "\n" + pad)).strip()
    return text

lines = open(template_path, encoding="utf-8").read().split("\n")
# Split spec.platforms into its list items, to leave out platforms without an archive.
start = next((i for i, l in enumerate(lines) if re.match(r"^\s*platforms:\s*$", l)), None)
if start is None:
    sys.exit("release.sh: krew-manifest.yaml has no platforms list")
item = None
blocks, i = [], start + 1
while i < len(lines):
    l = lines[i]
    ind = len(l) - len(l.lstrip())
    if item is None and l.strip():
        item = ind
    if l.strip() and (ind < item or (ind == item and not l.lstrip().startswith("- "))):
        break
    if l.strip() and ind == item:
        blocks.append([i, i + 1])
    elif blocks:
        blocks[-1][1] = i + 1
    i += 1
end = i
kept, missing = [], []
for b0, b1 in blocks:
    block = "\n".join(lines[b0:b1])
    urls = [values(m.group(1)) for m in CALL.finditer(block)]
    if all(resolve(u) is not None for u in urls):
        kept.append(block)
    elif mode == "placeholder":
        kept.append(block)
    else:
        missing.extend(u.rsplit("/", 1)[-1] for u in urls if resolve(u) is None)
if missing and mode == "all":
    sys.exit("release.sh: --all: no archive in %s for: %s" % (out, ", ".join(missing)))
if not kept:
    sys.exit("release.sh: no archive for any platform of krew-manifest.yaml in %s (build one first)" % out)
text = "\n".join(lines[: start + 1] + kept + lines[end:])
text = CALL.sub(render_call, text)
text = values(text)
if re.search(r"\{\{", text):
    sys.exit("release.sh: krew-manifest.yaml uses template syntax this renderer does not know")
if mode == "local" and missing:
    note = ("# Rendered by scripts/release.sh from krew-manifest.yaml for a local install:\n"
            "# only the platforms with an archive in the output directory.\n")
elif mode == "placeholder":
    note = ("# Rendered by scripts/release.sh --placeholder from krew-manifest.yaml. The release\n"
            "# archives do not exist yet: an all-zero sha256 stands for each one, so krew refuses\n"
            "# to install them. Release CI renders it again (--all) from the real archives.\n")
else:
    note = "# Rendered by scripts/release.sh from krew-manifest.yaml.\n"
sys.stdout.write(note + text)
for name in missing:
    if mode == "local":
        print(f"release.sh: left out of plugin.yaml (no archive here): {name}", file=sys.stderr)
PY
mv "$out/plugin.yaml.tmp" "$out/plugin.yaml"
echo "wrote $out/plugin.yaml" >&2
# Every archive of the tag, for `sha256sum -c --ignore-missing SHA256SUMS`.
sums=$(cd "$out" && for f in kubectl-kfsched_"$tag"_*.tar.gz kubectl-kfsched_"$tag"_*.zip; do
  if [ -f "$f" ]; then echo "$(sha256 "$f")  $f"; fi
done | LC_ALL=C sort -k2)
if [ -n "$sums" ]; then
  echo "$sums" > "$out/SHA256SUMS"
  echo "wrote $out/SHA256SUMS" >&2
fi
