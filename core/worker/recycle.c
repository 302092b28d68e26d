/*
 * recycle.c - reading a worker's resident memory and its runs, and asking to
 * be recycled past worker_max_rss or worker_max_jobs (see recycle.h). The
 * drain that follows is the one a reload starts (process.c, on the master's
 * SIGTERM); the replacement is the master's (master.c, replace_asked).
 */
#include "recycle.h"

#include "backoff.h"
#include "clock.h"
#include "config.h"
#include "log.h"
#include "shm.h"
#include "worker.h"

#include <fcntl.h>
#include <signal.h>
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

long long
recycle_jobs_share(long long n, uint64_t r)
{
    if (n <= 0) {
        return 0;
    }
    long long spread = n / 10;
    long long share = n - spread + (long long) (r % (uint64_t) (2 * spread + 1));
    return share > 0 ? share : 1;
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
    r->rss_limit = w->cfg->worker_max_rss;
    r->max_runs = recycle_jobs_share(w->cfg->worker_max_jobs, backoff_random());
    r->asked = 0;
    r->next_ms = (long long) clock_mono_ms() + RECYCLE_EVERY_MS;
    long long rss = r->rss_limit > 0 ? rss_now() : 0;
    if (r->rss_limit > 0 && rss > r->rss_limit) {
        log_warn("worker %d: resident memory %.1f MiB once ready is already past worker_max_rss "
                 "(%.1f MiB): not recycled for its memory, as another would be too (raise the "
                 "limit)",
                 (int) getpid(), (double) rss / MIB, (double) r->rss_limit / MIB);
        r->rss_limit = 0;
    }
}

int
recycle_wait_ms(const struct recycle *r)
{
    if (r->asked || (r->rss_limit <= 0 && r->max_runs <= 0)) {
        return -1;
    }
    long long left = r->next_ms - (long long) clock_mono_ms();
    return left < 0 ? 0 : left > RECYCLE_EVERY_MS ? RECYCLE_EVERY_MS : (int) left;
}

/* Which limit w passed, said in a warn line; SHM_REPLACE_NONE when none. */
static enum shm_replace
passed(const struct recycle *r, struct worker *w)
{
    long long runs = __atomic_load_n(&w->runs, __ATOMIC_RELAXED);
    if (r->max_runs > 0 && runs >= r->max_runs) {
        log_warn("worker %d: %lld jobs run, its share of worker_max_jobs (%d, within 10%%: "
                 "%lld): recycling it (it receives no more, finishes its jobs and exits; another "
                 "takes its place)",
                 (int) getpid(), runs, w->cfg->worker_max_jobs, r->max_runs);
        return SHM_REPLACE_JOBS;
    }
    long long rss = r->rss_limit > 0 ? rss_now() : -1;
    if (r->rss_limit > 0 && rss > r->rss_limit) {
        log_warn("worker %d: resident memory %.1f MiB is past worker_max_rss (%.1f MiB): "
                 "recycling it (it receives no more, finishes its jobs and exits; another takes "
                 "its place)",
                 (int) getpid(), (double) rss / MIB, (double) r->rss_limit / MIB);
        return SHM_REPLACE_RSS;
    }
    return SHM_REPLACE_NONE;
}

int
recycle_check(struct recycle *r, struct worker *w)
{
    long long now = (long long) clock_mono_ms();
    if (recycle_wait_ms(r) < 0 || now < r->next_ms) {
        return 0;
    }
    r->next_ms = now + RECYCLE_EVERY_MS;
    enum shm_replace why = passed(r, w);
    if (why == SHM_REPLACE_NONE) {
        return 0;
    }
    r->asked = 1;
    recycle_ask_replace(w, why);
    return 1;
}

void
recycle_ask_replace(struct worker *w, enum shm_replace why)
{
    flag_raise(&w->draining); /* receive no more: the replacement will (the master drains us) */
    shm_ask_replace(w->slot, why);
    if (w->master_pid > 1 && getppid() == w->master_pid) {
        kill(w->master_pid, SIGCHLD); /* "a child changed": its loop takes the request now */
    }
}
