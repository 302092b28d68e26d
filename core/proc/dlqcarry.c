/*
 * dlqcarry.c - the DLQ monitor's carried record (dlqcarry.h): written by
 * one monitor as it stops, checked and read by the next, cleared. Plain
 * stores between a state stored first and last; no locks (one writer,
 * then one reader). Not the monitor or the sender: duty/.
 */
#include "dlqcarry.h"

#include "hash.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { EMPTY = 0, WRITING = 1, WRITTEN = 2 };

void
dlqcarry_begin(struct dlqcarry *r, uint64_t cursor, size_t notice_size)
{
    /* An exchange, not a store: its acquire half keeps every write below
     * after it, so a writer that dies leaves WRITING, never a record that
     * looks whole. */
    __atomic_exchange_n(&r->state, WRITING, __ATOMIC_ACQ_REL);
    r->version = DLQCARRY_VERSION;
    r->notice_size = (uint32_t) notice_size;
    r->nrules = 0;
    r->cursor = cursor;
    for (int i = 0; i < DLQCARRY_SINKS; i++) {
        r->sinks[i].first = r->sinks[i].count = 0;
    }
}

int
dlqcarry_put_rule(struct dlqcarry *r, const char *url, int64_t depth, int64_t last_sent)
{
    if (r->nrules >= DLQCARRY_RULES) {
        return -1;
    }
    struct dlqcarry_rule *e = &r->rules[r->nrules];
    size_t len = strlen(url);
    size_t kept = len < sizeof(e->url) - 1 ? len : sizeof(e->url) - 1;
    e->url_hash = hash_fnv1a(HASH_FNV1A_INIT, url);
    e->url_len = (uint32_t) len;
    memcpy(e->url, url, kept);
    e->url[kept] = '\0';
    e->depth = depth;
    e->last_sent = last_sent;
    r->nrules++;
    return 0;
}

int
dlqcarry_put_notice(struct dlqcarry *r, int sink, int attempts, int64_t due_ms, const void *notice)
{
    if (sink < 0 || sink >= DLQCARRY_SINKS || r->notice_size > DLQCARRY_NOTICE_BYTES) {
        return -1;
    }
    struct dlqcarry_sink *s = &r->sinks[sink];
    int dropped = 0;
    if (s->count == DLQCARRY_PER_SINK) { /* the newest are kept: the oldest goes */
        s->first = (s->first + 1) % DLQCARRY_PER_SINK;
        s->count--;
        dropped = 1;
    }
    struct dlqcarry_notice *n = &s->slot[(s->first + s->count) % DLQCARRY_PER_SINK];
    n->due_ms = due_ms;
    n->attempts = attempts;
    memcpy(n->notice, notice, r->notice_size);
    s->count++;
    return dropped;
}

void
dlqcarry_end(struct dlqcarry *r)
{
    __atomic_store_n(&r->state, WRITTEN, __ATOMIC_RELEASE);
}

/* Whether a written record's counts are in range: another process wrote
 * it, and an index out of range would read past the region. */
static int
sane(const struct dlqcarry *r)
{
    if (r->nrules > DLQCARRY_RULES) {
        return 0;
    }
    for (int i = 0; i < DLQCARRY_SINKS; i++) {
        if (r->sinks[i].first >= DLQCARRY_PER_SINK || r->sinks[i].count > DLQCARRY_PER_SINK) {
            return 0;
        }
    }
    return 1;
}

enum dlqcarry_found
dlqcarry_open(struct dlqcarry *r, size_t notice_size)
{
    int state = __atomic_load_n(&r->state, __ATOMIC_ACQUIRE);
    enum dlqcarry_found found = DLQCARRY_OTHER_KIND;
    if (state == EMPTY) {
        return DLQCARRY_NONE;
    }
    if (state == WRITING) {
        found = DLQCARRY_TORN;
    } else if (state == WRITTEN && r->version == DLQCARRY_VERSION &&
               r->notice_size == notice_size && notice_size <= DLQCARRY_NOTICE_BYTES && sane(r)) {
        return DLQCARRY_OK;
    }
    dlqcarry_clear(r);
    return found;
}

uint64_t
dlqcarry_cursor(const struct dlqcarry *r)
{
    return r->cursor;
}

int
dlqcarry_get_rule(const struct dlqcarry *r, const char *url, int64_t *depth, int64_t *last_sent)
{
    size_t len = strlen(url);
    uint64_t hash = hash_fnv1a(HASH_FNV1A_INIT, url);
    for (uint32_t i = r->nrules; i > 0; i--) { /* the last put wins, as a map would */
        const struct dlqcarry_rule *e = &r->rules[i - 1];
        if (e->url_len == len && e->url_hash == hash &&
            strncmp(e->url, url, sizeof(e->url) - 1) == 0) {
            *depth = e->depth;
            *last_sent = e->last_sent;
            return 1;
        }
    }
    return 0;
}

size_t
dlqcarry_notices(const struct dlqcarry *r, int sink)
{
    return sink >= 0 && sink < DLQCARRY_SINKS ? r->sinks[sink].count : 0;
}

const struct dlqcarry_notice *
dlqcarry_notice_at(const struct dlqcarry *r, int sink, size_t k)
{
    if (k >= dlqcarry_notices(r, sink)) {
        return NULL;
    }
    const struct dlqcarry_sink *s = &r->sinks[sink];
    return &s->slot[(s->first + k) % DLQCARRY_PER_SINK];
}

void
dlqcarry_clear(struct dlqcarry *r)
{
    __atomic_store_n(&r->state, EMPTY, __ATOMIC_RELEASE); /* the rest is read no more */
    /* The whole pages inside r: in the region (a memfd) their memory is
     * freed and they read as zeros, which is an empty record; elsewhere (a
     * test's heap) madvise refuses and nothing changes. */
    uintptr_t page = (uintptr_t) sysconf(_SC_PAGESIZE);
    uintptr_t start = ((uintptr_t) r + page - 1) & ~(page - 1);
    uintptr_t end = ((uintptr_t) r + sizeof(*r)) & ~(page - 1);
    if (end > start) {
        (void) madvise((void *) start, end - start, MADV_REMOVE);
    }
}
