#!/usr/bin/env bash
# Octavia in a box: the control plane's root filesystem, built and cached
# like test/rig/prepare.sh builds the release matrix's (debootstrap minbase,
# nothing starts while packages install, rebuilt only when the recipe
# changes), then mounted for use (/proc, /dev, the test root).
#
#   test/octavia-box/prepare-box.sh SUITE     (sid: Octavia 19; trixie: Octavia 16)
#
# Prints the root filesystem's path on stdout. Idempotent: a second run with
# the same recipe only checks the mounts. Takes about 3 minutes to build on
# 2 cores (mostly dpkg), under a second once cached.
set -euo pipefail

SUITE=${1:?usage: prepare-box.sh SUITE (sid, trixie)}
CACHE=${AMPHORA_TEST_CACHE:-/var/cache/amphora-agent-tests}
TEST_ROOT=${AMPHORA_TEST_ROOT:-/var/tmp/aat}
MIRROR=http://deb.debian.org/debian
NAME=octavia-$SUITE
DIR=$CACHE/rootfs/$NAME
# Octavia's four services as Debian packages them (their Python is
# python3-octavia), the database and message bus they need, uwsgi the way
# Debian's octavia-api init script runs the API, openssl for the
# certificates, and the SDK the scenarios drive the API with.
PACKAGES=(octavia-api octavia-worker octavia-health-manager octavia-housekeeping python3-octavia
  mariadb-server rabbitmq-server python3-pymysql python3-openstacksdk
  uwsgi-core uwsgi-plugin-python3 openssl iproute2 procps)
# Bump the number to force a rebuild when something outside this list changes.
RECIPE="$SUITE|1|${PACKAGES[*]}"

if [ "$(id -u)" != 0 ]; then
  echo "prepare-box.sh: needs root (debootstrap, chroot, mounts)" >&2
  exit 1
fi
case $SUITE in sid | trixie) ;; *) echo "prepare-box.sh: unknown suite $SUITE (sid, trixie)" >&2; exit 1 ;; esac

# The same helpers as prepare.sh: mounts in the root filesystem are slaves of
# the host's, so an unmount there never propagates back.
unmount_all() {
  awk -v r="$1" '$2 == r || index($2, r "/") == 1 {print $2}' /proc/self/mounts | sort -r |
    while read -r m; do umount -l "$m" 2>/dev/null || true; done
}
bind_slave() { # SOURCE TARGET
  mkdir -p "$2"
  if mountpoint -q "$2"; then
    [ "$(stat -c %d:%i "$1")" = "$(stat -c %d:%i "$2")" ] && return 0
    umount -l "$2"
  fi
  mount --rbind "$1" "$2"
  mount --make-rslave "$2"
}

build() {
  local log=$CACHE/rootfs/$NAME.log started=$SECONDS
  echo "prepare-box.sh: building $DIR" >&2
  unmount_all "$DIR"; unmount_all "$DIR.tmp"
  rm -rf --one-file-system "$DIR" "$DIR.tmp"
  debootstrap --variant=minbase "$SUITE" "$DIR.tmp" "$MIRROR" >"$log" 2>&1 || { tail -20 "$log" >&2; return 1; }
  echo 'Acquire::Check-Valid-Until "false";' >"$DIR.tmp/etc/apt/apt.conf.d/99no-valid-until"
  echo "deb $MIRROR $SUITE main" >"$DIR.tmp/etc/apt/sources.list"
  printf '#!/bin/sh\nexit 101\n' >"$DIR.tmp/usr/sbin/policy-rc.d"; chmod 755 "$DIR.tmp/usr/sbin/policy-rc.d"
  # RabbitMQ's node is rabbit@localhost: the name must resolve inside any
  # network namespace, without DNS.
  printf '127.0.0.1 localhost\n::1 localhost ip6-localhost\n' >"$DIR.tmp/etc/hosts"
  mount -t proc proc "$DIR.tmp/proc"
  local rc=0
  # octavia-common's debconf questions (database, RabbitMQ, Keystone) all
  # default to "no": noninteractive leaves /etc/octavia alone.
  chroot "$DIR.tmp" sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    ${PACKAGES[*]} && apt-get clean" >>"$log" 2>&1 || rc=$?
  umount "$DIR.tmp/proc"
  [ $rc = 0 ] || { tail -20 "$log" >&2; return 1; }
  echo "$RECIPE" >"$DIR.tmp/.recipe"
  mv "$DIR.tmp" "$DIR"
  echo "prepare-box.sh: built $NAME in $((SECONDS - started)) s" >&2
}

mkdir -p "$CACHE/rootfs" "$TEST_ROOT"
if ! [ -f "$DIR/.recipe" ] || [ "$(cat "$DIR/.recipe")" != "$RECIPE" ]; then
  # One build at a time per root filesystem (two test files may ask at once).
  exec 9>"$CACHE/rootfs/$NAME.lock"
  flock 9
  if ! [ -f "$DIR/.recipe" ] || [ "$(cat "$DIR/.recipe")" != "$RECIPE" ]; then build; fi
fi

# The state directories (MariaDB's datadir, RabbitMQ's mnesia, logs) live
# under the test root, at the same path inside and outside.
bind_slave "$TEST_ROOT" "$DIR$TEST_ROOT"
bind_slave /dev "$DIR/dev"
mountpoint -q "$DIR/proc" || mount -t proc proc "$DIR/proc"
echo "$DIR"
