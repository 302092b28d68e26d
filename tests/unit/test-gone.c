/*
 * test-gone.c - the queue of gone workers in the shared region (gone.h), by
 * which the master hands a dead worker's lease owner and the jobs that
 * crashed it to the janitor: owners come out in order with their culprits
 * whole; a full queue or pool refuses or cuts, and never blocks; an owner
 * leaves only once the janitor is done with it, so a janitor that stops
 * mid-way, or whose process dies mid-way holding the queue's lock, leaves
 * the rest to the next one (another process: fork); and a master pushing
 * while a janitor in another process drains loses or garbles nothing.
 */
#include "check.h"
#include "gone.h"
#include "shm.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* What a drain saw: "owner:run/id,run/id" an owner, ";" between. */
struct seen {
    char text[8192];
    int calls;
    int refuse_at; /* the call (from 1) that returns -1; 0 none */
    int stall_at;  /* the call that writes to stall_fd and never returns; 0 none */
    int stall_fd;
};

static int
record(void *arg, const struct gone_owner *g)
{
    struct seen *s = arg;
    s->calls++;
    if (s->calls == s->stall_at) {
        CHECK_INT(write(s->stall_fd, "x", 1), 1);
        pause();
    }
    if (s->calls == s->refuse_at) {
        return -1;
    }
    size_t len = strlen(s->text);
    len += (size_t) snprintf(s->text + len, sizeof(s->text) - len, "%s%s:", len > 0 ? ";" : "",
                             g->owner);
    for (size_t i = 0; i < g->n; i++) {
        const struct shm_gone_culprit *c = gone_culprit(g, i);
        len += (size_t) snprintf(s->text + len, sizeof(s->text) - len, "%s%d/%s", i > 0 ? "," : "",
                                 c->attempt, c->message_id);
    }
    return 0;
}

/* Jobs j0..j(n-1), run i + 1, and pointers to them as crash_culprits gives. */
static struct shm_job jobs[SHM_GONE_CULPRITS + 8];
static const struct shm_job *culprits[SHM_GONE_CULPRITS + 8];

static void
make_jobs(void)
{
    for (int i = 0; i < SHM_GONE_CULPRITS + 8; i++) {
        jobs[i].attempt = i + 1;
        snprintf(jobs[i].message_id, sizeof(jobs[i].message_id), "j%d", i);
        culprits[i] = &jobs[i];
    }
}

/* Owners in the order pushed, each with its culprits; pushing copies them. */
static void
test_order(void)
{
    CHECK(!gone_pending());
    CHECK_INT(gone_push("w:1", 0, culprits, 2), 2);
    CHECK_INT(gone_push("w:2", 0, NULL, 0), 0);
    CHECK_INT(gone_push("w:3", 0, culprits + 5, 1), 1);
    strcpy(jobs[0].message_id, "changed"); /* the master resets the slot after */
    CHECK(gone_pending());
    struct seen s = {0};
    CHECK_INT(gone_drain(record, &s), 0);
    CHECK_STR(s.text, "w:1:1/j0,2/j1;w:2:;w:3:6/j5");
    CHECK(!gone_pending());
    strcpy(jobs[0].message_id, "j0");
}

/* A full queue refuses an owner; a short pool keeps the culprits that fit,
 * and its records come back (wrapping round) as owners leave. */
static void
test_full(void)
{
    char owner[32];
    for (int i = 0; i < SHM_GONE; i++) {
        snprintf(owner, sizeof(owner), "f:%d", i);
        CHECK_INT(gone_push(owner, 0, NULL, 0), 0);
    }
    CHECK_INT(gone_push("f:over", 0, culprits, 1), -1);
    struct seen s = {.refuse_at = 2};
    CHECK_INT(gone_drain(record, &s), -1);
    CHECK_STR(s.text, "f:0:");
    CHECK_INT(gone_push("f:again", 0, NULL, 0), 0); /* room for one again */
    s = (struct seen){0};
    CHECK_INT(gone_drain(record, &s), 0);
    CHECK_INT(s.calls, SHM_GONE);
    CHECK(strstr(s.text, "f:255:;f:again:") != NULL);
    CHECK(strstr(s.text, "f:over") == NULL);

    CHECK_INT(gone_push("p:1", 0, culprits, 3), 3);
    CHECK_INT(gone_push("p:2", 0, culprits, SHM_GONE_CULPRITS + 8), SHM_GONE_CULPRITS - 3);
    CHECK_INT(gone_push("p:3", 0, culprits, 1), 0); /* queued, its culprit not kept */
    s = (struct seen){.refuse_at = 2};
    CHECK_INT(gone_drain(record, &s), -1);
    CHECK_INT(gone_push("p:4", 0, culprits + 7, 2), 2); /* p:1's 3 records are free */
    CHECK_INT(gone_push("p:5", 0, culprits, 2), 1);
    s = (struct seen){0};
    CHECK_INT(gone_drain(record, &s), 0);
    char want[64];
    snprintf(want, sizeof(want), ",%d/j%d;p:3:;p:4:8/j7,9/j8;p:5:1/j0", SHM_GONE_CULPRITS - 3,
             SHM_GONE_CULPRITS - 4);
    CHECK(strstr(s.text, want) != NULL);
    CHECK(strncmp(s.text, "p:2:1/j0,2/j1,", 14) == 0);
}

