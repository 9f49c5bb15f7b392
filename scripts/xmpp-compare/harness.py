#!/usr/bin/env python3
"""One harness, two servers: ejabberd (XMPP MUC) and Parley, driven the same way in one run.

usage: harness.py --parley URL [--groups 10] [--size 10] [--rate 200] [--duration 20] [--warmup 5]
                  [--xmpp 127.0.0.1:5222] [--rounds 2] [--reads] [--only ejabberd|parley]

Each of `groups` rooms has `size` members on their own connection; every member sends in turn,
`rate` messages a second in all, each carrying the harness's monotonic send time. Latency is
send -> arrival at each other member (the sender's own echo is not counted), measured in this one
process and event loop for both servers, so the harness's own overhead is the same on both
sides. With `--reads`, every member that receives a message marks it read (Parley: a `read`
command; XMPP: a chat marker, XEP-0333 `displayed`, sent to the room), and the receipt-like
frames each member then receives are counted.
"""
import argparse, asyncio, json, statistics, time, uuid, urllib.request, logging

import slixmpp
import websockets

logging.basicConfig(level=logging.ERROR)


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    k = min(len(values) - 1, max(0, int(round(p / 100 * (len(values) - 1)))))
    return values[k]


class Recorder:
    def __init__(self):
        self.latencies_ms = []
        self.measuring = False
        self.received = 0
        self.receipts = 0

    def arrived(self, sent_ns):
        self.received += 1
        if self.measuring:
            self.latencies_ms.append((time.perf_counter_ns() - sent_ns) / 1e6)

    def summary(self, name, seconds):
        lat = self.latencies_ms
        return (f"{name:8} {len(lat) / seconds:8.0f} deliveries/s  p50 {percentile(lat, 50):7.2f} ms  "
                f"p90 {percentile(lat, 90):7.2f}  p99 {percentile(lat, 99):7.2f}  max {max(lat) if lat else float('nan'):7.2f}"
                + (f"  receipt frames/s {self.receipts / seconds:8.0f}" if self.receipts else ""))


# ---------------------------------------------------------------- XMPP (ejabberd MUC)

class Member(slixmpp.ClientXMPP):
    def __init__(self, recorder, room, nick, reads):
        super().__init__("localhost", "")
        self.enable_starttls = False
        self.enable_direct_tls = False
        self.enable_plaintext = True
        self.recorder, self.room, self.nick, self.reads = recorder, room, nick, reads
        self.register_plugin("xep_0045")
        self.joined = asyncio.get_event_loop().create_future()
        self.add_event_handler("session_start", self.started)
        self.add_event_handler("groupchat_message", self.message)

    async def started(self, _):
        try:
            await self.plugin["xep_0045"].join_muc_wait(self.room, self.nick, maxstanzas=0, timeout=30)
        except Exception as error:
            print("join failed", self.nick, repr(error))
            raise
        if not self.joined.done():
            self.joined.set_result(True)

    def message(self, msg):
        if msg["mucnick"] == self.nick:
            return
        body = msg["body"]
        if body.startswith("t="):
            self.recorder.arrived(int(body[2:].split("|")[0]))
            if self.reads:
                marker = self.make_message(mto=self.room, mtype="groupchat")
                marker.append(slixmpp.xmlstream.ET.fromstring(
                    f"<displayed xmlns='urn:xmpp:chat-markers:0' id='{msg['id']}'/>"))
                marker.send()
        elif self.reads and msg.xml.find("{urn:xmpp:chat-markers:0}displayed") is not None:
            self.recorder.receipts += 1

    def send_timed(self):
        self.send_message(mto=self.room, mbody=f"t={time.perf_counter_ns()}|{uuid.uuid4().hex[:8]}", mtype="groupchat")


async def xmpp_members(args, recorder):
    host, port = args.xmpp.split(":")
    members = []
    for g in range(args.groups):
        room = f"bench{g}-{uuid.uuid4().hex[:6]}@conference.localhost"
        for m in range(args.size):
            member = Member(recorder, room, f"m{m}", args.reads)
            member.connect(host, int(port))
            members.append(member)
    await asyncio.wait_for(asyncio.gather(*(m.joined for m in members)), 300)  # 300 joins: 90,000 presences
    return members, [m.send_timed for m in members]


