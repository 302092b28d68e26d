/*
 * test-backoff.c - the retry delay arithmetic of backoff.h: ceiling growth,
 * the cap, overflow at absurd attempts, jitter bounds and spread. Not a test
 * of anyone's sleeping.
 */
#include "backoff.h"
#include "check.h"

#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

static void
test_ceiling(void)
{
    CHECK_INT(backoff_ceiling(50, 20000, 1), 50);
    CHECK_INT(backoff_ceiling(50, 20000, 2), 100);
    CHECK_INT(backoff_ceiling(50, 20000, 3), 200);
    CHECK_INT(backoff_ceiling(50, 20000, 9), 12800);
    CHECK_INT(backoff_ceiling(50, 20000, 10), 20000); /* 25600 capped */
    CHECK_INT(backoff_ceiling(1000, 20000, 5), 16000);
    CHECK_INT(backoff_ceiling(1000, 20000, 6), 20000);
    /* attempt < 1 counts as 1 */
    CHECK_INT(backoff_ceiling(50, 20000, 0), 50);
    CHECK_INT(backoff_ceiling(50, 20000, -7), 50);
    /* a base above the cap is capped at once */
    CHECK_INT(backoff_ceiling(30000, 20000, 1), 20000);
    CHECK_INT(backoff_ceiling(0, 20000, 50), 0);
}

static void
test_no_overflow(void)
{
    CHECK_INT(backoff_ceiling(50, 20000, 200), 20000);
    CHECK_INT(backoff_ceiling(1000, 20000, 1000000), 20000);
    CHECK(backoff_ceiling(3, UINT64_MAX, 200) == UINT64_MAX);
    CHECK(backoff_ceiling(UINT64_MAX / 2 + 1, UINT64_MAX, 2) == UINT64_MAX);
    CHECK(backoff_ceiling(1, UINT64_MAX, 64) == UINT64_C(1) << 63);
    /* ceiling UINT64_MAX: r itself, no division by zero */
    CHECK(backoff_full_jitter(1, UINT64_MAX, 200, 12345) == 12345);
    CHECK(backoff_delay(50, 20000, 200) <= 20000);
}

static void
test_jitter_bounds(void)
{
    CHECK_INT(backoff_full_jitter(50, 20000, 1, 0), 0);
    CHECK_INT(backoff_full_jitter(50, 20000, 1, 50), 50);
    CHECK_INT(backoff_full_jitter(50, 20000, 1, 51), 0);
    CHECK_INT(backoff_full_jitter(50, 20000, 3, UINT64_MAX), UINT64_MAX % 201);

    int out_of_bounds = 0, low = 0, high = 0;
    for (int i = 0; i < 100000; i++) {
        uint64_t d = backoff_delay(1000, 20000, 2);
        if (d > 2000) {
            out_of_bounds++;
        }
        low += d < 200;
        high += d > 1800;
    }
    CHECK_INT(out_of_bounds, 0);
    /* full jitter spreads over the whole range: ~10% in each tail */
    CHECK(low > 8000 && low < 12000);
    CHECK(high > 8000 && high < 12000);

    /* the random source covers the top bits too */
    uint64_t any_or = 0, all_and = UINT64_MAX;
    for (int i = 0; i < 1000; i++) {
        uint64_t r = backoff_random();
        any_or |= r;
        all_and &= r;
    }
    CHECK(any_or == UINT64_MAX);
    CHECK(all_and == 0);
}

/* A forked child must not repeat its parent's sequence (workers are forked
 * from the master). */
static void
test_fork_reseeds(void)
{
    (void) backoff_random();
    int fds[2];
    CHECK(pipe(fds) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        uint64_t r = backoff_random();
        _exit(write(fds[1], &r, sizeof r) == (ssize_t) sizeof r ? 0 : 1);
    }
    uint64_t parent = backoff_random(), child = 0;
    CHECK(read(fds[0], &child, sizeof child) == (ssize_t) sizeof child);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(parent != child);
    close(fds[0]);
    close(fds[1]);
}

int
main(void)
{
    test_ceiling();
    test_no_overflow();
    test_jitter_bounds();
    test_fork_reseeds();
    return check_done("test-backoff");
}
