/*
 * jobspan.h - a job's span from receive to acknowledgement (trace/span.h):
 * begun by the receiver with the message's context, marked by each
 * verdict (claimed, duplicate, retry, dead letter...), ended and handed to
 * the exporter when the acker finishes the job. With tracing off every
 * call returns at once and no span exists. Not the exporter (trace/).
 */
#ifndef TWICE_JOBSPAN_H
#define TWICE_JOBSPAN_H

struct config;
struct lifecycle_verdict;
struct twice_job;

/* Start this worker's exporter when c says so; a problem is logged and
 * leaves tracing off (jobs run the same either way). */
void jobspan_start(const struct config *c);
/* Send what is buffered (for at most a few seconds) and stop. */
void jobspan_stop(void);

/*
 * Begin j's span: its parent is the message's `traceparent` attribute when
 * that is a valid W3C value; else the AWSTraceHeader system attribute, when
 * valid, is linked; else it starts a new trace. A malformed value is noted
 * as an event on the span (and logged at debug level), never trusted.
 */
void jobspan_begin(struct twice_job *j);

/* Note a verdict on j as an event (called by verdict_apply). */
void jobspan_verdict(struct twice_job *j, const struct lifecycle_verdict *v);

/* End j's span with the job's outcome and attributes and hand it to the
 * exporter (the job no longer owns it). Called once, as the job ends. */
void jobspan_end(struct twice_job *j);

#endif
