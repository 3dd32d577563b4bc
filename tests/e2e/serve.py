#!/usr/bin/env python3
"""serve.py: corotop serve held to its real consumers.

  serve.py format COROTOP DEMO      corotop serve -- DEMO on a free loopback
      port: /metrics without Accept is Prometheus 0.0.4 text, parsed by the
      prometheus_client text parser and passed by `promtool check metrics`;
      with Accept: application/openmetrics-text (alone, or as Prometheus
      sends it) it is OpenMetrics 1.0.0, parsed by prometheus_client's
      strict OpenMetrics parser and ending in "# EOF"; every family has HELP
      and TYPE; /healthz is 200, /snapshot is batch mode's JSON object;
      other paths 404, POST 405 with Allow; slow clients that send nothing
      or half a request, and an oversized request, do not stop another
      scrape; SIGTERM stops corotop (128 + 15) and the demo with it.
  serve.py final COROTOP DEMO       the demo exits by itself: serve keeps
      serving its final state (corotop_target_up 0, the exit status) and
      /healthz 200 until SIGTERM, then exits with the demo's status.
  serve.py dashboard COROTOP DEMO   docs/grafana-corotop.json's queries
      (Grafana is not packaged here): each parses (promtool check rules,
      as recording rules) and names only documented families
      (docs/METRICS.md), which a scrape of serve -- DEMO exports (all but
      those that need attach mode or an exited target).
  serve.py prometheus COROTOP DEMO  Debian's prometheus scrapes corotop
      serve -- DEMO every second (temporary config and storage, loopback
      ports); its HTTP API is asked until corotop_coroutines{state=
      "suspended"} > 0 and corotop_lints{kind="lost_wakeup"} is 3 (the
      demo's 3 stuck coroutines, flagged after 5 s); both stop cleanly.

Every wait has a deadline; nothing asserts how fast anything ran.  Exit 77
(meson: skipped) with the reason when a consumer is not installed
(python3-prometheus-client, prometheus for promtool and the server).
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

# Debian's python3-prometheus-client lives in the system interpreter's
# dist-packages; a python3 of another installation first on PATH lacks it.
try:
    import prometheus_client  # noqa: F401
except ImportError:
    if os.path.exists('/usr/bin/python3') and \
            os.path.realpath(sys.executable) != \
            os.path.realpath('/usr/bin/python3') and \
            not os.environ.get('SERVE_PY_REEXEC'):
        os.environ['SERVE_PY_REEXEC'] = '1'
        os.execv('/usr/bin/python3', ['/usr/bin/python3'] + sys.argv)
    print('serve.py: SKIP: prometheus_client is not installed '
          '(apt-get install python3-prometheus-client)')
    sys.exit(77)

from prometheus_client.openmetrics.parser import \
    text_string_to_metric_families as parse_openmetrics  # noqa: E402
from prometheus_client.parser import \
    text_string_to_metric_families as parse_prometheus  # noqa: E402

OM_TYPE = 'application/openmetrics-text; version=1.0.0; charset=utf-8'
P4_TYPE = 'text/plain; version=0.0.4; charset=utf-8'
# What Prometheus 2.x sends.
PROMETHEUS_ACCEPT = ('application/openmetrics-text;version=1.0.0,'
                     'application/openmetrics-text;version=0.0.1;q=0.75,'
                     'text/plain;version=0.0.4;q=0.5,*/*;q=0.1')
# batch mode's JSON object (docs/JSON.md), every snapshot.
SNAPSHOT_KEYS = {'ts', 'wall_ns', 'stations', 'events', 'engine', 'target',
                 'counts', 'warnings', 'coroutines', 'calltrace',
                 'hot_stacks', 'ppt', 'replay'}


def fail(msg):
    print('serve.py: FAIL: ' + msg, file=sys.stderr)
    sys.exit(1)


def skip(msg):
    print('serve.py: SKIP: ' + msg)
    sys.exit(77)


class Serve:
    """corotop serve ARGS -- DEMO DEMO_ARGS on 127.0.0.1:0."""

    def __init__(self, corotop, demo, demo_args, tmp, opts=()):
        self.err_path = os.path.join(tmp, 'serve.err')
        self.err = open(self.err_path, 'w+')
        self.proc = subprocess.Popen(
            [corotop, 'serve', '--listen', '127.0.0.1:0'] + list(opts) +
            ['--', demo] + demo_args, stdout=subprocess.DEVNULL,
            stderr=self.err,
            stdin=subprocess.DEVNULL)
        self.port = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            m = re.search(r'listening on https?://[0-9.]+:(\d+)/',
                          self.stderr())
            if m:
                self.port = int(m.group(1))
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        fail('no "listening on" line from corotop serve: ' + self.stderr())

    def stderr(self):
        with open(self.err_path) as f:
            return f.read()

    def url(self, path):
        return 'http://127.0.0.1:%d%s' % (self.port, path)

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            fail('corotop serve did not stop within %d s of signal %d'
                 % (timeout, sig))


def get(url, accept=None, method='GET', data=None, timeout=20):
    """(status, headers, body) of one request."""
    req = urllib.request.Request(url, method=method, data=data)
    if accept is not None:
        req.add_header('Accept', accept)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def check_help_type(text, openmetrics):
    """Every sample's family has exactly one HELP and one TYPE before it."""
    helps, types = {}, {}
    for line in text.splitlines():
        if line.startswith('# HELP '):
            name = line.split()[2]
            helps[name] = helps.get(name, 0) + 1
        elif line.startswith('# TYPE '):
            name, typ = line.split()[2], line.split()[3]
            types[name] = types.get(name, 0) + 1
            if openmetrics and typ == 'counter' and name.endswith('_total'):
                fail('OpenMetrics counter family named with _total: ' + line)
            if not openmetrics and typ == 'counter' and \
                    not name.endswith('_total'):
                fail('0.0.4 counter without _total: ' + line)
        elif line and not line.startswith('#'):
            sample = re.match(r'[a-zA-Z_:][a-zA-Z0-9_:]*', line).group(0)
            fam = [n for n in types
                   if sample == n or (sample.startswith(n + '_') and
                                      sample[len(n):] in (
                                          '_total', '_bucket', '_count',
                                          '_sum', '_gcount', '_gsum'))]
            if not fam:
                fail('sample before its TYPE: ' + line)
    for name in set(helps) | set(types):
        if helps.get(name) != 1 or types.get(name) != 1:
            fail('family %s: %d HELP, %d TYPE' %
                 (name, helps.get(name, 0), types.get(name, 0)))
    if not types:
        fail('no families at all')


