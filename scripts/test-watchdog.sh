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

# Swift Testing prints "◇ Test NAME started." (or "Test case passing ... to NAME started.")
# and "✔/✘ Test NAME ... after"; what started more often than it ended is still running.
still_running() {
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
}

# gdb's "thread apply all bt" on standard input: prints the threads doing something besides
# waiting for work (an event loop in epoll, a pool thread on its condition, dispatch's own),
# demangled and cut to 220 columns, and how many idle ones it left out.
busy_threads() {
  { if command -v swift >/dev/null 2>&1; then swift demangle --simplified 2>/dev/null; else cat; fi; } | python3 -c '
import sys
threads, current = [], None
for line in sys.stdin:
    line = line.rstrip("\n")
    if line.startswith("Thread "):
        current = [line]
        threads.append(current)
    elif current is not None:
        current.append(line)
idle_marks = ("_blockingWaitForWork", "SelectableEventLoop.run", "_dispatch_mgr_thread", "_dispatch_sig_thread", "_dispatch_sema4_timedwait")
idle = 0
for t in threads:
    body = "\n".join(t)
    if any(m in body for m in idle_marks):
        idle += 1
        continue
    for l in t[:26]:
        print(l[:220])
print(f"({idle} idle threads left out)")
'
}

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
    echo "== swift test ran past ${budget} s"
    names=$(still_running)
    echo "the tests that started and did not end:"
    echo "$names"
    for pid in $(pgrep -f 'PackageTests.xctest' || true); do
      echo "== stacks of the test process $pid (threads idle in NIO or the thread pool left out)"
      if command -v gdb >/dev/null 2>&1; then
        timeout 120 gdb -p "$pid" -batch -ex 'thread apply all bt 25' 2>/dev/null | grep -E '^(Thread|#)' | busy_threads
      fi
    done
    # Again, last: CI may keep only the tail of what was printed.
    echo "== still running after ${budget} s ($(echo "$names" | grep -c .) tests; many means the concurrency pool itself is stuck, see the stacks):"
    echo "$names" | head -n 40
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
