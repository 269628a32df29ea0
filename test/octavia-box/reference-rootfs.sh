#!/usr/bin/env bash
# The reference amphora's root filesystem for Octavia in a box: the CI image's
# root filesystem (same trixie base, same haproxy, same keepalived) with
# Debian trixie's octavia-agent package, Octavia's own Python agent, in place
# of this project's agent.
#
#   test/octavia-box/reference-rootfs.sh CI_IMAGE_TAR
#
# Prints the path of the result, a tar like the CI image's, on stdout. Cached
# under $AMPHORA_TEST_CACHE/reference-rootfs/ by the hashes of the CI tar and
# of this script and the swap; a build takes a minute or two (apt-get from Debian's archive).
#
# The swap itself is the amphora-agent-reference element's script
# (image-build/elements/amphora-agent-reference/post-install.d/), which says
# what changes and why; here it runs in the CI root filesystem's chroot, as
# DIB runs it when it builds the reference image.
set -euo pipefail

CI_TAR=${1:?usage: reference-rootfs.sh CI_IMAGE_TAR}
CACHE=${AMPHORA_TEST_CACHE:-/var/cache/amphora-agent-tests}/reference-rootfs
SELF=$(readlink -f "${BASH_SOURCE[0]}")
SWAP=$(dirname "$SELF")/../../image-build/elements/amphora-agent-reference/post-install.d/80-amphora-agent-reference
log() { echo "reference-rootfs.sh: $*" >&2; }

if [ "$(id -u)" != 0 ]; then
  log "needs root (chroot, mounts)"
  exit 1
fi
[ -f "$CI_TAR" ] || { log "no such file: $CI_TAR"; exit 1; }

mkdir -p "$CACHE"
KEY=$( { sha256sum "$CI_TAR" | cut -d' ' -f1; sha256sum "$SELF" "$SWAP" | cut -d' ' -f1; } | sha256sum | cut -c1-16)
OUT=$CACHE/octavia-agent-trixie-$KEY.tar
exec 9>"$CACHE/.lock"
flock 9
if [ -f "$OUT" ]; then
  log "reusing $OUT"
  echo "$OUT"
  exit 0
fi

started=$SECONDS
WORK=$(mktemp -d /var/tmp/aatb-refroot.XXXXXX)
ROOT=$WORK/root
unmount_all() {
  awk -v r="$1" '$2 == r || index($2, r "/") == 1 {print $2}' /proc/self/mounts | sort -r |
    while read -r m; do umount -l "$m" 2>/dev/null || true; done
}
cleanup() {
  unmount_all "$ROOT"
  rm -rf --one-file-system "$WORK"
}
trap cleanup EXIT
mkdir -p "$ROOT"
tar -xf "$CI_TAR" -C "$ROOT" --numeric-owner

# Mounts as slaves of the host's: an unmount inside never propagates back.
mkdir -p "$ROOT/proc" "$ROOT/dev" "$ROOT/sys"
mount -t proc proc "$ROOT/proc"
for d in dev sys; do
  mount --rbind "/$d" "$ROOT/$d"
  mount --make-rslave "$ROOT/$d"
done
cp -a "$ROOT/etc/resolv.conf" "$WORK/resolv.conf"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
printf '#!/bin/sh\nexit 101\n' >"$ROOT/usr/sbin/policy-rc.d"
chmod 0755 "$ROOT/usr/sbin/policy-rc.d"

in_root() { chroot "$ROOT" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"; }
log "octavia-agent in place of this agent (amphora-agent-reference)"
# As a file in the root, stdin from /dev/null: maintainer scripts read stdin.
install -m 0755 "$SWAP" "$ROOT/tmp/amphora-agent-reference"
in_root /tmp/amphora-agent-reference </dev/null >"$WORK/swap.log" 2>&1 || { tail -30 "$WORK/swap.log" >&2; exit 1; }
rm -f "$ROOT/tmp/amphora-agent-reference"
tail -1 "$WORK/swap.log" >&2

rm -rf "$ROOT"/var/lib/apt/lists/* "$ROOT/usr/sbin/policy-rc.d"
cp -a "$WORK/resolv.conf" "$ROOT/etc/resolv.conf"
unmount_all "$ROOT"

tar --numeric-owner -cf "$OUT.tmp" -C "$ROOT" .
mv "$OUT.tmp" "$OUT"
# Older results of other CI images or versions of this script: only the newest is kept.
find "$CACHE" -maxdepth 1 -name 'octavia-agent-trixie-*.tar' ! -path "$OUT" -delete
log "built $OUT in $((SECONDS - started)) s"
echo "$OUT"