def metric_value(families, name, labels):
    for fam in families:
        for s in fam.samples:
            if s.name == name and all(s.labels.get(k) == v
                                      for k, v in labels.items()):
                return s.value
    return None


def promtool_check(text):
    promtool = shutil.which('promtool')
    if not promtool:
        skip('promtool is not installed (apt-get install prometheus)')
    r = subprocess.run([promtool, 'check', 'metrics'], input=text.encode(),
                       capture_output=True, timeout=60)
    if r.returncode != 0:
        fail('promtool check metrics: ' + (r.stdout + r.stderr).decode())


def wait_metrics(serve, what, cond, deadline_s=60, accept=OM_TYPE):
    deadline = time.monotonic() + deadline_s
    text = ''
    while time.monotonic() < deadline:
        status, _, body = get(serve.url('/metrics'), accept=accept)
        if status == 200:
            text = body.decode()
            fams = list(parse_openmetrics(text))
            if cond(fams):
                return fams
        time.sleep(0.2)
    fail('no %s within %d s; last scrape:\n%s' % (what, deadline_s, text))


def slow_clients(serve, n):
    """n connections: half send nothing, half a partial request line."""
    socks = []
    for i in range(n):
        s = socket.create_connection(('127.0.0.1', serve.port), timeout=10)
        if i % 2:
            s.sendall(b'GET /met')
        socks.append(s)
    return socks


