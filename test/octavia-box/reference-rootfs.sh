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
# of this script; a build takes a minute or two (apt-get from Debian's archive).
#
# What changes, and why:
# - octavia-agent installed with --no-install-recommends, nothing started
#   (policy-rc.d); haproxy and keepalived must stay the CI image's versions.
# - This project's agent off: amphora-agent.service disabled, and the
#   /usr/local/bin/amphora-agent and amphora-interface wrappers removed (they
#   come before Debian's /usr/bin ones on PATH, and the Python agent runs
#   `amphora-interface up` by name when it plugs a NIC).
# - This project's amphora-netns.service removed: Octavia's agent writes its
#   own amphora-netns.service from its template when none exists (as it does
#   on an image from Octavia's elements) and requires it from each haproxy
#   unit.
# - octavia-agent.service enabled (Debian runs /usr/bin/amphora-agent, gunicorn
#   inside, through its init script's systemd-start), by a preset too, since
#   the image's first boot runs `systemctl preset-all`.
# - Masked: octavia-agent-certs-ramfs.service (LUKS on a brd ramdisk: a
#   container has no block devices) and octavia-agent-netns.service (waits up
#   to 5 minutes for /var/lib/octavia/plugged_interfaces on a fresh amphora,
#   keeping the boot unfinished; amphora-netns.service does its work).
# - Every other unit the install enabled (cron, atd, haveged, pollinate,
#   apparmor, lvm2's...: dependencies of the package, no part of the agent)
#   disabled, so the container boots like the CI image does.
set -euo pipefail

CI_TAR=${1:?usage: reference-rootfs.sh CI_IMAGE_TAR}
CACHE=${AMPHORA_TEST_CACHE:-/var/cache/amphora-agent-tests}/reference-rootfs
SELF=$(readlink -f "${BASH_SOURCE[0]}")
log() { echo "reference-rootfs.sh: $*" >&2; }

if [ "$(id -u)" != 0 ]; then
  log "needs root (chroot, mounts)"
  exit 1
fi
[ -f "$CI_TAR" ] || { log "no such file: $CI_TAR"; exit 1; }

mkdir -p "$CACHE"
KEY=$( { sha256sum "$CI_TAR" | cut -d' ' -f1; sha256sum "$SELF" | cut -d' ' -f1; } | sha256sum | cut -c1-16)
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

# dpkg-query's format fields are for dpkg, not the shell.
# shellcheck disable=SC2016
DPKG_FORMAT='${Package} ${Version}\n'
in_root() { chroot "$ROOT" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }
versions() { in_root dpkg-query -W -f="$DPKG_FORMAT" haproxy keepalived; }
enabled() { in_root systemctl list-unit-files --state=enabled --no-legend --plain | awk '{print $1}' | sort; }

before_versions=$(versions)
before_units=$(enabled)
log "apt-get install octavia-agent (trixie)"
in_root apt-get update -qq >&2
in_root apt-get install -y -qq --no-install-recommends octavia-agent >"$WORK/apt.log" 2>&1 || { tail -30 "$WORK/apt.log" >&2; exit 1; }
if [ "$(versions)" != "$before_versions" ]; then
  log "haproxy or keepalived changed: $(versions | tr '\n' ' ') (was $(echo "$before_versions" | tr '\n' ' '))"
  exit 1
fi
added=$(comm -13 <(echo "$before_units") <(enabled) | grep -vx 'octavia-agent.service' || true)

in_root systemctl disable amphora-agent.service amphora-netns.service >&2
rm -f "$ROOT/usr/lib/systemd/system/amphora-netns.service" "$ROOT/usr/local/bin/amphora-agent" "$ROOT/usr/local/bin/amphora-interface"
# shellcheck disable=SC2086 # one unit name a word
[ -z "$added" ] || in_root systemctl disable $added >&2
in_root systemctl mask octavia-agent-certs-ramfs.service octavia-agent-netns.service >&2
in_root systemctl enable octavia-agent.service >&2
{
  echo "# The reference amphora (test/octavia-box/reference-rootfs.sh): Octavia's"
  echo "# own agent instead of this project's; the package's other services off."
  echo "enable octavia-agent.service"
  echo "disable amphora-agent.service"
  for u in $added; do echo "disable $u"; done
} >"$ROOT/usr/lib/systemd/system-preset/05-octavia-agent-reference.preset"

in_root apt-get clean
rm -rf "$ROOT"/var/lib/apt/lists/* "$ROOT/usr/sbin/policy-rc.d"
cp -a "$WORK/resolv.conf" "$ROOT/etc/resolv.conf"
unmount_all "$ROOT"
log "installed: $(in_root dpkg-query -W -f="$DPKG_FORMAT" octavia-agent python3-octavia | tr '\n' ' ')" || true
log "units disabled besides this agent's: ${added//$'\n'/ }"

tar --numeric-owner -cf "$OUT.tmp" -C "$ROOT" .
mv "$OUT.tmp" "$OUT"
# Older results of other CI images or versions of this script: only the newest is kept.
find "$CACHE" -maxdepth 1 -name 'octavia-agent-trixie-*.tar' ! -path "$OUT" -delete
log "built $OUT in $((SECONDS - started)) s"
echo "$OUT"
