/*
 * proctable.c - the master's table of worker processes (see proctable.h).
 * Only the master's thread touches it; the shared region is read for slots
 * a worker still marks as its own.
 */
#include "proctable.h"

#include "shm.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int
proc_free_slot(const struct proc *procs)
{
    struct shm_region *r = shm_region();
    for (int i = 0; i < SHM_PROCS; i++) {
        if (procs[i].pid == 0 && __atomic_load_n(&r->procs[i].pid, __ATOMIC_ACQUIRE) == 0) {
            return i;
        }
    }
    return -1;
}

void
proc_signal(struct proc *procs, int gen, int sig, int mark_draining)
{
    for (int i = 0; i < SHM_PROCS; i++) {
        struct proc *p = &procs[i];
        if (p->pid > 0 && (gen < 0 || p->gen == gen)) {
            kill(p->pid, sig);
            p->draining |= mark_draining;
        }
    }
}

int
proc_count(const struct proc *procs, int gen, int ready_only)
{
    int n = 0;
    for (int i = 0; i < SHM_PROCS; i++) {
        const struct proc *p = &procs[i];
        if (p->pid > 0 && (gen < 0 || p->gen == gen) &&
            (!ready_only || (p->ready && !p->draining))) {
            n++;
        }
    }
    return n;
}

/* Remember what a starting worker waits for. */
static void
note_waiting(struct proc *p, const char *line, size_t len)
{
    char *why = strndup(line, len);
    if (why != NULL) {
        free(p->waiting);
        p->waiting = why;
    }
}

/* Lines are written whole and are short, so a read holds whole lines. */
void
proc_read_ready(struct proc *p)
{
    char buf[4096];
    ssize_t n = read(p->ctl, buf, sizeof(buf));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
        return;
    }
    for (ssize_t i = 0; i < n;) {
        if (buf[i] == 'R') {
            p->ready = 1;
            break;
        }
        char *nl = memchr(buf + i, '\n', (size_t) (n - i));
        if (nl == NULL) {
            break;
        }
        if (buf[i] == 'W') {
            note_waiting(p, buf + i + 1, (size_t) (nl - buf - i - 1));
        }
        i = nl - buf + 1;
    }
    if (n <= 0 || p->ready) {
        close(p->ctl);
        p->ctl = -1;
    }
}

/* Is slot a starting worker of gen with something to say? */
static int
waiting_in(const struct proc *p, int gen)
{
    return p->pid > 0 && p->gen == gen && !p->ready && p->waiting != NULL;
}

/* Has a worker of gen before slot said the same? */
static int
said_before(const struct proc *procs, int gen, int slot)
{
    for (int i = 0; i < slot; i++) {
        if (waiting_in(&procs[i], gen) && strcmp(procs[i].waiting, procs[slot].waiting) == 0) {
            return 1;
        }
    }
    return 0;
}

void
proc_not_ready_why(const struct proc *procs, int gen, int nworkers, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (int i = 0; i < SHM_PROCS && n < cap; i++) {
        const struct proc *p = &procs[i];
        if (waiting_in(p, gen) && !said_before(procs, gen, i)) {
            n += (size_t) snprintf(out + n, cap - n, "%sworker %d: %s", n > 0 ? "; " : "",
                                   (int) p->pid, p->waiting);
        }
    }
    if (out[0] == '\0') {
        snprintf(out, cap, "%d of %d workers ready", proc_count(procs, gen, 1), nworkers);
    }
}