def test_format(corotop, demo):
    with tempfile.TemporaryDirectory(prefix='corotop-serve.') as tmp:
        serve = Serve(corotop, demo, ['-d', '0'], tmp)
        try:
            wait_metrics(serve, 'suspended coroutines', lambda f: (metric_value(
                f, 'corotop_coroutines', {'state': 'suspended'}) or 0) > 0)
            # Prometheus 0.0.4 text: no Accept, text/plain, */*.
            for accept in (None, 'text/plain', '*/*'):
                status, hdr, body = get(serve.url('/metrics'), accept)
                if status != 200 or hdr['Content-Type'] != P4_TYPE:
                    fail('Accept %r: %d %s' % (accept, status,
                                               hdr['Content-Type']))
            text = body.decode()
            fams = list(parse_prometheus(text))
            check_help_type(text, openmetrics=False)
            promtool_check(text)
            if text.rstrip().endswith('# EOF'):
                fail('0.0.4 text ends with # EOF')
            names = {f.name for f in fams}
            for want in ('corotop_coroutines', 'corotop_lints',
                         'corotop_events_harvested', 'corotop_switches',
                         'corotop_coroutine_state_seconds',
                         'corotop_suspended_where', 'corotop_target_up'):
                if want not in names:
                    fail('0.0.4: no family ' + want)
            # OpenMetrics: asked alone, and as Prometheus asks.
            for accept in ('application/openmetrics-text', PROMETHEUS_ACCEPT):
                status, hdr, body = get(serve.url('/metrics'), accept)
                if status != 200 or hdr['Content-Type'] != OM_TYPE:
                    fail('Accept %r: %d %s' % (accept, status,
                                               hdr['Content-Type']))
            text = body.decode()
            if not text.endswith('# EOF\n'):
                fail('OpenMetrics text does not end with "# EOF"')
            fams = list(parse_openmetrics(text))
            check_help_type(text, openmetrics=True)
            types = {f.name: f.type for f in fams}
            if types.get('corotop_coroutine_state_seconds') != \
                    'gaugehistogram':
                fail('corotop_coroutine_state_seconds is %r' %
                     types.get('corotop_coroutine_state_seconds'))
            if types.get('corotop_events_harvested') != 'counter':
                fail('corotop_events_harvested is not a counter')
            print('serve.py: /metrics: %d families, 0.0.4 and OpenMetrics '
                  'parsed, promtool passed' % len(fams))

            # HEAD: the headers of GET, no body.
            status, hdr, body = get(serve.url('/metrics'), method='HEAD')
            if status != 200 or body:
                fail('HEAD /metrics: %d, %d bytes' % (status, len(body)))
            # /healthz and /snapshot.
            status, _, body = get(serve.url('/healthz'))
            if status != 200:
                fail('/healthz: %d %r' % (status, body))
            status, hdr, body = get(serve.url('/snapshot'))
            if status != 200 or hdr['Content-Type'] != 'application/json':
                fail('/snapshot: %d %s' % (status, hdr['Content-Type']))
            snap = json.loads(body)
            missing = SNAPSHOT_KEYS - set(snap)
            if missing:
                fail('/snapshot lacks ' + ', '.join(sorted(missing)))
            if not snap['coroutines'] or not snap['target']['running']:
                fail('/snapshot: no coroutines, or the target not running')
            demo_pid = snap['target']['pid']
            # Nothing else is reachable.
            for path in ('/', '/nope', '/metrics/', '/metrics/../healthz',
                         '/../../etc/passwd', '/snapshot.json', '//metrics'):
                status, _, _ = get(serve.url(path))
                if status != 404:
                    fail('GET %s: %d, not 404' % (path, status))
            for method in ('POST', 'PUT', 'DELETE'):
                status, hdr, _ = get(serve.url('/metrics'), method=method,
                                     data=b'x' if method != 'DELETE'
                                     else None)
                if status != 405 or hdr['Allow'] != 'GET, HEAD':
                    fail('%s /metrics: %d, Allow %r' %
                         (method, status, hdr['Allow']))
            # Slow clients hold only their own connection.
            socks = slow_clients(serve, 8)
            for path in ('/metrics', '/snapshot', '/healthz'):
                status, _, _ = get(serve.url(path), timeout=10)
                if status != 200:
                    fail('%s with 8 slow clients: %d' % (path, status))
            # An oversized request is refused and closed; the next works.
            big = socket.create_connection(('127.0.0.1', serve.port),
                                           timeout=10)
            try:
                big.sendall(b'GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ' +
                            b'a' * 65536 + b'\r\n\r\n')
                reply = big.recv(4096)
            except (ConnectionResetError, BrokenPipeError):
                reply = b''
            big.close()
            if reply.startswith(b'HTTP/1.1 200'):
                fail('a 64 KiB header was served: %r' % reply[:80])
            status, _, _ = get(serve.url('/metrics'), timeout=10)
            if status != 200:
                fail('/metrics after an oversized request: %d' % status)
            # Pipelined: the first answer, closing (docs/METRICS.md).
            pipe = socket.create_connection(('127.0.0.1', serve.port),
                                            timeout=10)
            pipe.sendall(b'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n' * 2)
            reply = b''
            while True:
                chunk = pipe.recv(65536)
                if not chunk:
                    break
                reply += chunk
            pipe.close()
            if reply.count(b'HTTP/1.1 ') != 1 or \
                    b'Connection: close' not in reply:
                fail('two pipelined requests: want one answer with '
                     'Connection: close, got %r' % reply[:300])
            for s in socks:
                s.close()
            print('serve.py: /healthz, /snapshot, 404, 405, slow, '
                  'oversized and pipelining clients: ok')
        finally:
            rc = serve.stop()
        if rc != 128 + signal.SIGTERM:
            fail('corotop serve exited %d after SIGTERM, not 143: %s'
                 % (rc, serve.stderr()))
        if os.path.exists('/proc/%d' % demo_pid):
            fail('the demo (pid %d) outlived corotop serve' % demo_pid)
        print('serve.py: format: ok')


