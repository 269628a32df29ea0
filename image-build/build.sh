#!/usr/bin/env bash
# Builds an amphora image from this repository:
#
#   image-build/build.sh [production|reference|ci|vm-test]   (default: production)
#
#   production  amphora-x64-haproxy-trixie.qcow2: bootable (needs loop devices
#               on the build host; device-mapper is used when there is one)
#   reference   amphora-x64-haproxy-trixie-reference.qcow2: the same with
#               Octavia's own agent in place of this one, for comparisons
#   ci          amphora-ci-rootfs-trixie.tar: the root filesystem only
#   vm-test     amphora-vm-test-trixie.tar: production's elements less `vm`
#               (kernel, initramfs, cloud-init, sshd kept; no partitions), for
#               a direct kernel boot in qemu (the VM boot test of issue 14)
#
# Steps: install diskimage-builder when missing (trixie's
# python3-diskimage-builder, from a trixie apt source pinned so that nothing
# else upgrades), compile the agent, make the bundle (compiled JS, templates,
# production node_modules from a staging `npm ci --omit=dev`), then run
# diskimage-builder on diskimage.yaml for the chosen image.
#
# Environment:
#   AMPHORA_IMAGE_OUT    output directory (default: image-build/out)
#   AMPHORA_IMAGE_CACHE  DIB's cache: debootstrap tarball, apt archives
#                        (default: /var/cache/amphora-image-build)
#   AMPHORA_IMAGE_REUSE  1: keep an existing image built from the same inputs
#                        (bundle, elements, diskimage.yaml, DIB version) and
#                        less than a day old instead of building again
#   DIB_*                passed to diskimage-builder (e.g. DIB_DISTRIBUTION_MIRROR)
set -euo pipefail

IMAGE=${1:-production}
case "$IMAGE" in
  production) NAME=amphora-x64-haproxy-trixie; OUTPUT=$NAME.qcow2 ;;
  reference) NAME=amphora-x64-haproxy-trixie-reference; OUTPUT=$NAME.qcow2 ;;
  ci) NAME=amphora-ci-rootfs-trixie; OUTPUT=$NAME.tar ;;
  vm-test) NAME=amphora-vm-test-trixie; OUTPUT=$NAME.tar ;;
  *) echo "usage: $0 [production|reference|ci|vm-test]" >&2; exit 2 ;;
esac

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${AMPHORA_IMAGE_OUT:-$REPO/image-build/out}
CACHE=${AMPHORA_IMAGE_CACHE:-/var/cache/amphora-image-build}
# diskimage-builder exports DIB_PYTHON_EXEC=<its interpreter>; a pyenv or venv
# python first on PATH lacks DIB's modules. Debian's python3 has them.
PYTHON=/usr/bin/python3
log() { echo "build.sh: $*" >&2; }

if [ "$(id -u)" != 0 ]; then
  echo "build.sh: diskimage-builder needs root (chroot, loop devices)" >&2
  exit 1
fi

# What goes when the script ends, however it ends.
CLEANUP=()
trap 'rm -rf "${CLEANUP[@]}"' EXIT

# One build at a time per output directory: test files that run side by side
# may each ask for an image; the second waits and then reuses the first's.
mkdir -p "$OUT"
exec 9>"$OUT/.build.lock"
flock 9

# --- diskimage-builder ------------------------------------------------------
dib_version() { dpkg-query -W -f='${Version}' python3-diskimage-builder 2>/dev/null || true; }
host_packages=(sudo qemu-utils debootstrap kpartx)
need_dib() {
  local v; v=$(dib_version)
  [ -z "$v" ] && return 0
  dpkg --compare-versions "$v" lt 3.28 && return 0
  for p in "${host_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || return 0
  done
  return 1
}
if need_dib; then
  log "installing diskimage-builder from trixie (pinned: nothing else comes from trixie)"
  if [ ! -f /etc/apt/sources.list.d/amphora-image-trixie.sources ]; then
    cat >/etc/apt/sources.list.d/amphora-image-trixie.sources <<'EOF'
# Added by image-build/build.sh: trixie's diskimage-builder for amphora image builds.
# Pinned low in /etc/apt/preferences.d/amphora-image-trixie.
Types: deb
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  fi
  if [ ! -f /etc/apt/preferences.d/amphora-image-trixie ]; then
    cat >/etc/apt/preferences.d/amphora-image-trixie <<'EOF'
# Added by image-build/build.sh: packages come from trixie only when asked for by name.
Package: *
Pin: release n=trixie
Pin-Priority: 100
EOF
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends python3-diskimage-builder/trixie "${host_packages[@]}" >/dev/null
fi
log "diskimage-builder $(dib_version)"

# --- the agent bundle -------------------------------------------------------
cd "$REPO"
BUNDLE=$OUT/amphora-agent-bundle.tgz
# What the bundle is made from: with AMPHORA_IMAGE_REUSE=1 a bundle made from
# the same sources is kept (compiling and the staging npm ci take 10-15 s,
# paid by every test file that asks for an image).
SOURCES=$( { cat package.json package-lock.json tsconfig.json; node --version;
  find agent templates -type f -print0 | sort -z | xargs -0 sha256sum; } | sha256sum | cut -d' ' -f1)
mkdir -p "$OUT" "$CACHE"
if [ "${AMPHORA_IMAGE_REUSE:-0}" = 1 ] && [ -f "$BUNDLE" ] && [ "$(cat "$BUNDLE.sources" 2>/dev/null)" = "$SOURCES" ]; then
  log "keeping bundle $BUNDLE (same sources)"
