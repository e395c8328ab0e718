"""Latency of making one log record durable on six files of one disk, three ways, interleaved.

Usage: python3 bench/fsync_rounds.py DIR FRAME_KIB ROUNDS
  par: a thread per file writes its frame and fdatasyncs it (threads started per round)
  seq: one thread writes and fdatasyncs each file in turn
  sfr: one thread writes all six, starts their writeback (sync_file_range), then
       fdatasyncs them in turn (what storage/src/wal.rs does)
"""
import os, time, threading, sys, random, ctypes
libc=ctypes.CDLL(None, use_errno=True)
libc.sync_file_range.argtypes=[ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
N=6; SZ=int(sys.argv[2])*1024; R=int(sys.argv[3])
d=sys.argv[1]
fds=[os.open(f"{d}/g{i}", os.O_RDWR|os.O_CREAT|os.O_TRUNC) for i in range(N)]
buf=os.urandom(SZ); off=0
def par():
    def w(f): os.pwrite(f,buf,off); os.fdatasync(f)
    th=[threading.Thread(target=w,args=(f,)) for f in fds]; [x.start() for x in th]; [x.join() for x in th]
def seq():
    for f in fds: os.pwrite(f,buf,off); os.fdatasync(f)
def sfr():
    for f in fds: os.pwrite(f,buf,off); libc.sync_file_range(f, off, SZ, 2)  # SYNC_FILE_RANGE_WRITE
    for f in fds: os.fdatasync(f)
fns={"par":par,"seq":seq,"sfr":sfr}; res={k:[] for k in fns}
for i in range(R):
    for k in random.sample(list(fns),3):
        t=time.perf_counter(); fns[k](); res[k].append(time.perf_counter()-t); off+=SZ
        time.sleep(0.002)
for k,v in res.items():
    v.sort(); n=len(v); print(f"{k} {SZ//1024}KiB: p50 {v[n//2]*1e3:.2f} p90 {v[int(n*.9)]*1e3:.2f} p99 {v[int(n*.99)]*1e3:.2f} p99.9 {v[int(n*.999)]*1e3:.2f} max {v[-1]*1e3:.2f}; >5ms {sum(x>.005 for x in v)}")