def test_final(corotop, demo):
    with tempfile.TemporaryDirectory(prefix='corotop-serve.') as tmp:
        serve = Serve(corotop, demo, ['-d', '2', '-c', '50'], tmp)
        try:
            fams = wait_metrics(
                serve, 'corotop_target_up 0',
                lambda f: metric_value(f, 'corotop_target_up', {}) == 0)
            status = metric_value(fams, 'corotop_target_exit_status', {})
            if status != 0:
                fail('corotop_target_exit_status %r, not 0' % status)
            # Still serving after the target exited, and healthy.
            status, _, _ = get(serve.url('/healthz'))
            if status != 200:
                fail('/healthz after the target exited: %d' % status)
            status, _, body = get(serve.url('/snapshot'))
            snap = json.loads(body)
            if status != 200 or snap['target']['exit_status'] != 0:
                fail('/snapshot after the exit: %d %r' %
                     (status, snap['target']))
            if 'serving its final state' not in serve.stderr():
                fail('no word of the exit on stderr: ' + serve.stderr())
        finally:
            rc = serve.stop()
        if rc != 0:
            fail('corotop serve exited %d, not the demo\'s 0' % rc)
        print('serve.py: final: ok')


def free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Prometheus:
    """Debian's prometheus scraping one corotop serve job, configured by
    `scrape` (the job's YAML lines after job_name, indented 4), its query
    API on a free port of 127.0.0.1."""

    def __init__(self, binary, tmp, scrape):
        conf = os.path.join(tmp, 'prometheus.yml')
        with open(conf, 'w') as f:
            f.write('global:\n  scrape_interval: 1s\n'
                    '  evaluation_interval: 1s\n'
                    'scrape_configs:\n  - job_name: corotop\n'
                    '    scrape_interval: 1s\n    scrape_timeout: 1s\n' +
                    scrape)
        self.port = free_port()
        self.log = open(os.path.join(tmp, 'prometheus.log'), 'w+')
        self.proc = subprocess.Popen(
            [binary, '--config.file=' + conf,
             '--storage.tsdb.path=' + os.path.join(tmp, 'data'),
             '--web.listen-address=127.0.0.1:%d' % self.port],
            stdout=self.log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL)

    def until(self, want, timeout=90):
        """{query: predicate of its first value}: the values once every
        predicate held, within timeout (fails otherwise)."""
        api = 'http://127.0.0.1:%d/api/v1/query?query=' % self.port
        got = {}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and len(got) < len(want):
            if self.proc.poll() is not None:
                self.log.seek(0)
                fail('prometheus exited %d:\n%s' % (self.proc.returncode,
                                                    self.log.read()[-3000:]))
            for q, ok in want.items():
                try:
                    status, _, body = get(
                        api + urllib.request.quote(q), timeout=5)
                except (urllib.error.URLError, ConnectionError,
                        socket.timeout):
                    break  # not listening yet
                if status != 200:
                    continue
                res = json.loads(body)['data']['result']
                if res and ok(float(res[0]['value'][1])):
                    got[q] = res[0]['value'][1]
            time.sleep(0.5)
        if len(got) < len(want):
            status, _, body = get('http://127.0.0.1:%d/api/v1/targets'
                                  % self.port, timeout=5)
            fail('Prometheus did not see %s within %d s (seen %r); '
                 'targets: %s' % (set(want) - set(got), timeout, got,
                                  body[:2000].decode()))
        return got

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                fail('prometheus did not stop within 30 s of SIGTERM')


