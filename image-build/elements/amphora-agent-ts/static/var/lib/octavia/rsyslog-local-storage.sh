#!/bin/sh
# Run by rsyslog.service before every start (rsyslog.service.d/60-octavia.conf).
#
# With admin log targets set and disable_local_log_storage on, Octavia 19's
# controller renders the last line of /etc/rsyslog.d/10-rsyslog.conf as
# "local1.* call admin_forwarding*.* stop": its template strips the newline
# before "*.* stop". rsyslog then never stops, and Debian's own rules keep
# every log line, tenant flows included, on the amphora's disk. The file is
# the controller's (it comes from the config drive) and stays as it is; the
# stop it meant goes in a file of its own read right after it. For configs
# that render the stop apart (Octavia 11, 16) the file is removed.
conf=/etc/rsyslog.d/10-rsyslog.conf
stop=/etc/rsyslog.d/11-octavia-local-storage-off.conf
if [ -f "$conf" ] && grep -Eq '^local[0-7]\.\* call admin_forwarding\*\.\* stop$' "$conf"; then
  printf '%s\n' '# disable_local_log_storage, as 10-rsyslog.conf meant it (see /var/lib/octavia/rsyslog-local-storage.sh)' '*.* stop' > "$stop"
else
  rm -f "$stop"
fi
