#!/usr/bin/python3
"""The HTTP load generator (`kind: http` with a `target`) against real servers:

1. Over net_memif, data plane against data plane: a server data plane (lcore 0) runs the
   `http` service; a client data plane (lcore 1) runs three HTTP clients at once, each
   response's status, Content-Length and generated body checked:
   - keep-alive: 16 connections for 3 s (requests_per_connection 0);
   - one request per connection: 8 connection slots for 3 s;
   - 10 requests per connection, 2000 requests: 200 connections (a few more when slots
     reopened together at the end find no request left);
   - a wrong expectation (Content-Length 437 expected) on 20 requests: 20 errors.
   The reports must agree with the server's own counters (every response the clients
   counted was sent by the server).
2. nginx (a Linux HTTP server) in a namespace behind a veth pair, over af_packet: the same
   generated 438-byte body as a file, keep-alive and one request per connection, every
   body checked.

Bounded to about a minute; memif socket and file prefixes are wshc-*.
"""
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness as h  # noqa: E402

SOCK = "/run/wirespeed-itest-wshc.sock"
SERVER_IP = "10.79.8.1"
CLIENT_IP = "10.79.8.2"
S_METRICS, C_METRICS = 9681, 9682
NGINX_DP_IP = "10.78.81.1"
NGINX_IP = "10.78.81.2"
RUN_S = 3
LINE = b"wirespeed generated body 0123456789 abcdefghijklmnopqrstuvwxyz.\n"