# ---------------------------------------------------------------- Parley

def http(base, method, path, token=None, body=None):
    request = urllib.request.Request(base + "/api/v1/" + path, method=method,
                                     data=json.dumps(body).encode() if body is not None else None)
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(request) as answer:
        return json.loads(answer.read())


async def parley_members(args, recorder):
    base = args.parley.rstrip("/")
    sockets, senders = [], []
    for g in range(args.groups):
        org = f"bench{g}-{uuid.uuid4().hex[:6]}"
        users = [http(base, "POST", "auth/register", body={
            "organization": org, "email": f"m{m}@x.io", "password": "bench-secret-1", "displayName": f"M{m}"})
            for m in range(args.size)]
        group = http(base, "POST", "conversations", users[0]["token"],
                     {"type": "group", "name": "bench", "participantIds": [u["user"]["id"] for u in users[1:]]})
        for user in users:
            ws = await websockets.connect(base.replace("http", "ws") + "/api/v1/ws?token=" + user["token"], max_size=None)
            hello = json.loads(await ws.recv())
            assert hello["type"] == "hello", hello
            me = user["user"]["id"]
            sockets.append(ws)

            async def reader(ws=ws, me=me, conversation=group["id"]):
                async for raw in ws:
                    frame = json.loads(raw)
                    kind = frame.get("type")
                    if kind == "message.created":
                        message = frame["data"]["message"]
                        if message["senderId"] != me and message["text"].startswith("t="):
                            recorder.arrived(int(message["text"][2:].split("|")[0]))
                            if args.reads:
                                await ws.send(json.dumps({"id": uuid.uuid4().hex, "type": "read",
                                                          "data": {"conversationId": conversation, "upToSeq": message["seq"]}}))
                    elif kind in ("receipt", "receipt.summary") and args.reads:
                        recorder.receipts += 1

            asyncio.get_event_loop().create_task(reader())

            def send(ws=ws, conversation=group["id"]):
                frame = {"id": uuid.uuid4().hex, "type": "message.send", "data": {
                    "conversationId": conversation, "clientMessageId": uuid.uuid4().hex,
                    "text": f"t={time.perf_counter_ns()}|x"}}
                asyncio.get_event_loop().create_task(ws.send(json.dumps(frame)))
            senders.append(send)
    return sockets, senders


# ---------------------------------------------------------------- the run

async def drive(senders, recorder, args):
    interval = 1 / args.rate
    start = time.perf_counter()
    n = 0
    total = args.warmup + args.duration
    while True:
        now = time.perf_counter() - start
        if now >= total:
            break
        if not recorder.measuring and now >= args.warmup:
            recorder.measuring = True
            recorder.receipts = 0
        senders[n % len(senders)]()
        n += 1
        target = start + n * interval
        delay = target - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
    await asyncio.sleep(1)  # let the last ones arrive
    recorder.measuring = False


async def run_one(kind, args):
    recorder = Recorder()
    if kind == "ejabberd":
        members, senders = await xmpp_members(args, recorder)
    else:
        members, senders = await parley_members(args, recorder)
    await asyncio.sleep(1)
    await drive(senders, recorder, args)
    line = recorder.summary(kind, args.duration)
    for member in members:
        if kind == "ejabberd":
            member.disconnect()
        else:
            await member.close()
    return line


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--parley", required=True)
    parser.add_argument("--xmpp", default="127.0.0.1:5222")
    parser.add_argument("--groups", type=int, default=10)
    parser.add_argument("--size", type=int, default=10)
    parser.add_argument("--rate", type=float, default=200)
    parser.add_argument("--duration", type=float, default=20)
    parser.add_argument("--warmup", type=float, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--reads", action="store_true")
    parser.add_argument("--only", choices=["ejabberd", "parley"], help="drive one server only")
    args = parser.parse_args()
    print(f"{args.groups} groups x {args.size}, {args.rate:g} msgs/s, {args.duration:g} s after {args.warmup:g} s"
          + (", every member reads" if args.reads else ""))
    for round in range(args.rounds):
        for kind in ([args.only] if args.only else ["ejabberd", "parley"]):
            print(await run_one(kind, args), flush=True)
            await asyncio.sleep(2)


asyncio.run(main())
