/*
 * idem_conn.c - keeping one idempotency store connection of a long-lived
 * thread usable (idem_ensure in idem.h): opened on first use, reset when it
 * dropped. Not the connection itself: idem.c.
 */
#include "idem.h"

int
idem_ensure(struct idem_store **s, const char *dsn, const char *table, const char *owner,
            int *fresh, char *err, size_t errlen)
{
    int renew = *s == NULL || !idem_connected(*s);
    if (fresh != NULL) {
        *fresh = renew;
    }
    if (!renew) {
        return 0;
    }
    return *s == NULL ? idem_open(dsn, table, owner, s, err, errlen)
                      : idem_reconnect(*s, err, errlen);
}
