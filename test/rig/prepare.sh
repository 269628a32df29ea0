#!/usr/bin/env bash
# Prepares this machine for the test suite, idempotently: the Debian packages
# the tests drive for real (bookworm: haproxy 2.6, keepalived 2.2, Octavia 11),
# and cached Debian root filesystems for the rest of the release matrix, run
# through chroot (they share the network namespace):
#   trixie        haproxy 3.0 (the amphora image's), keepalived 2.3, Octavia 16
#   sid           haproxy 3.2, Octavia 19
#   experimental  haproxy 3.4
# trixie and sid also hold Octavia's control plane for Octavia in a box
# (docs/octavia-box.md): its services, the database and message bus they
# need, uwsgi as Debian's octavia-api runs it, and the SDK.
# Each root filesystem is rebuilt only when its recipe (suite, packages) changes.
set -euo pipefail

CACHE=${AMPHORA_TEST_CACHE:-/var/cache/amphora-agent-tests}
# Short: unix socket paths under it (haproxy master CLI) must stay within 97 characters.
TEST_ROOT=${AMPHORA_TEST_ROOT:-/var/tmp/aat}
MIRROR=http://deb.debian.org/debian
PACKAGES=(haproxy keepalived socat iproute2 nftables python3-octavia debootstrap ipvsadm openssl curl iputils-ping iputils-arping ndisc6
  # the VM boot test (test/vm): qemu, its disk and config drive, ssh into the guest
  qemu-system-x86 qemu-utils genisoimage e2fsprogs openssh-client
  # ACTIVE_STANDBY under systemd (interop/active-standby-systemd): the image booted by systemd-nspawn
  systemd-container)
CONTROL_PLANE="octavia-api octavia-worker octavia-health-manager octavia-housekeeping mariadb-server rabbitmq-server"
CONTROL_PLANE+=" python3-pymysql python3-openstacksdk uwsgi-core uwsgi-plugin-python3 openssl procps"
# suite for debootstrap | apt target release | packages
declare -A RECIPES=(
  [trixie]="trixie||haproxy keepalived iproute2 python3-octavia $CONTROL_PLANE"
  [sid]="sid||haproxy keepalived iproute2 python3-octavia $CONTROL_PLANE"
  [experimental]="sid|experimental|haproxy"
)

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
# What an interrupted earlier run left, unless another test or bench run (of
# any checkout) is alive: its namespaces, veths and containers look the same,
# and removing them would fail it. (This script runs before its own runner.)
leftovers() {
  # Namespaces and veths left by an interrupted earlier run.
  for ns in $(ip netns list 2>/dev/null | awk '/^aat-/{print $1}'); do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
  for link in $(ip -o link show 2>/dev/null | awk -F': ' '/aath/{print $2}' | cut -d@ -f1); do
    ip link del "$link" 2>/dev/null || true
  done

  # Image containers left by an interrupted run (test/helpers/amphora-container.ts):
  # their systemd (PID 1 of each) killed, their overlays and cgroups removed.
  for pid in $(pgrep -f '^systemd-nspawn -D /var/tmp/aat-ns-' 2>/dev/null); do
    read -r -a children <"/proc/$pid/task/$pid/children" || true
    for child in "${children[@]}"; do kill -9 "$child" 2>/dev/null || true; done
  done
  for dir in /var/tmp/aat-ns-*; do
    [ -d "$dir" ] || continue
    awk -v r="$dir" 'index($2, r "/") == 1 {print $2}' /proc/self/mounts | sort -r | while read -r m; do umount -l "$m" || true; done
    rm -rf --one-file-system "$dir"
  done
  for cg in /sys/fs/cgroup/aat-nspawn-* /sys/fs/cgroup/unified/aat-nspawn-* /sys/fs/cgroup/systemd/aat-nspawn-*; do
    if [ -d "$cg" ]; then find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true; fi
  done
}
if pgrep -f 'dist/(test|bench)/[^ ]*[.]js' >/dev/null; then
  echo "prepare: another test or bench run is alive; leftovers of interrupted runs are kept" >&2
else
  leftovers
fi

# The packaged haproxy service must not hold ports the tests use.
pkill -f '^/usr/sbin/haproxy -Ws -f /etc/haproxy' 2>/dev/null || true

# Mounts inside a root filesystem are slaves of the host's: an unmount there
# (or by a later cleanup) must never propagate back and remove the host's
# network namespaces.
unmount_all() {
  awk -v r="$1" '$2 == r || index($2, r "/") == 1 {print $2}' /proc/self/mounts | sort -r |
    while read -r m; do umount -l "$m" 2>/dev/null || true; done
}
bind_slave() { # SOURCE TARGET
  mkdir -p "$2"
  # A mount left from a source that was since removed and made again shows an empty directory.
  if mountpoint -q "$2"; then
    [ "$(stat -c %d:%i "$1")" = "$(stat -c %d:%i "$2")" ] && return 0
    umount -l "$2"
  fi
  mount --rbind "$1" "$2"
  mount --make-rslave "$2"
}

