#!/bin/sh
# keepalived's VRRP check in ACTIVE_STANDBY, with the semantics of Octavia's
# haproxy-vrrp-check: exit 0 when every haproxy stats socket named as an
# argument answers "show stat" (within 5 s each), 1 otherwise.
# check_scripts/haproxy_check_script.sh runs it every vrrp_check_interval;
# a shell and one socat per socket cost a few milliseconds of CPU, where a
# Node.js process would cost half a second (bench/vrrp-check).
for sock in "$@"; do
    # -t/-T: haproxy closes the connection after its answer; a hung haproxy
    # (accepting, never answering) fails after 5 s of silence.
    out=$(echo 'show stat -1 -1 -1' | socat -t 5 -T 5 - "UNIX-CONNECT:$sock" 2>/dev/null) || exit 1
    [ -n "$out" ] || exit 1
done
exit 0
