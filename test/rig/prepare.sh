#!/usr/bin/env bash
# Prepares this machine for the test suite, idempotently: Debian packages the
# tests drive for real, and a cached Debian sid root filesystem that holds the
# newest haproxy (run through chroot; it shares the network namespace).
set -euo pipefail

CACHE=${AMPHORA_TEST_CACHE:-/var/cache/amphora-agent-tests}
ROOTFS=$CACHE/sid-rootfs
# Short: unix socket paths under it (haproxy master CLI) must stay within 97 characters.
TEST_ROOT=${AMPHORA_TEST_ROOT:-/var/tmp/aat}
PACKAGES=(haproxy keepalived socat iproute2 nftables python3-octavia debootstrap ipvsadm openssl curl iputils-ping iputils-arping ndisc6)

if [ "$(id -u)" != 0 ]; then
  echo "prepare.sh: the tests need root (network namespaces, haproxy, chroot)" >&2
  exit 1
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "prepare.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Namespaces and veths left by an interrupted earlier run.
for ns in $(ip netns list 2>/dev/null | awk '/^aat-/{print $1}'); do
  for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
  ip netns del "$ns" 2>/dev/null || true
done
for link in $(ip -o link show 2>/dev/null | awk -F': ' '/aath/{print $2}' | cut -d@ -f1); do
  ip link del "$link" 2>/dev/null || true
done

# The packaged haproxy service must not hold ports the tests use.
pkill -f '^/usr/sbin/haproxy -Ws -f /etc/haproxy' 2>/dev/null || true

if [ ! -x "$ROOTFS/usr/sbin/haproxy" ]; then
  echo "prepare.sh: building the sid root filesystem with the newest haproxy (about 30 s)"
  rm -rf "$ROOTFS.tmp"
  mkdir -p "$CACHE"
  debootstrap --variant=minbase --include=haproxy sid "$ROOTFS.tmp" http://deb.debian.org/debian >"$CACHE/debootstrap.log" 2>&1 \
    || { tail -20 "$CACHE/debootstrap.log" >&2; exit 1; }
  mv "$ROOTFS.tmp" "$ROOTFS"
fi

# The agent passes absolute paths under the test root to haproxy; inside the
# chroot they must name the same files, so the test root is bind-mounted there.
mkdir -p "$TEST_ROOT" "$ROOTFS$TEST_ROOT"
mountpoint -q "$ROOTFS$TEST_ROOT" || mount --bind "$TEST_ROOT" "$ROOTFS$TEST_ROOT"

mkdir -p "$CACHE/bin"
cat >"$CACHE/bin/haproxy-sid" <<WRAPPER
#!/bin/sh
# haproxy from Debian sid, run inside its cached root filesystem.
exec chroot $ROOTFS /usr/sbin/haproxy "\$@"
WRAPPER
chmod 755 "$CACHE/bin/haproxy-sid"

echo "prepare.sh: haproxy $(haproxy -v | head -1 | awk '{print $3}') and $("$CACHE/bin/haproxy-sid" -v | head -1 | awk '{print $3}') ready; test root $TEST_ROOT"
