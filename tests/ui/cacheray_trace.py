#!/usr/bin/env python3
"""cacheray_trace: deterministic Cacheray traces for the 'cacheray' UI flow.

The format (docs: ../shared/specs/cacheray-trace-format.md): no header,
native byte order, records written field by field.  READ/WRITE are 18
bytes (type, address u64, size u8, thread u64), RTTA_ADD 29 plus the
typename (type, address, thread, elemsize u32, elemcount u32, length u32,
name), RTTA_REMOVE 17 (type, address, thread).

    cacheray_trace.py main|bad|demo FILE    write a trace

(demo: a larger trace of four threads for scripts/screenshots.)

FIXTURE is the main trace as a list of records, each one bytes object, so
that a flow can write part of it (the FIFO step) and know the counts of
what it wrote.  What it holds, and the counts the screens must show:

  struct counter[8] at 0x10000 (16-byte elements, lines 0x10000, 0x10040)
    thread 1 writes counter[0].hits (+0, 8 bytes)           x40
    thread 2 writes counter[1].hits (+0 of element 1)       x30
    thread 2 reads  counter[1].misses (+8 of element 1)     x10
      -> line 0x10000: 80 accesses, two threads that both wrote, bytes
         0-7 and 16-31: disjoint (false sharing), diff-elements
    thread 1 atomic read-modify-write on counter[4].hits    x5 (10 atomics)
    thread 2 unaligned write of 4 bytes at counter[4] + 3   x2
      -> line 0x10040: 12 accesses, bytes 0-7 and 3-6: overlap
  struct node (32 bytes) at 0x20000: added, read x3 by thread 1, removed,
    read x1 (untyped now), added again (regions 2), written (+8) x2
  thread 1 reads the stack at 0x30000                       x4 (untyped)

  records 106: accesses 102 (reads 23, writes 79), RTTA adds 3, removes 1
  (live 2); atomics 10 (5 pairs), unaligned 2, untyped 5; 1976 bytes.
"""
import struct
import sys

READ, WRITE, ADD, REMOVE = 0x00, 0x01, 0x02, 0x03
ATOMIC, UNALIGNED = 0x40, 0x80


def access(kind, addr, size, tid):
    return struct.pack('=BQBQ', kind, addr, size, tid)


def add(addr, elemsize, count, name, tid=0):
    b = name.encode()
    return struct.pack('=BQQIII', ADD, addr, tid, elemsize, count,
                       len(b)) + b


def remove(addr, tid=0):
    return struct.pack('=BQQ', REMOVE, addr, tid)


def fixture():
    r = [add(0x10000, 16, 8, 'struct counter')]
    r += [access(WRITE, 0x10000, 8, 1)] * 40
    r += [access(WRITE, 0x10010, 8, 2)] * 30
    r += [access(READ, 0x10018, 8, 2)] * 10
    r += [access(READ | ATOMIC, 0x10040, 8, 1),
          access(WRITE | ATOMIC, 0x10040, 8, 1)] * 5
    r += [access(WRITE | UNALIGNED, 0x10043, 4, 2)] * 2
    r += [add(0x20000, 32, 1, 'struct node')]
    r += [access(READ, 0x20000, 8, 1)] * 3
    r += [remove(0x20000)]
    r += [access(READ, 0x20000, 8, 1)]
    r += [add(0x20000, 32, 1, 'struct node')]
    r += [access(WRITE, 0x20008, 8, 1)] * 2
    r += [access(READ, 0x30000, 8, 1)] * 4
    return r


FIXTURE = fixture()
FIXTURE_BYTES = b''.join(FIXTURE)


def records_in(nbytes):
    """Complete records of FIXTURE in its first nbytes bytes."""
    n = done = 0
    for rec in FIXTURE:
        if done + len(rec) > nbytes:
            break
        done += len(rec)
        n += 1
    return n


def bad():
    """What the shipped runtime writes (thread id 0 everywhere), then a
    record of unknown type 0x07: the reader stops at its offset, BAD_AT."""
    r = [add(0x40000, 8, 4, 'long')]
    r += [access(WRITE, 0x40000 + 8 * i, 8, 0) for i in range(4)]
    r += [access(READ, 0x40008, 8, 0)] * 2
    good = b''.join(r)
    return good + bytes([0x07]) + b'\0' * 17 + access(READ, 0x40000, 8, 0)


BAD_BYTES = bad()
BAD_AT = 29 + 4 + 6 * 18   # add 'long' (33 bytes), then 6 accesses: 141


def demo():
    """Four threads of a job queue (deterministic): per-thread counters
    packed in one array (false sharing), padded per-thread stats (none),
    jobs swept by every thread, nodes allocated and freed, stack traffic."""
    import random
    rnd = random.Random(7)
    r = [add(0x7f3a10000, 16, 4, 'struct worker_counter'),
         add(0x7f3a20000, 64, 4, 'struct worker_stats'),
         add(0x7f3a40000, 48, 256, 'struct job'),
         add(0x7f3a80000, 8, 512, 'uint64_t')]
    live = []
    for step in range(4000):
        tid = 1 + step % 4
        c = 0x7f3a10000 + 16 * (tid - 1)
        r += [access(READ | ATOMIC, c, 8, tid), access(WRITE | ATOMIC, c, 8, tid)]
        r.append(access(WRITE, 0x7f3a20000 + 64 * (tid - 1) + 8, 8, tid))
        job = 0x7f3a40000 + 48 * rnd.randrange(256)
        r += [access(READ, job + off, 8, tid) for off in (0, 8, 16)]
        if rnd.random() < 0.3:
            r.append(access(WRITE, job + 40, 4, tid))
        r.append(access(READ, 0x7f3a80000 + 8 * rnd.randrange(512), 8, tid))
        r += [access(WRITE, 0x7ffd0000 - 0x10000 * tid - 8 * k, 8, tid)
              for k in range(2)]
        if rnd.random() < 0.02:
            r.append(access(READ | UNALIGNED, job + 3, 8, tid))
        if step % 16 == 0:
            a = 0x55d000000 + 64 * rnd.randrange(4096)
            if a not in live:
                r.append(add(a, 32, 1, 'struct node', tid))
                live.append(a)
        if live and step % 16 == 8:
            a = live.pop(rnd.randrange(len(live)))
            r += [access(READ, a + 8, 8, tid), access(WRITE, a, 8, tid)]
            r.append(remove(a, tid))
    return b''.join(r)


def main(argv):
    what = {'main': lambda: FIXTURE_BYTES, 'bad': lambda: BAD_BYTES,
            'demo': demo}
    if len(argv) != 3 or argv[1] not in what:
        sys.stderr.write('usage: cacheray_trace.py main|bad|demo FILE\n')
        return 2
    with open(argv[2], 'wb') as f:
        f.write(what[argv[1]]())
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
