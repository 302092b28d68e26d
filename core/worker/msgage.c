/*
 * msgage.c - message ages at receive (see msgage.h): into the shared
 * histogram, and the batch's oldest into the window the master reads;
 * an empty long poll into the window that says the queue was empty.
 */
#include "msgage.h"

#include "metrics.h"
#include "sqs.h"

#include <time.h>

#define MSGAGE_BATCH 16 /* a receive brings at most 10 */

/* The least a received message puts in the master's window: SentTimestamp's
 * millisecond. An age that counts 0 (this host's clock behind SQS's, or a
 * receive within the millisecond) left the window at 0, which the master
 * takes for nothing received: it then grew the last age every interval, as
 * for messages waiting unreceived, while the queue drained. */
#define MSGAGE_RECEIVED 0.001

void
msgage_observe(const char *queue, const struct sqs_message *msgs, size_t n)
{
    struct timespec now;
    double ages[MSGAGE_BATCH], oldest = 0;
    size_t k = 0;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t now_ms = (int64_t) now.tv_sec * 1000 + now.tv_nsec / 1000000;
    for (size_t i = 0; i < n; i++) {
        if (msgs[i].sent_timestamp_ms > 0) {
            int64_t ms = now_ms - msgs[i].sent_timestamp_ms;
            ages[k] = ms > 0 ? (double) ms / 1000.0 : 0;
            oldest = ages[k] > oldest ? ages[k] : oldest;
            k++;
        }
        if (k == MSGAGE_BATCH || (i + 1 == n && k > 0)) {
            metrics_observe_many(MET_MESSAGE_AGE, queue, NULL, ages, k);
            metrics_gauge_max(MET_AGE_WINDOW, queue, NULL,
                              oldest > MSGAGE_RECEIVED ? oldest : MSGAGE_RECEIVED);
            k = 0;
        }
    }
}

void
msgage_empty(const char *queue)
{
    metrics_gauge_set(MET_EMPTY_WINDOW, queue, NULL, 1);
}
