#!/bin/bash
# pth_httpd.sh COROTOP TEST_HTTPD N: GNU Pth's test_httpd under corotop, N
# one-shot HTTP requests, then 7 s idle; sums the last live snapshot
# (docs/TRACING.md, "Tried on real programs").
corotop=$1 httpd=$2 n=$3 port=$((20000 + RANDOM % 20000))
d=$(mktemp -d)
$corotop -b -f json -d 1 --output $d/out -- "$httpd" $port > $d/json 2>$d/err &
cp=$!
sleep 1.5
python3 - $port $n <<'PY'
import socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET / HTTP/1.0\r\n\r\n")
    data = b""
    while True:
        b = s.recv(4096)
        if not b: break
        data += b
    s.close()
print("%d requests answered (%d bytes last)" % (n, len(data)))
PY
sleep 7
pkill -INT -f "$httpd $port" ; wait $cp
python3 "$(dirname "$0")/snapshot_summary.py" $d/json
rm -rf $d