def generated(n):
    return (LINE * (n // len(LINE) + 1))[:n]


def client_services(target, tmp, tag):
    reps = {k: os.path.join(tmp, f"{tag}-{k}.json") for k in ("keep", "one", "ten", "wrong")}
    svc = [
        f'{{ name: keep, kind: http, protocol: tcp, target: "{target}", connections: 16, '
        f'duration_s: {RUN_S}, expect_body_bytes: 438, check_body: true, report: {reps["keep"]} }}',
        f'{{ name: one, kind: http, protocol: tcp, target: "{target}", connections: 8, '
        f'requests_per_connection: 1, duration_s: {RUN_S}, expect_body_bytes: 438, '
        f'check_body: true, report: {reps["one"]} }}',
        f'{{ name: ten, kind: http, protocol: tcp, target: "{target}", connections: 4, '
        f'requests_per_connection: 10, count: 2000, expect_body_bytes: 438, check_body: true, '
        f'report: {reps["ten"]} }}',
        f'{{ name: wrong, kind: http, protocol: tcp, target: "{target}", count: 20, '
        f'expect_body_bytes: 437, report: {reps["wrong"]} }}',
    ]
    return svc, reps


def run_client(cfg, d, timeout):
    client = h.Dataplane(cfg, d)
    client.start()
    try:
        client.proc.wait(timeout)
    except subprocess.TimeoutExpired:
        pass
    rc = client.stop()
    return rc, client.output()


def check_reports(res, label, reps):
    keep, one, ten, wrong = (h.load_json(reps[k]) for k in ("keep", "one", "ten", "wrong"))
    # A server may end a keep-alive connection (ours after 10000 requests): a new one follows.
    res.check(keep.get("kind") == "http" and keep.get("messages", 0) > 0 and keep.get("errors", 1) == 0
              and keep.get("connections", 0) >= 16 and keep.get("connect_failures", 1) == 0,
              f"{label}: keep-alive: {keep.get('messages_per_second', 0):.0f} requests/s on 16 "
              f"connections, every response checked, no error", str(keep)[:400])
    rtt = keep.get("rtt_us", {})
    res.check(0 < rtt.get("p50", 0) <= rtt.get("p99", 0) <= rtt.get("p999", 0) <= rtt.get("max", 0),
              f"{label}: keep-alive latency p50 {rtt.get('p50', 0):.1f} p99 {rtt.get('p99', 0):.1f} "
              f"p99.9 {rtt.get('p999', 0):.1f} max {rtt.get('max', 0):.1f} us", str(rtt))
    # Connections still in their handshake when the time is up are not answered.
    res.check(0 < one.get("messages", 0) <= one.get("connections", 0) <= one.get("messages", 0) + 8
              and one.get("errors", 1) == 0,
              f"{label}: one request per connection: {one.get('connections_per_second', 0):.0f} "
              f"connections/s, a connection per request ({one.get('messages')} requests, "
              f"{one.get('connections')} connections)", str(one)[:400])
    # At the end of the count, slots reopened together may find no request left (up to 3).
    res.check(ten.get("messages") == 2000 and 200 <= ten.get("connections", 0) <= 203
              and ten.get("errors", 1) == 0,
              f"{label}: 10 requests per connection: 2000 requests on {ten.get('connections')} connections",
              str(ten)[:400])
    res.check(wrong.get("errors") == 20 and wrong.get("messages") == 0,
              f"{label}: a Content-Length other than expected is an error ({wrong.get('errors')}/20)",
              str(wrong)[:400])
    return sum(r.get("messages", 0) + r.get("errors", 0) for r in (keep, one, ten, wrong))


def memif_part(res, tmp):
    if os.path.exists(SOCK):
        os.unlink(SOCK)
    sd, cd = os.path.join(tmp, "server"), os.path.join(tmp, "client")
    os.makedirs(sd)
    os.makedirs(cd)
    s_cfg = h.write_config(sd, device=f"net_memif0,role=server,socket={SOCK},id=0",
                           address=f"{SERVER_IP}/24", prefix="wshc-s", lcores=(0,),
                           metrics_port=S_METRICS,
                           services=['{ name: web, kind: http, protocol: tcp, port: 80, '
                                     'responses: [ { path: "/", body_bytes: 438 } ] }'])
    services, reps = client_services(f"{SERVER_IP}:80", tmp, "memif")
    c_cfg = h.write_config(cd, device=f"net_memif0,role=client,socket={SOCK},id=0",
                           address=f"{CLIENT_IP}/24", prefix="wshc-c", lcores=(1,),
                           metrics_port=C_METRICS, services=services)
    with h.Dataplane(s_cfg, sd), h.Control(s_cfg, sd, S_METRICS) as ctl:
        rc, out = run_client(c_cfg, cd, RUN_S + 30)
        res.check(rc == 0, f"memif: the client data plane finished by itself (exit {rc})", out[-600:])
        answered = check_reports(res, "memif", reps)
        sent = 0.0
        ok = ctl.wait_for(lambda: ctl.value("wirespeed_service_messages_total", service="web",
                                            direction="sent") >= answered, 5)
        sent = ctl.value("wirespeed_service_messages_total", service="web", direction="sent")
        res.check(ok and answered > 0, f"memif: the server sent {sent:.0f} responses, the clients "
                  f"read {answered}", "")
    if os.path.exists(SOCK):
        os.unlink(SOCK)


NGINX_CONF = """daemon off;
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {tmp}/body;
  proxy_temp_path {tmp}/proxy;
  fastcgi_temp_path {tmp}/fastcgi;
  uwsgi_temp_path {tmp}/uwsgi;
  scgi_temp_path {tmp}/scgi;
  keepalive_requests 100000;
  server {{
    listen {ip}:80;
    root {tmp}/www;
    location / {{ }}
  }}
}}
"""


def nginx_part(res, tmp):
    www = os.path.join(tmp, "www")
    os.makedirs(www)
    with open(os.path.join(www, "index.html"), "wb") as f:
        f.write(generated(438))
    conf = os.path.join(tmp, "nginx.conf")
    with open(conf, "w") as f:
        f.write(NGINX_CONF.format(tmp=tmp, ip=NGINX_IP))
    os.chmod(tmp, 0o755)
    with h.VethPeer("hc", NGINX_IP) as peer:
        ng = subprocess.Popen(["ip", "netns", "exec", peer.ns, "nginx", "-c", conf, "-p", tmp],
                              stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        try:
            time.sleep(0.5)
            res.check(ng.poll() is None, "nginx runs in the namespace", "")
            d = os.path.join(tmp, "dp")
            os.makedirs(d)
            services, reps = client_services(f"{NGINX_IP}:80", tmp, "nginx")
            cfg = h.write_config(d, device=peer.device(), address=f"{NGINX_DP_IP}/24",
                                 prefix="wshc-n", metrics_port=C_METRICS, services=services)
            rc, out = run_client(cfg, d, RUN_S + 30)
            res.check(rc == 0, f"nginx: the client data plane finished by itself (exit {rc})",
                      out[-600:])
            check_reports(res, "nginx", reps)
        finally:
            h.terminate(ng)


def main():
    h.need_root()
    h.require("nginx")
    res = h.Results("http-client")
    tmp = h.temp_dir("wshc-")
    try:
        memif_part(res, tmp)
        nginx_part(res, tmp)
    finally:
        if os.path.exists(SOCK):
            os.unlink(SOCK)
        shutil.rmtree(tmp, ignore_errors=True)
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
