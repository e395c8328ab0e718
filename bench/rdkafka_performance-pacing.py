"""Patch librdkafka's examples/rdkafka_performance.c so that -r paces against a schedule.

Upstream -r busy-polls between every two messages (rd_kafka_poll with a 0 ms timeout
until the next message is due), which at 50k+ msgs/s keeps a core spinning per producer
and, on a 2-core machine, starves the broker under test. This keeps the same rate but
sleeps in rd_kafka_poll whenever the producer is 1 ms or more ahead of its schedule
(t_start + n / rate), so messages go out in bursts of at most ~1 ms. Idempotent.
Usage: python3 rdkafka_performance-pacing.py path/to/rdkafka_performance.c
"""
import sys

path = sys.argv[1]
src = open(path).read()
MARK = "/* paced: bench/kafka.sh */"
if MARK in src:
    sys.exit(0)
old = """                        if (rate_sleep) {
                                rd_ts_t next = rd_clock() + (rd_ts_t)rate_sleep;
                                do {
                                        rd_kafka_poll(
                                            rk,
                                            (int)RD_MAX(0, (next - rd_clock()) /
                                                               1000));
                                } while (next > rd_clock());
                        }"""
new = """                        if (rate_sleep) { """ + MARK + """
                                rd_ts_t due = cnt.t_start +
                                    (rd_ts_t)((double)cnt.msgs * 1000000.0 / rate_per_sec);
                                rd_ts_t now2 = rd_clock();
                                if (due > now2 + 1000)
                                        rd_kafka_poll(rk, (int)((due - now2) / 1000));
                                else if (cnt.msgs % 64 == 0)
                                        rd_kafka_poll(rk, 0);
                        }"""
assert old in src, "rate loop not found"
src = src.replace(old, new)
old2 = "                        rate_sleep = (int)(1000000.0 / dtmp);"
assert old2 in src, "rate option not found"
src = src.replace(old2, old2 + "\n                        rate_per_sec = dtmp;")
src = src.replace("        int rate_sleep = 0;", "        int rate_sleep = 0;\n        double rate_per_sec = 1.0;")
open(path, "w").write(src)