def test_prometheus(corotop, demo):
    prometheus = shutil.which('prometheus')
    if not prometheus:
        skip('prometheus is not installed (apt-get install prometheus)')
    with tempfile.TemporaryDirectory(prefix='corotop-prom.') as tmp:
        serve = Serve(corotop, demo, ['-d', '0'], tmp)
        prom = None
        try:
            prom = Prometheus(prometheus, tmp,
                              '    static_configs:\n'
                              '      - targets: ["127.0.0.1:%d"]\n'
                              % serve.port)
            got = prom.until({
                'corotop_coroutines{state="suspended"}': lambda v: v > 0,
                'corotop_lints{kind="lost_wakeup"}': lambda v: v == 3,
            })
            print('serve.py: prometheus: ' + ', '.join(
                '%s = %s' % kv for kv in sorted(got.items())))
        finally:
            if prom:
                prom.stop()
            rc = serve.stop()
        if rc != 128 + signal.SIGTERM:
            fail('corotop serve exited %d after SIGTERM' % rc)
        print('serve.py: prometheus: ok')


DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..',
                    'docs')
HIST_SUFFIXES = ('_bucket', '_gcount', '_gsum', '_count', '_sum')
# Documented families a launched demo's scrape does not have.
CONDITIONAL = {'corotop_target_exit_status', 'corotop_ppt_attached'}


def documented_families():
    names = set()
    with open(os.path.join(DOCS, 'METRICS.md')) as f:
        for line in f:
            m = re.match(r'\| `(corotop_[a-z_]+)` \|', line)
            if m:
                names.add(m.group(1))
    if len(names) < 20:
        fail('docs/METRICS.md lists only %d families' % len(names))
    return names


def dashboard_queries():
    with open(os.path.join(DOCS, 'grafana-corotop.json')) as f:
        dash = json.load(f)
    exprs = [t['expr'] for p in dash['panels'] for t in p['targets']]
    templ = [v['query']['query'] for v in dash['templating']['list']]
    return exprs, templ


def family_of(name, documented):
    if name in documented:
        return name
    for suffix in HIST_SUFFIXES:
        if name.endswith(suffix) and name[:-len(suffix)] in documented:
            return name[:-len(suffix)]
    return None