/* A janitor's process dies mid-way, holding the lock, on the second owner
 * (the first done): while it holds it another janitor waits its turn, and
 * once it is gone that one takes the lock and goes on from the second. */
static void
test_janitor_dies(void)
{
    CHECK_INT(gone_push("d:1", 0, culprits, 1), 1);
    CHECK_INT(gone_push("d:2", 0, culprits + 1, 1), 1);
    CHECK_INT(gone_push("d:3", 0, NULL, 0), 0);
    int fds[2];
    CHECK_INT(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
        struct seen s = {.stall_at = 2, .stall_fd = fds[1]};
        gone_drain(record, &s);
        _exit(1);
    }
    char c;
    CHECK_INT(read(fds[0], &c, 1), 1); /* it is on d:2 */
    struct seen s = {0};
    CHECK_INT(gone_drain(record, &s), 1); /* busy: another janitor is at it */
    CHECK_INT(s.calls, 0);
    kill(pid, SIGKILL);
    int status;
    CHECK_INT(waitpid(pid, &status, 0), pid);
    CHECK_INT(gone_drain(record, &s), 0);
    CHECK_STR(s.text, "d:2:2/j1;d:3:");
    CHECK_INT(gone_drain(record, &s), 0); /* the lock works after that, too */
    close(fds[0]);
    close(fds[1]);
}

/* Counts the owners a concurrent drain sees and checks each is whole. */
struct stream {
    int next;
    int bad;
};

static int
check_stream(void *arg, const struct gone_owner *g)
{
    struct stream *st = arg;
    char want[32];
    snprintf(want, sizeof(want), "s:%d", st->next);
    size_t n = (size_t) (st->next % 3);
    st->bad += strcmp(g->owner, want) != 0 || g->n != n || g->gone_ms != st->next;
    for (size_t i = 0; i < g->n && i < n; i++) {
        const struct shm_gone_culprit *c = gone_culprit(g, i);
        snprintf(want, sizeof(want), "j%d", (int) i + st->next % 7);
        st->bad += c->attempt != (int) i + st->next % 7 + 1 || strcmp(c->message_id, want) != 0;
    }
    st->next++;
    return 0;
}

/* The master (a child here) pushes while a janitor drains: every owner
 * arrives once, in order, with its culprits whole (at most 2 each: a full
 * queue's never outnumber the pool, which would cut them). */
static void
test_concurrent(void)
{
    enum { OWNERS = 20000 };
    pid_t pid = fork();
    if (pid == 0) {
        char owner[32];
        for (int i = 0; i < OWNERS; i++) {
            snprintf(owner, sizeof(owner), "s:%d", i);
            while (gone_push(owner, i, culprits + i % 7, (size_t) (i % 3)) < 0) {
                usleep(100); /* full: the test's master waits, twiced's drops */
            }
        }
        _exit(0);
    }
    struct stream st = {0};
    time_t deadline = time(NULL) + 30;
    while (st.next < OWNERS && time(NULL) < deadline) {
        gone_drain(check_stream, &st);
    }
    CHECK_INT(st.next, OWNERS);
    if (st.next < OWNERS) {
        kill(pid, SIGKILL); /* it would wait for room for ever */
    }
    int status;
    CHECK_INT(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_INT(st.bad, 0);
    CHECK(!gone_pending());
}

int
main(void)
{
    struct seen s = {0};
    CHECK_INT(gone_push("none", 0, NULL, 0), -1); /* no region: nothing queued */
    CHECK_INT(gone_drain(record, &s), 0);
    CHECK(shm_create() >= 0);
    make_jobs();
    test_order();
    test_full();
    test_janitor_dies();
    test_concurrent();
    return check_done("test-gone");
}
