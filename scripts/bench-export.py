#!/usr/bin/env python3
# An export's cost from outside (contract v1.4): a user with MESSAGES messages and FILES uploads
# of 25 MiB (the upload limit), then GET /users/me/export into /tmp/big-export.zip while the
# server's resident memory is sampled, then `unzip -t`:
#   B=.build/release/parley; $B serve --data-dir /tmp/exp --port 18123 --open-organizations \
#     --rate-limits off --bcrypt-cost 4 &
#   scripts/bench-export.py 18123 $(pgrep -f "serve --data-dir /tmp/exp") 100000 41
# The uploads are one random file sent FILES times (one blob on disk, FILES attachments).
import http.client, json, os, subprocess, sys, threading, time, uuid
port = int(sys.argv[1]); pid = int(sys.argv[2]); n_messages = int(sys.argv[3]); n_files = int(sys.argv[4])
def call(conn, method, path, body=None, token=None, headers=None, raw=None):
    h = {"Content-Type": "application/json"}
    if token: h["Authorization"] = "Bearer " + token
    if headers: h.update(headers)
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    conn.request(method, "/api/v1/" + path, body=data, headers=h)
    r = conn.getresponse(); payload = r.read()
    if r.status >= 300: raise SystemExit(f"{method} {path}: {r.status} {payload[:200]}")
    return json.loads(payload) if payload else None
def rss():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS"): return int(line.split()[1]) // 1024
c = http.client.HTTPConnection("127.0.0.1", port)
auth = call(c, "POST", "auth/register", {"organization": "big", "email": "a@x.io", "password": "password-a", "displayName": "A"})
token = auth["token"]
group = call(c, "POST", "conversations", {"type": "group", "participantIds": [], "name": "Mine"}, token)
blob = os.urandom(25 * 1024 * 1024)
t = time.time()
for i in range(n_files):
    a = call(c, "POST", f"attachments?name=file{i}.bin", token=token, headers={"Content-Type": "application/octet-stream"}, raw=blob)
    call(c, "POST", f"conversations/{group['id']}/messages", {"clientMessageId": f"f{i}", "text": "", "type": "file", "attachmentId": a["id"]}, token)
print(f"uploaded {n_files} x 25 MB in {time.time()-t:.1f}s", flush=True)
t = time.time()
for i in range(n_messages):
    call(c, "POST", f"conversations/{group['id']}/messages", {"clientMessageId": f"m{i}", "text": f"message number {i} with some words in it"}, token)
print(f"sent {n_messages} messages in {time.time()-t:.1f}s; server RSS {rss()} MB", flush=True)
peak = [0]; done = [False]
def sample():
    while not done[0]:
        peak[0] = max(peak[0], rss()); time.sleep(0.2)
th = threading.Thread(target=sample); th.start()
before = rss(); t = time.time()
out = subprocess.run(["curl", "-sS", "-o", "/tmp/big-export.zip", "-w", "%{http_code} %{size_download}", "-H", "Authorization: Bearer " + token, f"http://127.0.0.1:{port}/api/v1/users/me/export"], capture_output=True, text=True)
done[0] = True; th.join()
print(f"export: {out.stdout} in {time.time()-t:.1f}s; server RSS before {before} MB, peak during {peak[0]} MB", flush=True)
t = subprocess.run(["unzip", "-t", "-q", "/tmp/big-export.zip"], capture_output=True, text=True)
print("unzip -t:", t.stdout.strip()[-200:], t.returncode)
