#!/usr/bin/env bash
# Builds the release archive of kubectl-kfsched and renders its krew manifest.
#
#   scripts/release.sh                       # stripped release build (profile dist) for the host, archive, dist/plugin.yaml
#   kubectl krew install --manifest=dist/plugin.yaml --archive=dist/kubectl-kfsched_vX.Y.Z_<target>.tar.gz
#
# The archive (kubectl-kfsched_<tag>_<target>.tar.gz, .zip for Windows targets) holds
# kubectl-kfsched, the kubectl_complete-kfsched companion, LICENSE and README.md at its top
# level; <archive>.sha256 next to it is in `sha256sum` format. The manifest is rendered from
# krew-manifest.yaml (the krew-release-bot template) the way the bot renders it: each
# {{addURIAndSha "URL" .TagName}} becomes `uri:` and `sha256:`, here with the sha256 of the
# archive in the output directory instead of a download. A platform whose archive is not
# there is left out (a local install needs only the host's), unless --all or --placeholder.
#
# Options:
#   --target TRIPLE   cargo target to build [default: the host's]
#   --bin-dir DIR     package the binaries already in DIR instead of building
#   --out DIR         output directory [default: dist]
#   --base-url URL    uri prefix for the archives in the manifest [default: the template's
#                     GitHub release download URL]; e.g. a local HTTP server for validate-krew-manifest
#   --no-build        only render OUT/plugin.yaml from the archives already in OUT
#   --all             every platform of the template must have its archive in OUT (release CI)
#   --placeholder     platforms without an archive get an all-zero sha256 instead of being
#                     left out (how the committed plugin.yaml is made before the archives exist)
#   --tag TAG         [default: v<version in Cargo.toml>]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

target= bin_dir= out=$root/dist base_url= build=1 mode=local tag=
while [ $# -gt 0 ]; do
  case $1 in
    --target) target=$2; shift 2 ;;
    --bin-dir) bin_dir=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --base-url) base_url=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --all) mode=all; shift ;;
    --placeholder) mode=placeholder; shift ;;
    --tag) tag=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "release.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n1)
[ -n "$version" ] || { echo "release.sh: no version in Cargo.toml" >&2; exit 1; }
tag=${tag:-v$version}
mkdir -p "$out"
out=$(cd "$out" && pwd)

sha256() { if command -v sha256sum >/dev/null; then sha256sum "$1" | cut -d' ' -f1; else shasum -a 256 "$1" | cut -d' ' -f1; fi; }

if [ "$build" = 1 ]; then
  for f in LICENSE README.md; do
    [ -f "$root/$f" ] || { echo "release.sh: $f is missing: the archive must carry it" >&2; exit 1; }
  done
  [ -n "$target" ] || target=$(rustc -vV | sed -n 's/^host: //p')
  exe=
  case $target in *windows*) exe=.exe ;; esac
  if [ -z "$bin_dir" ]; then
    echo "building kubectl-kfsched $tag for $target (cargo build --profile dist --locked)" >&2
    (cd "$root" && cargo build --profile dist --locked --target "$target" --bins)
    bin_dir=${CARGO_TARGET_DIR:-$root/target}/$target/dist
  fi
  name=kubectl-kfsched_${tag}_${target}
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' EXIT
  for b in kubectl-kfsched kubectl_complete-kfsched; do
    [ -f "$bin_dir/$b$exe" ] || { echo "release.sh: $bin_dir/$b$exe not found" >&2; exit 1; }
    cp "$bin_dir/$b$exe" "$stage/$b$exe"
    chmod 755 "$stage/$b$exe"
  done
  cp "$root/LICENSE" "$root/README.md" "$stage/"
  # Reproducible archives: fixed order, owner and mtime (the commit's, else the epoch).
  mtime=$(git -C "$root" log -1 --format=%ct 2>/dev/null || echo 0)
  touch -d "@$mtime" "$stage"/* 2>/dev/null \
    || TZ=UTC touch -t "$(date -u -r "$mtime" +%Y%m%d%H%M.%S)" "$stage"/*   # BSD touch (macOS)
  files=(kubectl-kfsched$exe kubectl_complete-kfsched$exe LICENSE README.md)
  case $target in
    *windows*)
      archive=$name.zip
      rm -f "$out/$archive"
      (cd "$stage" && zip -q -X "$out/$archive" "${files[@]}")
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
  echo "$(sha256 "$out/$archive")  $archive" > "$out/$archive.sha256"
  echo "wrote $out/$archive ($(cut -d' ' -f1 < "$out/$archive.sha256"))" >&2
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
