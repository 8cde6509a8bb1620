#!/usr/bin/python3
"""The http service (kind: http) against Linux clients in a namespace:

- curl gets each configured path with the right status, headers and body; HEAD gives
  headers only; an unknown path gets 404.
- wrk -t1 -c32 -d3s on keep-alive connections: no socket errors, no non-2xx answers.
- Hostile clients over plain sockets: a malformed request gets 400 and a close, an
  oversized header block gets 431 (or 400) and a close, a trickling client holds only
  its own connection; in between and afterwards curl is still served.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import harness as h  # noqa: E402

DP_IP = "10.78.80.1"
PEER_IP = "10.78.80.2"
METRICS_PORT = 9590

SERVICES = ['{ name: web, kind: http, protocol: tcp, port: 80, responses: [ '
            '{ path: "/", body_bytes: 438 }, '
            '{ path: "/1m.bin", body_bytes: 1048576, content_type: application/octet-stream }, '
            '{ path: "/hello", body: "hello\\n" } ] }']

# Runs in the namespace: hostile requests over plain sockets; prints one JSON object.
HOSTILE = r'''
import json, socket, sys, time
host = sys.argv[1]
out = {}
def exchange(payload, timeout=5):
    s = socket.create_connection((host, 80), timeout=timeout)
    try:
        s.sendall(payload)
    except OSError as e:
        return {"error": repr(e)}
    data, eof, err = b"", False, None
    deadline = time.time() + timeout
    try:
        while time.time() < deadline:
            b = s.recv(65536)
            if not b:
                eof = True
                break
            data += b
    except OSError as e:
        err = repr(e)
    s.close()
    return {"status": data[:12].decode("latin-1"), "eof": eof, "error": err,
            "head": data.split(b"\r\n\r\n")[0].decode("latin-1")}
out["garbage"] = exchange(b"\x16\x03\x01 this is not http\r\n\r\n")
out["bad_version"] = exchange(b"GET / HTTP/9.9\r\nHost: x\r\n\r\n")
out["oversized"] = exchange(b"GET / HTTP/1.1\r\nHost: x\r\n" + b"X-Pad: " + b"a" * 20000 + b"\r\n\r\n")
# A trickling client: part of a request line, held open while others are served.
slow = socket.create_connection((host, 80), timeout=5)
slow.sendall(b"GET / HT")
out["while_slow"] = exchange(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n".replace(b"HTTP/1.1\r\nHost: x", b"HTTP/1.1\r\nConnection: close\r\nHost: x"))
slow.sendall(b"TP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
slow.settimeout(5)
d = b""
try:
    while True:
        b = slow.recv(4096)
        if not b:
            break
        d += b
except OSError:
    pass
out["slow"] = {"status": d[:12].decode("latin-1"), "length": len(d)}
# Pipelined requests in one segment.
s = socket.create_connection((host, 80), timeout=5)
s.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n" * 3 + b"GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
d = b""
try:
    while True:
        b = s.recv(4096)
        if not b:
            break
        d += b
except OSError:
    pass
out["pipelined"] = {"responses": d.count(b"HTTP/1.1 200 OK"), "bodies": d.count(b"hello\n")}
print(json.dumps(out))
'''


def curl(ns, url, tmp, extra=""):
    body = os.path.join(tmp, "body")
    hdr = os.path.join(tmp, "headers")
    for p in (body, hdr):
        if os.path.exists(p):
            os.unlink(p)
    r = h.sh(f"curl -s --max-time 20 {extra} -D {hdr} -o {body} -w '%{{http_code}}' {url}", ns=ns,
             check=False)
    headers = {}
    if os.path.exists(hdr):
        with open(hdr, "rb") as f:
            for line in f.read().decode("latin-1").split("\r\n")[1:]:
                if ":" in line:
                    k, v = line.split(":", 1)
                    headers[k.strip().lower()] = v.strip()
    data = b""
    if os.path.exists(body):
        with open(body, "rb") as f:
            data = f.read()
    return r.returncode, r.stdout.strip(), headers, data


def main():
    h.need_root()
    h.require("curl", "wrk")
    res = h.Results("http")
    tmp = h.temp_dir("ws-http-")
    with h.VethPeer("ht", PEER_IP) as peer:
        ns = peer.ns
        cfg = h.write_config(tmp, device=peer.device(), address=f"{DP_IP}/24", prefix="wst-http",
                             metrics_port=METRICS_PORT, services=SERVICES)
        dp = h.Dataplane(cfg, tmp)
        with dp, h.Control(cfg, tmp, METRICS_PORT) as ctl:
            base = f"http://{DP_IP}"
            rc, code, hd, body = curl(ns, base + "/", tmp)
            res.check(rc == 0 and code == "200", "curl /: 200", f"rc={rc} code={code}")
            res.check(len(body) == 438 and hd.get("content-length") == "438",
                      "curl /: 438-byte body, Content-Length 438", f"{len(body)} {hd}")
            res.check(hd.get("content-type") == "text/html" and hd.get("server") == "wirespeed"
                      and hd.get("connection") == "keep-alive",
                      "curl /: Content-Type text/html, Server wirespeed, keep-alive", str(hd))
            res.check(body.decode("latin-1").isprintable() or all(32 <= c < 127 or c == 10 for c in body),
                      "curl /: generated body is printable text")

            rc, code, hd, body = curl(ns, base + "/1m.bin", tmp)
            res.check(rc == 0 and code == "200" and len(body) == 1048576
                      and hd.get("content-type") == "application/octet-stream",
                      "curl /1m.bin: 200, 1048576 bytes, application/octet-stream",
                      f"rc={rc} code={code} len={len(body)} {hd}")

            rc, code, hd, body = curl(ns, base + "/hello", tmp)
            res.check(rc == 0 and code == "200" and body == b"hello\n" and hd.get("content-length") == "6",
                      "curl /hello: literal body 'hello\\n'", f"rc={rc} code={code} {body!r} {hd}")

            rc, code, hd, body = curl(ns, base + "/1m.bin", tmp, extra="-I")
            # With -I, curl writes the header block to -o: nothing may follow it.
            res.check(rc == 0 and code == "200" and hd.get("content-length") == "1048576"
                      and body.startswith(b"HTTP/1.1 200") and body.endswith(b"\r\n\r\n")
                      and body.count(b"\r\n\r\n") == 1,
                      "curl -I /1m.bin (HEAD): headers only, Content-Length 1048576", f"rc={rc} {hd} {len(body)}")

            rc, code, hd, body = curl(ns, base + "/missing", tmp)
            res.check(rc == 0 and code == "404", "curl /missing: 404", f"rc={rc} code={code}")

            rc, code, hd, body = curl(ns, base + "/hello", tmp, extra="-X POST -d x=1")
            res.check(rc == 0 and code == "405", "curl -X POST: 405", f"rc={rc} code={code}")

            rc, code, hd, body = curl(ns, base + "/hello", tmp, extra="-0")
            res.check(rc == 0 and code == "200" and hd.get("connection") == "close" and body == b"hello\n",
                      "curl -0 (HTTP/1.0): 200 and Connection: close", f"rc={rc} {hd}")

            # wrk: 32 keep-alive connections for 3 s.
            r = h.sh(f"wrk -t1 -c32 -d3s --latency {base}/", ns=ns, check=False, timeout=60)
            out = r.stdout
            rps = h.wrk_summary(out).get("rate", 0.0)
            res.check(r.returncode == 0 and rps > 0, f"wrk -t1 -c32 -d3s: {rps:.0f} requests/s", out[-800:])
            res.check("Socket errors" not in out, "wrk: no socket errors", out[-800:])
            res.check("Non-2xx" not in out, "wrk: every answer 2xx", out[-800:])
            print(out, flush=True)

            # Hostile clients over plain sockets.
            script = os.path.join(tmp, "hostile.py")
            with open(script, "w") as f:
                f.write(HOSTILE)
            r = h.sh(f"python3 {script} {DP_IP}", ns=ns, check=False, timeout=120)
            try:
                hr = json.loads(r.stdout.strip().splitlines()[-1])
            except (ValueError, IndexError):
                hr = {}
            g = hr.get("garbage", {})
            res.check(g.get("status", "").startswith("HTTP/1.1 400") and g.get("eof"),
                      "garbage request: 400, then the server closes", f"{r.stdout[-600:]} {r.stderr[-600:]}")
            b = hr.get("bad_version", {})
            res.check(b.get("status", "").startswith("HTTP/1.1 400") and b.get("eof"),
                      "HTTP/9.9: 400, then the server closes", str(b))
            o = hr.get("oversized", {})
            res.check((o.get("status", "").startswith("HTTP/1.1 431") or o.get("status", "").startswith("HTTP/1.1 400"))
                      and o.get("eof"), "20 KB header block: 431, then the server closes", str(o))
            w = hr.get("while_slow", {})
            res.check(w.get("status", "").startswith("HTTP/1.1 200"),
                      "a trickling client does not hold up others", str(w))
            s = hr.get("slow", {})
            res.check(s.get("status", "").startswith("HTTP/1.1 200"), "the trickled request is answered", str(s))
            p = hr.get("pipelined", {})
            res.check(p.get("responses") == 4 and p.get("bodies") == 4,
                      "4 pipelined requests in one segment: 4 answers in order, then close", str(p))

            rc, code, hd, body = curl(ns, base + "/", tmp)
            res.check(rc == 0 and code == "200" and len(body) == 438, "still serving afterwards",
                      f"rc={rc} code={code}")

            # Every request answered: the service's counters agree.
            def msgs(direction):
                return ctl.value("wirespeed_service_messages_total", service="web", direction=direction)
            ok = ctl.wait_for(lambda: msgs("received") > 0 and msgs("received") == msgs("sent"), 10)
            res.check(ok and msgs("received") >= rps, "metrics: requests received == responses sent",
                      f"received={msgs('received')} sent={msgs('sent')}")
            res.check(ctl.value("wirespeed_service_sent_bytes_total", service="web") > 1048576,
                      "metrics: bytes sent counted")
        rcode = dp.proc.returncode
        res.check(rcode == 0, "data plane exits 0 on SIGINT", f"rc={rcode}\n{dp.output()[-1500:]}")
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
