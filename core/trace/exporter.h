/*
 * exporter.h - a worker's span exporter: a bounded buffer of finished
 * spans and one thread that sends them in batches over OTLP/HTTP. A job's
 * thread only appends to the buffer (a mutex held for a pointer store);
 * when the buffer is full the span is dropped and counted
 * (twice_spans_dropped_total{reason="buffer_full"}), so a slow or absent
 * collector never holds a job up. One exporter per process.
 */
#ifndef TWICE_EXPORTER_H
#define TWICE_EXPORTER_H

#include <stddef.h>

struct config;
struct span;

/*
 * Start exporting as c->tracing says (tracecfg.h). Call before the threads
 * that make spans start. Returns 0: tracing is off (exporter none; *desc
 * "") or on (*desc says where spans go, for the log); -1 with err when the
 * settings or the environment are wrong (tracing then stays off).
 */
int exporter_start(const struct config *c, char *desc, size_t desclen, char *err, size_t errlen);

/* 1 when spans are exported: only then are they worth making. */
int exporter_on(void);

/* Take s (owned from now on): queued for export when it is sampled, else
 * freed. Never waits for the network. */
void exporter_submit(struct span *s);

/* Send what is buffered for up to wait_ms (what is left then is dropped,
 * reason "shutdown"), stop the thread and free everything. No span may be
 * submitted after it. */
void exporter_stop(int wait_ms);

#endif