def test_dashboard(corotop, demo):
    promtool = shutil.which('promtool')
    if not promtool:
        skip('promtool is not installed (apt-get install prometheus)')
    documented = documented_families()
    exprs, templ = dashboard_queries()
    if len(exprs) < 10:
        fail('the dashboard has only %d queries' % len(exprs))
    used = set()
    for q in exprs + templ:
        names = re.findall(r'\bcorotop_[a-z_]+\b', q)
        if not names:
            fail('a query names no corotop metric: ' + q)
        for n in names:
            fam = family_of(n, documented)
            if not fam:
                fail('%s in %r is not a documented family' % (n, q))
            used.add(fam)
    with tempfile.TemporaryDirectory(prefix='corotop-dash.') as tmp:
        rules = os.path.join(tmp, 'rules.yml')
        with open(rules, 'w') as f:
            f.write('groups:\n  - name: dashboard\n    rules:\n')
            for i, q in enumerate(exprs):
                f.write('      - record: corotop_dashboard:query_%d\n'
                        '        expr: %s\n' %
                        (i, json.dumps(q.replace('$instance', '.*'))))
        r = subprocess.run([promtool, 'check', 'rules', rules],
                           capture_output=True, timeout=60)
        if r.returncode != 0:
            fail('promtool check rules: ' + (r.stdout + r.stderr).decode())
        # What the dashboard and the docs name, a scrape has.
        serve = Serve(corotop, demo, ['-d', '0'], tmp)
        try:
            fams = wait_metrics(serve, 'suspended coroutines', lambda f: (
                metric_value(f, 'corotop_coroutines',
                             {'state': 'suspended'}) or 0) > 0)
        finally:
            serve.stop()
    scraped = {f.name + ('_total' if f.type == 'counter' else '')
               for f in fams}
    if scraped - documented:
        fail('exported but not in docs/METRICS.md: ' +
             ', '.join(sorted(scraped - documented)))
    missing = documented - scraped - CONDITIONAL - {
        n for n in documented if n.startswith('corotop_ppt_')}
    if missing:
        fail('documented but not exported: ' + ', '.join(sorted(missing)))
    print('serve.py: dashboard: %d queries parse and name %d documented '
          'families; %d families scraped, all documented'
          % (len(exprs), len(used), len(scraped)))


def test_slow(corotop, demo):
    """Slow clients: 200 connections from 127.0.0.2-5 (more than the
    64 serve keeps at once), each sending one header line every 4 s and
    reconnecting when shut, for a minute.  Meanwhile a /healthz from
    127.0.0.1 every second must be answered, 200, within 2 s: 60 of 60.
    Before the gate, libmicrohttpd's limits were full and honest scrapes
    were refused."""
    import threading
    attackers = [('127.0.0.%d' % (2 + i % 4)) for i in range(200)]
    stop = threading.Event()
    opened = [0]

    with tempfile.TemporaryDirectory(prefix='corotop-serve.') as tmp:
        serve = Serve(corotop, demo, ['-d', '0'], tmp)

        def connect(src):
            try:
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.settimeout(2)
                s.bind((src, 0))
                s.connect(('127.0.0.1', serve.port))
                s.sendall(b'GET /metrics HTTP/1.1\r\n')
                opened[0] += 1
                return s
            except OSError:
                return None

        def attack():
            socks = [connect(a) for a in attackers]
            last = time.monotonic()
            while not stop.is_set():
                stop.wait(0.25)
                dribble = time.monotonic() - last >= 4
                if dribble:
                    last = time.monotonic()
                for i, s in enumerate(socks):
                    if s is not None and dribble:
                        try:
                            s.sendall(b'X-Slow: 1\r\n')
                        except OSError:
                            s.close()
                            s = socks[i] = None
                    if s is None:
                        socks[i] = connect(attackers[i])
            for s in socks:
                if s is not None:
                    s.close()

        th = threading.Thread(target=attack)
        th.start()
        answered, slowest = 0, 0.0
        try:
            time.sleep(2)  # every attack connection open
            for probe in range(60):
                t0 = time.monotonic()
                try:
                    status, _, _ = get(serve.url('/healthz'), timeout=2)
                except OSError:
                    status = 0
                took = time.monotonic() - t0
                if status == 200 and took <= 2:
                    answered += 1
                slowest = max(slowest, took)
                time.sleep(max(0.0, 1 - took))
        finally:
            stop.set()
            th.join()
            serve.stop()
        print('serve.py: slow: %d of 60 /healthz answered within 2 s '
              '(slowest %.3f s) under %d attack connections opened'
              % (answered, slowest, opened[0]))
        if answered != 60:
            fail('%d of 60 honest /healthz answered within 2 s'
                 % answered)


