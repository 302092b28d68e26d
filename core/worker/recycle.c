/*
 * recycle.c - reading a worker's resident memory and asking to be recycled
 * past worker_max_rss (see recycle.h). The drain that follows is the one a
 * reload starts (process.c, on the master's SIGTERM); the replacement is the
 * master's (master.c, replace_asked).
 */
#include "recycle.h"

#include "clock.h"
#include "config.h"
#include "log.h"
#include "shm.h"
#include "worker.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#define RECYCLE_EVERY_MS 1000
#define MIB              (1024.0 * 1024.0)

int
recycle_statm_rss(const char *text, long page, long long *out)
{
    char *end;
    strtoll(text, &end, 10); /* the first field: total program size */
    if (end == text || *end != ' ' || page <= 0) {
        return -1;
    }
    const char *p = end + 1;
    long long pages = strtoll(p, &end, 10);
    if (end == p || pages < 0 || pages > (1LL << 62) / page) {
        return -1;
    }
    *out = pages * page;
    return 0;
}

/* This process's resident bytes, or -1 when /proc cannot say. */
static long long
rss_now(void)
{
    char text[256];
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    ssize_t n = read(fd, text, sizeof(text) - 1);
    close(fd);
    long long rss;
    if (n <= 0) {
        return -1;
    }
    text[n] = '\0';
    return recycle_statm_rss(text, sysconf(_SC_PAGESIZE), &rss) == 0 ? rss : -1;
}

void
recycle_start(struct recycle *r, const struct worker *w)
{
    r->limit = w->cfg->worker_max_rss;
    r->off = r->limit <= 0;
    r->next_ms = (long long) clock_mono_ms() + RECYCLE_EVERY_MS;
    long long rss = r->off ? 0 : rss_now();
    if (!r->off && rss > r->limit) {
        log_warn("worker %d: resident memory %.1f MiB once ready is already past worker_max_rss "
                 "(%.1f MiB): not recycled, as another would be too (raise the limit)",
                 (int) getpid(), (double) rss / MIB, (double) r->limit / MIB);
        r->off = 1;
    }
}

int
recycle_wait_ms(const struct recycle *r)
{
    if (r->off) {
        return -1;
    }
    long long left = r->next_ms - (long long) clock_mono_ms();
    return left < 0 ? 0 : left > RECYCLE_EVERY_MS ? RECYCLE_EVERY_MS : (int) left;
}

int
recycle_check(struct recycle *r, struct worker *w)
{
    long long now = (long long) clock_mono_ms();
    if (r->off || now < r->next_ms) {
        return 0;
    }
    r->next_ms = now + RECYCLE_EVERY_MS;
    long long rss = rss_now();
    if (rss <= r->limit) {
        return 0;
    }
    log_warn("worker %d: resident memory %.1f MiB is past worker_max_rss (%.1f MiB): recycling "
             "it (it receives no more, finishes its jobs and exits; another takes its place)",
             (int) getpid(), (double) rss / MIB, (double) r->limit / MIB);
    r->off = 1;
    flag_raise(&w->draining); /* receive no more: the replacement will (the master drains us) */
    shm_ask_replace(w->slot, SHM_REPLACE_RSS);
    return 1;
}
