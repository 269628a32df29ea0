#!/usr/bin/env bash
# The driver's tests with Octavia's real code: Octavia 19 (Debian sid) and
# 16 (trixie), each in the release matrix's cached root filesystem
# (test/rig/prepare.sh builds them; the python3-<suite> wrappers chroot
# into them). The package, its tests and the agent's OpenAPI document are
# copied under the root's /tmp for the run and removed after it.
#
# Then the agent judges every spec the tests built: `amphora-agent render`
# validates a spec as a PUT does (the schema, the references between
# objects, the per-object rules) and renders it.
#
#   sudo octavia-driver/run-tests.sh            # sid and trixie
#   sudo octavia-driver/run-tests.sh trixie     # one of them
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
cache=${AMPHORA_TEST_CACHE:-/var/cache/amphora-agent-tests}
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(sid trixie)

if [ "$(id -u)" -ne 0 ]; then
  echo "run-tests.sh: needs root (the Octavia releases run in chroots)" >&2
  exit 1
fi

work_dirs=()
trap 'rm -rf -- "${work_dirs[@]}"' EXIT

# The test suite has built dist/ already (and its running files use it).
[ -n "${AMPHORA_AGENT_BUILT:-}" ] || (cd "$repo" && npm run --silent build)
agent=("node" "$repo/dist/agent/main.js")

summary=()
failed=0
for suite in "${suites[@]}"; do
  case $suite in
    sid) octavia=19 ;;
    trixie) octavia=16 ;;
    *) echo "run-tests.sh: unknown suite '$suite' (sid, trixie)" >&2; exit 2 ;;
  esac
  root=$cache/rootfs/$suite
  python=$cache/bin/python3-$suite
  if [ ! -x "$python" ] || [ ! -d "$root/tmp" ]; then
    echo "run-tests.sh: no $suite root filesystem: run test/rig/prepare.sh" >&2
    exit 1
  fi
  work=$(mktemp -d "$root/tmp/amphora-spec-driver.XXXXXX")
  work_dirs+=("$work")
  mkdir -p "$work/octavia-driver" "$work/docs" "$work/specs"
  cp -r "$here/amphora_spec_driver" "$here/tests" "$here/pyproject.toml" \
    "$here/README.md" "$work/octavia-driver/"
  cp "$repo/docs/openapi-2.0.json" "$work/docs/"
  inside=${work#"$root"}

  echo "== Octavia $octavia ($suite)"
  log=$work/unittest.log
  # Octavia's stack warns about eventlet (oslo.service) and urllib3's
  # ssl_version (Octavia 16's client): not this package's to fix.
  status=0
  AMPHORA_SPEC_OUT=$inside/specs PYTHONDONTWRITEBYTECODE=1 \
    "$python" -W ignore::DeprecationWarning \
    -W ignore:::oslo_service.backend._eventlet.loopingcall \
    -m unittest discover \
    -s "$inside/octavia-driver/tests" -t "$inside/octavia-driver" \
    >"$log" 2>&1 || status=$?
  cat "$log"
  ran=$(sed -n 's/^Ran \([0-9]*\) tests* in .*/\1/p' "$log")
  verdict=$(tail -n 1 "$log")

  specs=0
  refused=0
  for spec in "$work"/specs/*.json; do
    [ -e "$spec" ] || continue
    specs=$((specs + 1))
    if ! "${agent[@]}" render "$spec" --haproxy-version 3.0 >/dev/null; then
      echo "the agent refuses the spec $(basename "$spec")" >&2
      refused=$((refused + 1))
    fi
  done
  if [ "$status" -ne 0 ] || [ "$refused" -ne 0 ] || [ "$specs" -eq 0 ]; then
    failed=1
  fi
  line="Octavia $octavia ($suite): ${ran:-0} tests, $verdict;"
  summary+=("$line the agent renders $((specs - refused)) of $specs specs")
done

echo
printf '%s\n' "${summary[@]}"
exit "$failed"
