/*
 * test-msgage.c - what a worker's receive leaves the master for
 * twice_queue_oldest_age_seconds (msgage_observe, on a real shared region):
 * a message received is never "nothing received", even when its age
 * counts 0 (the host's clock behind SQS's, or received within
 * SentTimestamp's millisecond). Taken for nothing received, the master grew
 * the last age by every interval (qstats_oldest_age) while the queue
 * drained, as it does for messages that wait unreceived.
 */
#include "check.h"
#include "metrics.h"
#include "msgage.h"
#include "qstats.h"
#include "shm.h"
#include "sqs_types.h"

#include <stdio.h>
#include <time.h>

static int64_t
realtime_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t) t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* The window the master takes after one message sent at sent_ms. */
static double
window_after(int64_t sent_ms)
{
    struct sqs_message m = {.sent_timestamp_ms = sent_ms};
    msgage_observe("q", &m, 1);
    return metrics_gauge_take(MET_AGE_WINDOW, "q", NULL);
}

static void
test_a_fresh_message_is_received(void)
{
    /* SQS's clock 250 ms ahead of this host's: its age counts 0 */
    double w = window_after(realtime_ms() + 250);
    CHECK(w > 0 && w <= 0.001);
    /* the master takes it as received (15 s ago: 30 s, were it not) */
    CHECK(qstats_oldest_age(15, 15, w, 0, 3) <= 0.001);
    CHECK(window_after(realtime_ms()) > 0); /* within the same millisecond, or a few */
}

static void
test_an_old_message_counts_its_age(void)
{
    double w = window_after(realtime_ms() - 2000);
    CHECK(w >= 2.0 && w < 2.5);
    CHECK_INT(window_after(0) == 0, 1); /* no SentTimestamp: not observed */
}

int
main(void)
{
    if (shm_create() < 0) {
        perror("shm_create");
        return 1;
    }
    test_a_fresh_message_is_received();
    test_an_old_message_counts_its_age();
    return check_done("test-msgage");
}
