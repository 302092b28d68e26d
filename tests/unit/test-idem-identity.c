/*
 * test-idem-identity.c - when a changed idempotency.dsn reaches the keys the
 * running generation uses (idem_identity_same, which a reload asks): the
 * same database of the same cluster, or of a promoted replica (which keeps
 * the system identifier and the oids), is the same keys; another database,
 * another cluster, or a table name that resolves elsewhere (another schema
 * for the new role) is not. A cluster the role may not identify is judged
 * by the rest.
 */
#include "check.h"
#include "idem.h"

#include <string.h>

static struct idem_identity
id(const char *cluster, const char *database, const char *oid, const char *table)
{
    struct idem_identity i;
    memset(&i, 0, sizeof(i));
    strcpy(i.cluster, cluster);
    strcpy(i.database, database);
    strcpy(i.table_oid, oid);
    strcpy(i.table, table);
    return i;
}

/* Whether now reaches was's keys; why (when not) must contain want. */
static void
same(struct idem_identity was, struct idem_identity now, int want, const char *why_has)
{
    char why[512] = "";
    CHECK_INT(idem_identity_same(&was, &now, why, sizeof(why)), want);
    if (!want) {
        CHECK_CONTAINS(why, why_has);
    }
}

int
main(void)
{
    struct idem_identity running = id("7715769240256433515", "jobs", "16390", "twice_idempotency");
    /* another host or password of the same cluster, or its promoted replica */
    same(running, id("7715769240256433515", "jobs", "16390", "twice_idempotency"), 1, NULL);
    /* another database of the same cluster: dbname= changed */
    same(running, id("7715769240256433515", "jobs2", "16390", "twice_idempotency"), 0,
         "it reaches database 'jobs2', not 'jobs'");
    /* another cluster with a database of the same name, made by the same script */
    same(running, id("7715769240256433999", "jobs", "16390", "twice_idempotency"), 0,
         "another PostgreSQL cluster (system identifier 7715769240256433999, not "
         "7715769240256433515)");
    /* the new role's search_path finds another table of that name */
    same(running, id("7715769240256433515", "jobs", "16444", "other.twice_idempotency"), 0,
         "resolves to another table for it (other.twice_idempotency, not twice_idempotency)");
    /* or none at all: the new generation would create an empty one */
    same(running, id("7715769240256433515", "jobs", "", ""), 0,
         "the keys table twice_idempotency is not there for it");
    /* a cluster the role may not identify: judged by the database and table */
    same(running, id("", "jobs", "16390", "twice_idempotency"), 1, NULL);
    same(id("", "jobs", "16390", "twice_idempotency"), id("", "jobs2", "16390", "x"), 0,
         "database 'jobs2'");
    /* no table yet on either side (twiced never claimed a key): same database */
    same(id("1", "jobs", "", ""), id("1", "jobs", "", ""), 1, NULL);
    return check_done("test-idem-identity");
}
