#!/usr/bin/python3
"""Sends N random bytes to HOST:PORT (an echo service) while reading the echo; prints the
SHA-256 of what was sent and of what came back, and the seconds it took, as JSON."""
import hashlib
import json
import os
import socket
import sys
import threading
import time

host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
data = os.urandom(n)
s = socket.create_connection((host, port), timeout=60)
got = hashlib.sha256()
received = [0]


def reader():
    while received[0] < n:
        b = s.recv(1 << 16)
        if not b:
            break
        got.update(b)
        received[0] += len(b)


t0 = time.time()
th = threading.Thread(target=reader)
th.start()
s.sendall(data)
th.join(120)
print(json.dumps({"sent": hashlib.sha256(data).hexdigest(), "received": got.hexdigest(),
                  "bytes": received[0], "seconds": time.time() - t0}))
