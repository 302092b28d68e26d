/*
 * msgage.c - message ages at receive (see msgage.h): into the shared
 * histogram, and the batch's oldest into the window the master reads.
 */
#include "msgage.h"

#include "metrics.h"
#include "sqs.h"

#include <time.h>

void
msgage_observe(const char *queue, const struct sqs_message *msgs, size_t n)
{
    struct timespec now;
    double oldest = -1;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t now_ms = (int64_t) now.tv_sec * 1000 + now.tv_nsec / 1000000;
    for (size_t i = 0; i < n; i++) {
        if (msgs[i].sent_timestamp_ms <= 0) {
            continue;
        }
        int64_t ms = now_ms - msgs[i].sent_timestamp_ms;
        double age = ms > 0 ? (double) ms / 1000.0 : 0;
        metrics_observe(MET_MESSAGE_AGE, queue, NULL, age);
        oldest = age > oldest ? age : oldest;
    }
    if (oldest >= 0) {
        metrics_gauge_max(MET_AGE_WINDOW, queue, NULL, oldest);
    }
}
