/*
 * oneshot_child.c - the probe child's side of the one-shot checks (see
 * oneshot.h): the request read back, the check it asks for run, its
 * problems printed. Linked by twiced-worker only.
 */
#include "oneshot.h"

#include "config.h"
#include "diag.h"
#include "idem.h"
#include "preflight.h"
#include "storecheck.h"

#include <stdlib.h>
#include <string.h>

/* Point f at the fields of the request text (len bytes). 0, or -1 when it
 * is not one. */
static int
split_request(const char *text, size_t len, const char *f[ONESHOT_F_COUNT])
{
    size_t at = 0;
    for (int i = 0; i < ONESHOT_F_COUNT; i++) {
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
check_reload(const struct config *c, const char *f[ONESHOT_F_COUNT], struct diag *d)
{
    struct idem_identity running;
    memset(&running, 0, sizeof(running));
    snprintf(running.cluster, sizeof(running.cluster), "%s", f[ONESHOT_F_CLUSTER]);
    snprintf(running.database, sizeof(running.database), "%s", f[ONESHOT_F_DATABASE]);
    snprintf(running.table_oid, sizeof(running.table_oid), "%s", f[ONESHOT_F_TABLE_OID]);
    snprintf(running.table, sizeof(running.table), "%s", f[ONESHOT_F_TABLE]);
    /* storecheck_reload reads no more of the running configuration than this */
    struct config was;
    memset(&was, 0, sizeof(was));
    was.idempotency.dsn = (char *) f[ONESHOT_F_WAS_DSN];
    was.idempotency.table = (char *) f[ONESHOT_F_WAS_TABLE];
    return storecheck_reload(&was, c, strcmp(f[ONESHOT_F_KNOWN], "1") == 0 ? &running : NULL,
                             atoi(f[ONESHOT_F_GEN]), NULL, d);
}

int
oneshot_child(const struct config *c, const char *req, size_t len, FILE *out)
{
    const char *f[ONESHOT_F_COUNT];
    if (split_request(req, len, f) != 0) {
        fprintf(out, "probe: the request of the store check cannot be read\n");
        return 1;
    }
    struct diag d = DIAG_INIT;
    int rc, kind = atoi(f[ONESHOT_F_KIND]);
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
