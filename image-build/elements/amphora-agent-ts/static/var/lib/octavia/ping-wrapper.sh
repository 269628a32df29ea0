#!/bin/sh
# haproxy external-check for PING health monitors (Octavia renders
# "external-check command <base_path>/ping-wrapper.sh"). haproxy passes
# <proxy address> <proxy port> <server address> <server port>; one echo
# request to the server address, and its exit status is the verdict.
addr=${3:-${HAPROXY_SERVER_ADDR:-}}
[ -n "$addr" ] || exit 1
case "$addr" in
    *:*) exec /bin/ping -6 -q -n -c 1 -w 1 "$addr" >/dev/null 2>&1 ;;
    *) exec /bin/ping -4 -q -n -c 1 -w 1 "$addr" >/dev/null 2>&1 ;;
esac