build_rootfs() { # NAME
  local name=$1 dir=$CACHE/rootfs/$1 recipe=${RECIPES[$1]}
  local suite=${recipe%%|*} rest=${recipe#*|}
  local target=${rest%%|*} packages=${rest#*|}
  local log=$CACHE/rootfs/$name.log
  if [ -f "$dir/.recipe" ] && [ "$(cat "$dir/.recipe")" = "$recipe" ]; then return 0; fi
  echo "prepare.sh: building the $name root filesystem ($packages)"
  unmount_all "$dir"; unmount_all "$dir.tmp"
  rm -rf "$dir" "$dir.tmp"
  debootstrap --variant=minbase "$suite" "$dir.tmp" "$MIRROR" >"$log" 2>&1 || { tail -20 "$log" >&2; return 1; }
  # sid's Release file is past its Valid-Until date on some mirrors.
  echo 'Acquire::Check-Valid-Until "false";' >"$dir.tmp/etc/apt/apt.conf.d/99no-valid-until"
  local sources="deb $MIRROR $suite main"
  [ -n "$target" ] && sources+=$'\n'"deb $MIRROR $target main"
  echo "$sources" >"$dir.tmp/etc/apt/sources.list"
  # Nothing starts while packages install; python3-octavia does not configure
  # inside debootstrap, so it is installed here, in the finished minbase root.
  printf '#!/bin/sh\nexit 101\n' >"$dir.tmp/usr/sbin/policy-rc.d"; chmod 755 "$dir.tmp/usr/sbin/policy-rc.d"
  # RabbitMQ's node is rabbit@localhost: the name must resolve inside any
  # network namespace, without DNS.
  printf '127.0.0.1 localhost\n::1 localhost ip6-localhost\n' >"$dir.tmp/etc/hosts"
  # octavia-common's debconf questions (database, RabbitMQ, Keystone) all
  # default to "no": noninteractive leaves /etc/octavia alone.
  mount -t proc proc "$dir.tmp/proc"
  local rc=0
  chroot "$dir.tmp" sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    ${target:+-t $target} $packages && apt-get clean" >>"$log" 2>&1 || rc=$?
  umount "$dir.tmp/proc"
  [ $rc = 0 ] || { tail -20 "$log" >&2; return 1; }
  echo "$recipe" >"$dir.tmp/.recipe"
  mv "$dir.tmp" "$dir"
}

mkdir -p "$CACHE/rootfs" "$CACHE/bin"
# Root filesystems of earlier layouts: sid's of this script, and Octavia in
# a box's own (now in trixie's and sid's).
for old in "$CACHE/sid-rootfs" "$CACHE/rootfs/octavia-sid" "$CACHE/rootfs/octavia-trixie"; do
  if [ -d "$old" ]; then unmount_all "$old"; rm -rf --one-file-system "$old"; fi
done
rm -f "$CACHE/rootfs/octavia-sid.log" "$CACHE/rootfs/octavia-sid.lock" "$CACHE/rootfs/octavia-trixie.log" "$CACHE/rootfs/octavia-trixie.lock"
# Built side by side: downloads and dpkg runs overlap (about 2 minutes in all).
pids=()
for name in "${!RECIPES[@]}"; do build_rootfs "$name" & pids+=($!); done
failed=0
for p in "${pids[@]}"; do wait "$p" || failed=1; done
[ $failed = 0 ] || { echo "prepare.sh: a root filesystem failed to build" >&2; exit 1; }

mkdir -p "$TEST_ROOT"
for name in "${!RECIPES[@]}"; do
  root=$CACHE/rootfs/$name
  # The agent passes absolute paths under the test root to haproxy; inside the
  # chroot they must name the same files. (The tests hand Octavia's Python
  # their scripts as text, so the checkout itself need not be visible there.)
  bind_slave "$TEST_ROOT" "$root$TEST_ROOT"
  bind_slave /dev "$root/dev"
  mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
  cat >"$CACHE/bin/haproxy-$name" <<WRAPPER
#!/bin/sh
# haproxy from Debian $name, run inside its cached root filesystem.
exec chroot $root /usr/sbin/haproxy "\$@"
WRAPPER
  chmod 755 "$CACHE/bin/haproxy-$name"
  if [ -x "$root/usr/sbin/keepalived" ]; then
    # keepalived enters the network namespaces named in its config through
    # /run/netns: its own mount namespace (a slave: nothing goes back) sees
    # the caller's /run/netns inside the root filesystem.
    cat >"$CACHE/bin/keepalived-$name" <<WRAPPER
#!/bin/sh
# keepalived from Debian $name, run inside its cached root filesystem.
exec unshare --mount --propagation slave sh -c 'mkdir -p /run/netns $root/run/netns && mount --rbind /run/netns $root/run/netns && exec chroot $root /usr/sbin/keepalived "\$@"' keepalived "\$@"
WRAPPER
    chmod 755 "$CACHE/bin/keepalived-$name"
  fi
  if [ -x "$root/usr/bin/python3" ] && [ -d "$root/usr/lib/python3/dist-packages/octavia" ]; then
    cat >"$CACHE/bin/python3-$name" <<WRAPPER
#!/bin/sh
# python3 with Debian $name's python3-octavia, inside its cached root filesystem.
exec chroot $root /usr/bin/python3 "\$@"
WRAPPER
    chmod 755 "$CACHE/bin/python3-$name"
  fi
done

version() { "$@" 2>&1 | head -1 | grep -oE '[0-9]+\.[0-9]+\.[0-9]+' | head -1; }
octavia() { "$1" -c 'import importlib.metadata as m; print(m.version("octavia"))' 2>/dev/null; }
echo "prepare.sh: haproxy $(version haproxy -v) / $(version "$CACHE/bin/haproxy-trixie" -v) / $(version "$CACHE/bin/haproxy-sid" -v) / $(version "$CACHE/bin/haproxy-experimental" -v);" \
  "keepalived $(version keepalived -v) / $(version "$CACHE/bin/keepalived-trixie" -v);" \
  "Octavia $(octavia /usr/bin/python3) / $(octavia "$CACHE/bin/python3-trixie") / $(octavia "$CACHE/bin/python3-sid"); test root $TEST_ROOT"
