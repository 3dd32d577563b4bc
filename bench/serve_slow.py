#!/usr/bin/env python3
"""serve_slow: harvesting under slow scrapes (issue 17).

corotop serve -- corotop-demo for SECS seconds while 8 clients each ask for
/snapshot (the largest reply) and read it 512 bytes every 50 ms, starting
over when one ends, and one client scrapes /metrics every second.  Prints
the demo's events harvested and lost as the last scrape saw them, and how
the slow replies ended: whole, or cut by the server (its idle timeout
closes a connection that cannot make progress).  The demo losing nothing is the
bar (corotop_events_lost_total 0).

Usage: serve_slow.py COROTOP DEMO [SECS]   (default 20)
"""
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request

corotop, demo = sys.argv[1], sys.argv[2]
secs = float(sys.argv[3]) if len(sys.argv) > 3 else 20.0
proc = subprocess.Popen([corotop, 'serve', '--listen', '127.0.0.1:0', '--',
                         demo], stderr=subprocess.PIPE, text=True)
port = None
for line in proc.stderr:
    m = re.search(r'listening on http://127\.0\.0\.1:(\d+)/', line)
    if m:
        port = int(m.group(1))
        break
threading.Thread(target=lambda: [None for _ in proc.stderr],
                 daemon=True).start()
stop = time.monotonic() + secs
done = [0]
sizes = []  # (bytes read, bytes the reply announced) per reply that ended


def slow():
    while time.monotonic() < stop:
        s = socket.create_connection(('127.0.0.1', port), timeout=30)
        s.sendall(b'GET /snapshot HTTP/1.0\r\n\r\n')
        got = b''
        while time.monotonic() < stop:
            b = s.recv(512)
            if not b:
                done[0] += 1
                head, _, body = got.partition(b'\r\n\r\n')
                m = re.search(rb'Content-Length: (\d+)', head, re.I)
                sizes.append((len(body), int(m.group(1)) if m else -1))
                break
            got += b
            time.sleep(0.05)
        s.close()


threads = [threading.Thread(target=slow) for _ in range(8)]
for t in threads:
    t.start()
last = ''
while time.monotonic() < stop:
    last = urllib.request.urlopen('http://127.0.0.1:%d/metrics' % port,
                                  timeout=10).read().decode()
    time.sleep(1)
for t in threads:
    t.join()
proc.terminate()
proc.wait(30)


def val(name):
    m = re.search('^%s (\\S+)$' % re.escape(name), last, re.M)
    return m.group(1) if m else '?'


whole = sum(1 for got, want in sizes if got == want)
print('serve_slow secs=%g slow_clients=8 slow_replies_ended=%d whole=%d '
      'cut=%d (bytes read of a cut one: %s) '
      'events_harvested=%s events_lost=%s coroutines_suspended=%s' %
      (secs, done[0], whole, len(sizes) - whole,
       max((g for g, w in sizes if g != w), default='-'),
       val('corotop_events_harvested_total'),
       val('corotop_events_lost_total'),
       val('corotop_coroutines{state="suspended"}')))
