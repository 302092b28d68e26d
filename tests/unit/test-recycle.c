/*
 * test-recycle.c - the pure parts of a worker's recycling (recycle.h): its
 * resident memory read from /proc/self/statm's text, and each worker's
 * share of worker_max_jobs, within 10% so that workers started together are
 * not recycled together.
 */
#include "check.h"
#include "recycle.h"

#include <stdint.h>

static void
test_statm(void)
{
    long long rss = -1;
    CHECK_INT(recycle_statm_rss("5713 3290 1402 244 0 2186 0\n", 4096, &rss), 0);
    CHECK(rss == 3290LL * 4096);
    CHECK_INT(recycle_statm_rss("5713 0 0 0 0 0 0\n", 65536, &rss), 0);
    CHECK(rss == 0);
    CHECK_INT(recycle_statm_rss("", 4096, &rss), -1);
    CHECK_INT(recycle_statm_rss("5713", 4096, &rss), -1);
    CHECK_INT(recycle_statm_rss("5713 x", 4096, &rss), -1);
    CHECK_INT(recycle_statm_rss("5713 3290", 0, &rss), -1);
    CHECK_INT(recycle_statm_rss("1 99999999999999999", 4096, &rss), -1);
}

static void
test_jobs_share(void)
{
    CHECK(recycle_jobs_share(0, 12345) == 0);
    CHECK(recycle_jobs_share(1, UINT64_MAX) == 1);
    CHECK(recycle_jobs_share(9, 7) == 9); /* 10% of 9 rounds to nothing */
    CHECK(recycle_jobs_share(1000, 0) == 900);
    CHECK(recycle_jobs_share(1000, 200) == 1100);
    CHECK(recycle_jobs_share(1000, 201) == 900); /* the range wraps: 201 values */
    long long lo = 1000000, hi = 0;
    for (uint64_t r = 0; r < 5000; r++) {
        long long s = recycle_jobs_share(1000, r * 2654435761u);
        lo = s < lo ? s : lo;
        hi = s > hi ? s : hi;
    }
    CHECK(lo == 900 && hi == 1100);
}

int
main(void)
{
    test_statm();
    test_jobs_share();
    return check_done("test-recycle");
}
