/*
 * test-qstats.c - the rule of twice_queue_oldest_age_seconds
 * (qstats_oldest_age): what an autoscaler scales on reads 0 only when the
 * queue is known empty, and grows while messages wait unreceived (every
 * handler slot busy, the queue paused, SQS unreachable) instead of falling
 * to 0 exactly when more workers are needed.
 */
#include "check.h"
#include "qstats.h"

#include <stdio.h>

#define CHECK_AGE(got, want) CHECK_INT((long long) ((got) *1000), (long long) ((want) *1000))

int
main(void)
{
    /* Received in the interval: the oldest received, whatever else. */
    CHECK_AGE(qstats_oldest_age(40, 15, 3.5, 0, 7), 3.5);
    CHECK_AGE(qstats_oldest_age(40, 15, 3.5, 1, 0), 3.5);
    CHECK_AGE(qstats_oldest_age(0, 15, 3.5, 0, -1), 3.5);

    /* Nothing received, messages visible: the last value grown. */
    CHECK_AGE(qstats_oldest_age(3.5, 15, 0, 0, 7), 18.5);
    CHECK_AGE(qstats_oldest_age(18.5, 15, 0, 0, 7), 33.5);
    /* First seen waiting (after a known empty queue): from 0, by the interval. */
    CHECK_AGE(qstats_oldest_age(0, 15, 0, 0, 2), 15);
    /* A clock step backwards grows nothing and takes nothing away. */
    CHECK_AGE(qstats_oldest_age(20, -3, 0, 0, 2), 20);

    /* Known empty: a long poll came back empty, or SQS counts none visible. */
    CHECK_AGE(qstats_oldest_age(33.5, 15, 0, 1, 7), 0);
    CHECK_AGE(qstats_oldest_age(33.5, 15, 0, 0, 0), 0);
    CHECK_AGE(qstats_oldest_age(33.5, 15, 0, 1, -1), 0);

    /* Nothing known (the counts never read): kept, neither grown nor dropped. */
    CHECK_AGE(qstats_oldest_age(33.5, 15, 0, 0, -1), 33.5);
    return check_done("test-qstats");
}
