#!/usr/bin/env python3
# The view of a conversation with a large unread backlog against a fresh one, from outside:
#   scripts/bench-unread-view.py http://127.0.0.1:8080 60000
# against `parley serve --open-organizations --rate-limits off`: the default send limit (20 a
# second per user) refuses the backlog's sends with 429.
import json, urllib.request, time, statistics, sys, concurrent.futures, uuid
BASE = sys.argv[1]; N = int(sys.argv[2])
def call(method, path, token=None, body=None):
    req = urllib.request.Request(BASE + "/api/v1" + path, data=json.dumps(body).encode() if body is not None else None, method=method)
    if body is not None: req.add_header("content-type", "application/json")
    if token: req.add_header("authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=60) as r: return json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as error:
        if error.code == 429:
            sys.exit(f"{method} {path}: 429, rate limited; start the server with --rate-limits off")
        raise
org = "bench-" + uuid.uuid4().hex[:8]
a = call("POST", "/auth/register", body={"organization": org, "email": "a@b.io", "password": "password-a", "displayName": "A"})
b = call("POST", "/auth/register", body={"organization": org, "email": "b@b.io", "password": "password-b", "displayName": "B"})
c = call("POST", "/auth/register", body={"organization": org, "email": "c@b.io", "password": "password-c", "displayName": "C"})
busy = call("POST", "/conversations", a["token"], {"type": "direct", "participantIds": [b["user"]["id"]]})["id"]
fresh = call("POST", "/conversations", a["token"], {"type": "direct", "participantIds": [c["user"]["id"]]})["id"]
t0 = time.time()
def send(i): call("POST", f"/conversations/{busy}/messages", a["token"], {"clientMessageId": f"m{i}", "text": f"message {i}"})
with concurrent.futures.ThreadPoolExecutor(16) as pool: list(pool.map(send, range(N)))
print(f"sent {N} in {time.time()-t0:.1f} s")
def timed(path, token, n=300):
    xs = []
    for _ in range(n):
        s = time.perf_counter(); call("GET", path, token); xs.append((time.perf_counter() - s) * 1000)
    xs.sort(); return statistics.median(xs), xs[int(len(xs) * 0.99) - 1]
print("unread as seen by B:", call("GET", f"/conversations/{busy}", b["token"])["unreadCount"])
for name, path, tok in [("fresh view (C)", f"/conversations/{fresh}", c["token"]), (f"view with {N} unread (B)", f"/conversations/{busy}", b["token"]),
                        ("list, fresh (C)", "/conversations", c["token"]), (f"list with {N} unread (B)", "/conversations", b["token"])]:
    p50, p99 = timed(path, tok)
    print(f"{name}: p50 {p50:.2f} ms, p99 {p99:.2f} ms")
