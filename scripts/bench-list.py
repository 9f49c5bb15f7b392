#!/usr/bin/env python3
"""A user in N conversations: time the conversation list and a sync with nothing new.

usage: bench-list.py URL [N]   (against `parley serve --open-organizations`)
Registers two users, has the second create N groups with the first, then times, as the first:
v1's GET /conversations (paged at 200), the first page (limit 50), every page (limit 200), and
GET /conversations?changedSince=<token> with nothing new. Prints bytes and milliseconds.
"""
import json, sys, time, urllib.request, uuid, statistics

base = sys.argv[1].rstrip("/") + "/api/v1"
count = int(sys.argv[2]) if len(sys.argv) > 2 else 2000

def call(method, path, token=None, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", "Bearer " + token)
    started = time.perf_counter()
    with urllib.request.urlopen(request) as answer:
        raw = answer.read()
    return json.loads(raw), len(raw), (time.perf_counter() - started) * 1000

org = "list-" + uuid.uuid4().hex[:8]
alice = call("POST", "/auth/register", body={"organization": org, "email": "a@x.io", "password": "secret-123", "displayName": "A"})[0]
bob = call("POST", "/auth/register", body={"organization": org, "email": "b@x.io", "password": "secret-123", "displayName": "B"})[0]
for n in range(count):
    call("POST", "/conversations", bob["token"], {"type": "group", "participantIds": [alice["user"]["id"]], "name": f"g{n}"})

def timed(path, runs=20):
    sizes, times = [], []
    for _ in range(runs):
        body, size, ms = call("GET", path, alice["token"])
        sizes.append(size)
        times.append(ms)
    return body, sizes[-1], statistics.median(times)

v1, v1_size, v1_ms = timed("/conversations")
first, first_size, first_ms = timed("/conversations?limit=50")
started = time.perf_counter()
total, pages, before = 0, 0, None
while True:
    page = call("GET", "/conversations?limit=200" + (f"&before={before}" if before else ""), alice["token"])[0]
    total += len(page["conversations"])
    pages += 1
    if not page.get("hasMore"):
        break
    before = page["nextBefore"]
all_ms = (time.perf_counter() - started) * 1000
time.sleep(11)  # past the server's overlap window, so "nothing new" is nothing
token = call("GET", "/conversations?limit=1", alice["token"])[0]["syncToken"]
idle, idle_size, idle_ms = timed(f"/conversations?changedSince={token}")
print(f"{count} conversations")
print(f"v1 GET /conversations: {len(v1['conversations'])} conversations, {v1_size} bytes, p50 {v1_ms:.2f} ms")
print(f"first page (limit 50): {first_size} bytes, p50 {first_ms:.2f} ms")
print(f"every page (limit 200): {total} conversations in {pages} pages, {all_ms:.0f} ms")
print(f"sync with nothing new: {len(idle['conversations'])} conversations, {idle_size} bytes, p50 {idle_ms:.2f} ms")
