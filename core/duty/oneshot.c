/*
 * oneshot.c - the master's side of the one-shot checks of the store and SQS
 * (see oneshot.h): the request it writes for the probe child, and how long
 * the child may take. The child's side is oneshot_child.c, so that twiced,
 * which links this file, links no check and no libpq or libcurl. The
 * request is private to one twiced installation: its fields are
 * NUL-terminated strings, in the order of enum oneshot_field.
 */
#include "oneshot.h"

#include "buf.h"
#include "childargs.h"
#include "config.h"
#include "idem.h"
#include "storecheck.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
