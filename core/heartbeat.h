/*
 * heartbeat.h - keeping jobs in flight alive. A job running longer than
 * half its visibility timeout gets its SQS visibility and its lease
 * extended together, so slowness is never mistaken for death; at the drain
 * deadline, what still runs is given back. Runs on the acker's thread.
 */
#ifndef TWICE_HEARTBEAT_H
#define TWICE_HEARTBEAT_H

#include <time.h>

struct acker;

void heartbeat_run(struct acker *a, const struct timespec *now);
void heartbeat_give_back(struct acker *a);

#endif
