#!/usr/bin/env bash
# Runs `swift test ARGS...` with a time budget, for CI: a run that hangs is stopped with the
# names of the tests still running and the stacks of the test process, instead of CI's own
# limit ending everything with nothing to go on.
#
#   scripts/test-watchdog.sh SECONDS [swift test arguments...]
#
# Exits with swift test's status, or 124 when the budget ran out.
set -uo pipefail
cd "$(dirname "$0")/.."
budget=${1:?usage: scripts/test-watchdog.sh SECONDS [swift test arguments...]}
shift

log=$(mktemp /tmp/parley-test-log.XXXXXX)
# Line-buffered: a file as standard output would otherwise hold the last events back.
stdbuf -oL -eL swift test "$@" >"$log" 2>&1 &
test_pid=$!
tail -n +1 -f --pid="$test_pid" "$log" &
tail_pid=$!

deadline=$((SECONDS + budget))
while kill -0 "$test_pid" 2>/dev/null; do
  if ((SECONDS >= deadline)); then
    sleep 1
    echo
    echo "== swift test ran past ${budget} s; the tests that started and did not end:"
    # Swift Testing prints "◇ Test NAME started." (or "Test case passing ... to NAME started.")
    # and "✔/✘ Test NAME ... after"; what started more often than it ended is still running.
    python3 - "$log" <<'EOF'
import re, sys, collections
started, ended = collections.Counter(), collections.Counter()
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    if "Test case passing" in line:
        continue  # a case of a parameterized test; the test itself is counted below
    m = re.search(r"◇ Test (\S+?\().*started\.$", line)
    if m:
        started[m.group(1)] += 1
        continue
    m = re.search(r"[✔✘] Test (\S+?\().*(passed|failed) after", line)
    if m:
        ended[m.group(1)] += 1
for name, count in sorted(started.items()):
    if count > ended[name]:
        print(f"   {name})")
EOF
    for pid in $(pgrep -f 'PackageTests.xctest' || true); do
      echo "== stacks of the test process $pid"
      if command -v gdb >/dev/null 2>&1; then
        timeout 120 gdb -p "$pid" -batch -ex 'thread apply all bt 25' 2>/dev/null | grep -E '^(Thread|#)' | head -n 600
      fi
    done
    pkill -KILL -f 'PackageTests.xctest' 2>/dev/null || true
    kill -KILL "$test_pid" 2>/dev/null || true
    wait "$test_pid" 2>/dev/null
    wait "$tail_pid" 2>/dev/null
    rm -f "$log"
    exit 124
  fi
  sleep 5
done
wait "$test_pid"
status=$?
wait "$tail_pid" 2>/dev/null
rm -f "$log"
exit "$status"