else
  if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    log "npm ci"
    npm ci --no-audit --no-fund --loglevel=error >&2
  fi
  log "compiling (tsc)"
  npx tsc -p . >&2
  STAGE=$(mktemp -d "$OUT/.bundle.XXXXXX")
  CLEANUP+=("$STAGE")
  mkdir -p "$STAGE/dist"
  cp -r dist/agent "$STAGE/dist/agent"
  find "$STAGE/dist" -name '*.map' -delete
  cp -r templates "$STAGE/templates"
  # Modes from the checkout or an earlier npm link must not change the bundle.
  find "$STAGE/dist" "$STAGE/templates" -type d -exec chmod 0755 {} + -o -type f -exec chmod 0644 {} +
  cp package.json package-lock.json "$STAGE/"
  log "production node_modules (npm ci --omit=dev in a staging directory)"
  (cd "$STAGE" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error) >&2
  rm -f "$STAGE/node_modules/.package-lock.json"
  # Same inputs, same bytes: names sorted, fixed owner and time, no gzip timestamp.
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime='2000-01-01 00:00:00Z' \
    -C "$STAGE" -cf - dist templates package.json package-lock.json node_modules | gzip -n >"$BUNDLE.tmp"
  mv "$BUNDLE.tmp" "$BUNDLE"
  echo "$SOURCES" >"$BUNDLE.sources"
  log "bundle $BUNDLE ($(du -h "$BUNDLE" | cut -f1))"
fi

# --- the image --------------------------------------------------------------
# The image definition: the entries of diskimage.yaml that make up $NAME (an
# entry without imagename belongs to the one before, as diskimage-builder reads it).
DEFINITION=$OUT/$NAME.yaml
"$PYTHON" - "$REPO/diskimage.yaml" "$NAME" >"$DEFINITION" <<'EOF'
import sys, yaml
entries, name = yaml.safe_load(open(sys.argv[1])), sys.argv[2]
current, picked = 'image', []
for entry in entries:
    current = entry.get('imagename', current)
    if current == name:
        picked.append(entry)
if not picked:
    sys.exit(f'diskimage.yaml has no image {name}')
yaml.safe_dump(picked, sys.stdout, sort_keys=False)
EOF

INPUTS=$( { sha256sum "$BUNDLE" | cut -d' ' -f1; cat "$DEFINITION";
  (cd "$REPO/image-build/elements" && find . -type f -print0 | sort -z | xargs -0 sha256sum);
  find "$REPO/image-build/elements" -type f -perm -u+x | sed "s|$REPO/||" | sort; dib_version; } | sha256sum | cut -d' ' -f1)
STAMP=$OUT/$NAME.inputs
if [ "${AMPHORA_IMAGE_REUSE:-0}" = 1 ] && [ -f "$OUT/$OUTPUT" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$INPUTS" ] \
  && [ -n "$(find "$OUT/$OUTPUT" -mmin -1440)" ]; then
  log "reusing $OUT/$OUTPUT (same inputs, built $(date -r "$OUT/$OUTPUT" '+%F %T'))"
  echo "$OUT/$OUTPUT"
  exit 0
fi
rm -f "$STAMP"

# A debootstrap result older than a week is made again (debian-minimal
# dist-upgrades on top of it anyway, so a cached one only saves time).
find "$CACHE" -maxdepth 1 -name 'debootstrap-*.tar.gz' -mtime +7 -delete 2>/dev/null || true

# A bootable image is partitioned: diskimage-builder maps the partitions with
# kpartx (device-mapper) and has no other way. On a host without
# device-mapper, stand-ins that use the kernel's loop partitions instead
# (image-build/no-device-mapper) go where sudo finds them first for this
# build, unless something else already lives there.
if [[ $OUTPUT == *.qcow2 ]] && ! grep -qw device-mapper /proc/misc; then
  for tool in kpartx dmsetup; do
    if [ -e /usr/local/sbin/$tool ] && ! cmp -s "$REPO/image-build/no-device-mapper/$tool" /usr/local/sbin/$tool; then
      log "no device-mapper, and /usr/local/sbin/$tool is not ours: cannot build a partitioned image here"
      exit 1
    fi
    install -m 0755 "$REPO/image-build/no-device-mapper/$tool" /usr/local/sbin/$tool
    CLEANUP+=("/usr/local/sbin/$tool")
  done
  log "no device-mapper: partitions through loop devices (image-build/no-device-mapper)"
fi

export ELEMENTS_PATH=$REPO/image-build/elements${ELEMENTS_PATH:+:$ELEMENTS_PATH}
export DIB_AMPHORA_AGENT_BUNDLE=$BUNDLE
export DIB_IMAGE_CACHE=$CACHE
export DIB_DEBOOTSTRAP_CACHE=1 DIB_DEBIAN_USE_DEBOOTSTRAP_CACHE=1
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
unset PYENV_VERSION VIRTUAL_ENV PYTHONPATH PYTHONHOME

log "diskimage-builder: $NAME (log: $OUT/$NAME.log)"
cd "$OUT"
rm -rf "$OUTPUT" "$NAME.d"
started=$(date +%s)
if ! "$PYTHON" /usr/bin/diskimage-builder --stop-on-failure "$DEFINITION" >"$OUT/$NAME.log" 2>&1; then
  tail -40 "$OUT/$NAME.log" >&2
  log "diskimage-builder failed; full log: $OUT/$NAME.log"
  exit 1
fi
[ -f "$OUTPUT" ] || { log "diskimage-builder did not write $OUTPUT"; exit 1; }
echo "$INPUTS" >"$STAMP"
log "built $OUT/$OUTPUT ($(du -h "$OUTPUT" | cut -f1)) in $(( $(date +%s) - started )) s"
echo "$OUT/$OUTPUT"