def rss_kib(pid):
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    return 0


def test_memory(corotop, demo):
    """30,000 coroutines (10,000 parked for good); 60 clients ask for
    /snapshot and never read.  corotop serve's RSS may grow by at most
    twice one /snapshot body plus 50 MB (each client held a rendered copy
    of its own: +550 MB here, 1.39 GB for 60,000 coroutines)."""
    with tempfile.TemporaryDirectory(prefix='corotop-serve.') as tmp:
        serve = Serve(corotop, demo, ['-c', '30000', '--stuck', '10000',
                                      '--spawn-rate', '0'], tmp,
                      ['--stations', '65536'])
        socks = []
        try:
            body = b''
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                status, _, body = get(serve.url('/snapshot'), timeout=60)
                if status == 200 and body.count(b'"probe_id"') >= 29000:
                    break
                time.sleep(0.5)
            else:
                fail('/snapshot never listed 29000 coroutines')
            # A few refreshes with one reader, for the baseline.
            for _ in range(3):
                get(serve.url('/snapshot'), timeout=60)
                time.sleep(1)
            base = rss_kib(serve.proc.pid)
            for _ in range(60):
                s = socket.create_connection(('127.0.0.1', serve.port),
                                             timeout=10)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                s.sendall(b'GET /snapshot HTTP/1.1\r\nHost: x\r\n\r\n')
                socks.append(s)
                time.sleep(0.1)  # across refreshes
            time.sleep(5)
            peak = rss_kib(serve.proc.pid)
        finally:
            for s in socks:
                s.close()
            serve.stop()
        grew = (peak - base) / 1024.0
        limit = 2 * len(body) / 1048576.0 + 50
        print('serve.py: memory: /snapshot %.1f MB; RSS %.0f -> %.0f MB '
              '(+%.1f MB, limit %.1f) with 60 clients not reading'
              % (len(body) / 1048576.0, base / 1024.0, peak / 1024.0, grew,
                 limit))
        if grew > limit:
            fail('RSS grew %.1f MB, more than %.1f' % (grew, limit))


