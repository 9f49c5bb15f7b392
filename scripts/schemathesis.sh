#!/usr/bin/env bash
# Fuzzes a live `parley serve` against its own OpenAPI document with schemathesis (PyPI):
# generated requests to every operation, signed in as a real user, checking that no answer
# is a 5xx, that every answer's status is documented and its body fits the schema.
#
#   scripts/schemathesis.sh [SECONDS]      (default 120; needs .build/debug/parley)
#
# Installs schemathesis with pip when missing. The server runs with its default limits on a
# fresh data directory on a free loopback port, and is stopped afterwards; its log is kept
# when anything fails.
set -euo pipefail
cd "$(dirname "$0")/.."
budget=${1:-120}
binary=${PARLEY_BINARY:-.build/debug/parley}
[ -x "$binary" ] || { echo "no $binary: run swift build first" >&2; exit 2; }

if ! command -v st >/dev/null 2>&1; then
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore 'schemathesis>=4,<5'
fi
st --version

data=$(mktemp -d /tmp/parley-schemathesis.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# Domain joins at once (`--domain-joins trust`): the second user below joins by the allowed
# domain, and this server has no mail server to send the link that proves an address.
"$binary" serve --host 127.0.0.1 --port "$port" --data-dir "$data" --bcrypt-cost 4 --domain-joins trust >"$data/server.log" 2>&1 &
server=$!
stop() { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; }
trap stop EXIT
base="http://127.0.0.1:$port"
for _ in $(seq 1 100); do
  curl -fsS "$base/ready" >/dev/null 2>&1 && break
  sleep 0.2
done
curl -fsS "$base/ready" >/dev/null

# A signed-in admin of a fresh organization, with a conversation and a message, so that
# authenticated operations run past the token check.
register() {
  curl -fsS -X POST "$base/api/v1/auth/register" -H 'Content-Type: application/json' \
    -d "{\"organization\":\"fuzz\",\"email\":\"$1@fuzz.test\",\"password\":\"password-$1\",\"displayName\":\"$1\"}"
}
token=$(register admin | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
auth=(-H "Authorization: Bearer $token" -H 'Content-Type: application/json')
curl -fsS -X PATCH "$base/api/v1/organization" "${auth[@]}" -d '{"allowedEmailDomains":["fuzz.test"]}' >/dev/null
other=$(register other | python3 -c 'import json,sys; print(json.load(sys.stdin)["user"]["id"])')
conversation=$(curl -fsS -X POST "$base/api/v1/conversations" "${auth[@]}" \
  -d "{\"type\":\"group\",\"participantIds\":[\"$other\"],\"name\":\"Fuzz\"}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
curl -fsS -X POST "$base/api/v1/conversations/$conversation/messages" "${auth[@]}" \
  -d '{"clientMessageId":"seed-1","text":"hello"}' >/dev/null

status=0
# The WebSocket route is an upgrade, not a REST call: the fuzz suite in swift test covers it.
# Logout and ending sign-ins would end the fuzzer's own sign-in, after which every other
# operation could only be refused (401); their tests are in swift test.
# One worker: CPython 3.11.7 fails in ast.parse when two of hypothesis's threads describe
# strategies at once ("AST constructor recursion depth mismatch"), an error of the tool.
st run "$base/api/v1/openapi.json" \
  --header "Authorization: Bearer $token" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
  --exclude-path /api/v1/ws \
  --exclude-path /api/v1/auth/logout --exclude-path '/api/v1/users/{id}/sign-out' \
  --exclude-path '/api/v1/auth/sessions/{id}' \
  --max-time "$budget" --workers 1 \
  --suppress-health-check all --generation-database none \
  --no-color || status=$?
if ! kill -0 "$server" 2>/dev/null; then
  echo "the server died during the run" >&2
  status=1
fi
if [ "$status" -ne 0 ]; then
  echo "== server log ($data/server.log), last 50 lines" >&2
  tail -50 "$data/server.log" >&2
else
  rm -rf "$data"
fi
exit "$status"
