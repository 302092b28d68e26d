/*
 * oneshot.c - the one-shot checks of the store and SQS in the probe child
 * (see oneshot.h): the request the master writes, read back by the child,
 * which runs the check and prints its problems. The request is private to
 * one twiced binary (the master only execs itself): its fields are
 * NUL-terminated strings, in the order of enum field.
 */
#include "oneshot.h"

#include "buf.h"
#include "childargs.h"
#include "config.h"
#include "diag.h"
#include "idem.h"
#include "preflight.h"
#include "storecheck.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum field {
    F_KIND,
    F_GEN,
    F_KNOWN, /* "1": the running identity follows */
    F_CLUSTER,
    F_DATABASE,
    F_TABLE_OID,
    F_TABLE,
    F_WAS_DSN,
    F_WAS_TABLE,
    F_COUNT
};

#define MARGIN_S 5 /* a process to start and libraries to load, on top */

int
oneshot_request_fd(enum oneshot_kind kind, const struct config *was,
                   const struct idem_identity *running, int gen)
{
    int reload = kind == ONESHOT_RELOAD && was != NULL;
    const struct idem_identity none = {"", "", "", ""};
    const struct idem_identity *id = reload && running != NULL ? running : &none;
    struct buf b = BUF_INIT;
    buf_printf(&b, "%d%c%d%c%d%c", (int) kind, 0, reload ? gen : 0, 0, reload && running != NULL,
               0);
    const char *s[] = {id->cluster,
                       id->database,
                       id->table_oid,
                       id->table,
                       reload ? was->idempotency.dsn : "",
                       reload ? was->idempotency.table : ""};
    for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
        buf_puts(&b, s[i] != NULL ? s[i] : "");
        buf_putc(&b, '\0');
    }
    int fd = -1;
    if (b.failed) {
        errno = ENOMEM;
    } else {
        fd = childargs_memfd(b.data, b.len);
    }
    buf_free_wipe(&b); /* the dsn */
    return fd;
}

int
oneshot_timeout(enum oneshot_kind kind, const struct config *c)
{
    int store_s = STORECHECK_MS / 1000;
    if (kind == ONESHOT_START) {
        return store_s + MARGIN_S;
    }
    if (kind == ONESHOT_RELOAD) {
        return 2 * store_s + MARGIN_S; /* the new store, and maybe the running one */
    }
    /* preflight: the store's connect and statements (connect_timeout, 10 s
     * by default, each, but a dsn may raise it: a person waits on twiced -t
     * and can Ctrl-C it, so the bound is generous), 10 s per queue and DLQ
     * call, S3's 60 s per bucket */
    int s = 120 + MARGIN_S;
    for (size_t i = 0; i < c->nqueues; i++) {
        s += 20 + (c->queues[i].payload_bucket != NULL ? 65 : 0);
    }
    return s;
}

/* Point f at the fields of the request text (len bytes). 0, or -1 when it
 * is not one. */
static int
split_request(const char *text, size_t len, const char *f[F_COUNT])
{
    size_t at = 0;
    for (int i = 0; i < F_COUNT; i++) {
        const char *end = at < len ? memchr(text + at, '\0', len - at) : NULL;
        if (end == NULL) {
            return -1;
        }
        f[i] = text + at;
        at = (size_t) (end - text) + 1;
    }
    return 0;
}

/* The reload's check with the running store of request f. */
static int
check_reload(const struct config *c, const char *f[F_COUNT], struct diag *d)
{
    struct idem_identity running;
    memset(&running, 0, sizeof(running));
    snprintf(running.cluster, sizeof(running.cluster), "%s", f[F_CLUSTER]);
    snprintf(running.database, sizeof(running.database), "%s", f[F_DATABASE]);
    snprintf(running.table_oid, sizeof(running.table_oid), "%s", f[F_TABLE_OID]);
    snprintf(running.table, sizeof(running.table), "%s", f[F_TABLE]);
    /* storecheck_reload reads no more of the running configuration than this */
    struct config was;
    memset(&was, 0, sizeof(was));
    was.idempotency.dsn = (char *) f[F_WAS_DSN];
    was.idempotency.table = (char *) f[F_WAS_TABLE];
    return storecheck_reload(&was, c, strcmp(f[F_KNOWN], "1") == 0 ? &running : NULL,
                             atoi(f[F_GEN]), NULL, d);
}

int
oneshot_child(const struct config *c, const char *req, size_t len, FILE *out)
{
    const char *f[F_COUNT];
    if (split_request(req, len, f) != 0) {
        fprintf(out, "probe: the request of the store check cannot be read\n");
        return 1;
    }
    struct diag d = DIAG_INIT;
    int rc, kind = atoi(f[F_KIND]);
    if (kind == ONESHOT_START) {
        rc = storecheck_start(c, NULL, &d) > 0;
    } else if (kind == ONESHOT_RELOAD) {
        rc = check_reload(c, f, &d) > 0;
    } else if (kind == ONESHOT_CONNECT) {
        rc = preflight_connect(c, &d) > 0;
    } else {
        diag_add(&d, NULL, 0, "probe: unknown store check %d", kind);
        rc = 1;
    }
    for (size_t i = 0; i < d.n; i++) {
        fprintf(out, "%s\n", d.lines[i]);
    }
    diag_free(&d);
    return rc;
}