def bcrypt(password):
    """A bcrypt hash by the system's crypt(3), as htpasswd -B makes."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)
        try:
            import crypt
        except ImportError:
            skip('no crypt module to make a bcrypt hash')
    h = crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 6))
    if not h or not h.startswith('$2'):
        skip('crypt(3) makes no bcrypt hash here')
    return h


def test_tls(corotop, demo):
    """--web-config: TLS and basic auth as the Prometheus exporters read
    them.  Without credentials, or with wrong ones: 401; with them: 200,
    through TLS.  Debian's prometheus scrapes it with tls_config and
    basic_auth in its scrape_config and sees it up.  A non-loopback
    address serves only with the file, and with TLS unless the file says
    allow_plaintext."""
    import ssl
    import base64
    prometheus = shutil.which('prometheus')
    openssl = shutil.which('openssl')
    if not openssl:
        skip('openssl is not installed')
    with tempfile.TemporaryDirectory(prefix='corotop-tls.') as tmp:
        cert = os.path.join(tmp, 'cert.pem')
        key = os.path.join(tmp, 'key.pem')
        subprocess.run([openssl, 'req', '-x509', '-newkey', 'rsa:2048',
                        '-nodes', '-keyout', key, '-out', cert, '-days', '2',
                        '-subj', '/CN=127.0.0.1', '-addext',
                        'subjectAltName=IP:127.0.0.1,DNS:localhost'],
                       check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        web = os.path.join(tmp, 'web.yml')
        with open(web, 'w') as f:
            f.write('tls_server_config:\n  cert_file: cert.pem\n'
                    '  key_file: key.pem\nbasic_auth_users:\n'
                    '  prom: %s\n' % bcrypt('s3cret'))
        users_only = os.path.join(tmp, 'users.yml')
        with open(users_only, 'w') as f:
            f.write('basic_auth_users:\n  prom: %s\n' % bcrypt('s3cret'))
        # Not loopback: refused without TLS, served with it.
        r = subprocess.run([corotop, 'serve', '--listen', '0.0.0.0:0',
                            '--web-config', users_only, '--', 'true'],
                           capture_output=True, timeout=60)
        if r.returncode != 2 or b'allow_plaintext' not in r.stderr:
            fail('users only on 0.0.0.0: exit %d, %r' % (r.returncode,
                                                         r.stderr))
        wide = Serve(corotop, demo, ['-d', '0'], tmp,
                     ['--listen', '0.0.0.0:0', '--web-config', web])
        if 'listening on https://0.0.0.0:' not in wide.stderr():
            fail('0.0.0.0 with TLS: ' + wide.stderr())
        wide.stop()
        serve = Serve(corotop, demo, ['-d', '0'], tmp,
                      ['--web-config', web])
        prom = None
        try:
            ctx = ssl.create_default_context(cafile=cert)
            url = 'https://127.0.0.1:%d/metrics' % serve.port

            def fetch(auth):
                req = urllib.request.Request(url)
                if auth:
                    req.add_header('Authorization', 'Basic ' +
                                   base64.b64encode(auth).decode())
                try:
                    with urllib.request.urlopen(req, timeout=20,
                                                context=ctx) as resp:
                        return resp.status, resp.headers
                except urllib.error.HTTPError as e:
                    return e.code, e.headers

            status, hdr = fetch(None)
            if status != 401 or 'Basic' not in \
                    (hdr.get('WWW-Authenticate') or ''):
                fail('no credentials: %d %r' % (status, dict(hdr)))
            status, _ = fetch(b'prom:wrong')
            if status != 401:
                fail('wrong password: %d' % status)
            status, _ = fetch(b'nobody:s3cret')
            if status != 401:
                fail('unknown user: %d' % status)
            status, _ = fetch(b'prom:s3cret')
            if status != 200:
                fail('right credentials: %d' % status)
            print('serve.py: tls: 401 without, with wrong credentials and '
                  'an unknown user; 200 with them, over TLS')
            if not prometheus:
                skip('prometheus is not installed (apt-get install '
                     'prometheus)')
            prom = Prometheus(prometheus, tmp,
                              '    scheme: https\n'
                              '    tls_config:\n      ca_file: %s\n'
                              '    basic_auth:\n      username: prom\n'
                              '      password: s3cret\n'
                              '    static_configs:\n'
                              '      - targets: ["127.0.0.1:%d"]\n'
                              % (cert, serve.port))
            q = 'corotop_coroutines{state="suspended"}'
            seen = prom.until({q: lambda v: v > 0})[q]
            print('serve.py: tls: prometheus scraped through TLS with basic '
                  'auth: %s = %s' % (q, seen))
        finally:
            if prom:
                prom.stop()
            serve.stop()


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    mode, corotop, demo = sys.argv[1:]
    {'format': test_format, 'final': test_final, 'dashboard': test_dashboard,
     'prometheus': test_prometheus, 'slow': test_slow,
     'memory': test_memory, 'tls': test_tls}[mode](corotop, demo)


if __name__ == '__main__':
    main()
