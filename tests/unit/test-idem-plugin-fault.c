/*
 * test-idem-plugin-fault.c - whose fault a transactional plugin's own failed
 * statement is (idem_plugin_state_stale), state by state: the store's or its
 * operator's (the connection is made again, a run it aborted is not counted)
 * or the plugin's (its SQL, its data, its functions: the job's, counted
 * toward max_attempts, the connection kept). Beside it, twiced's own
 * statements' rule (idem_state_stale), which a plugin's SQL must not follow.
 */
#include "check.h"
#include "idem_internal.h"

#include <stdio.h>

/* One SQLSTATE, whose fault it is, and what it is. */
struct row {
    const char *state;
    int store;
    const char *what;
};

static const struct row rows[] = {
    /* the store's or its operator's */
    {"08006", 1, "connection failure"},
    {"08P01", 1, "protocol violation"},
    {"57014", 1, "statement_timeout, a cancel"},
    {"57P01", 1, "admin shutdown"},
    {"57P03", 1, "cannot connect now"},
    {"55P03", 1, "lock_timeout"},
    {"55006", 1, "object in use"},
    {"55000", 1, "object not in prerequisite state (a server in recovery)"},
    {"53100", 1, "disk full"},
    {"53200", 1, "out of memory"},
    {"53300", 1, "too many connections"},
    {"58030", 1, "I/O error"},
    {"XX000", 1, "internal error"},
    {"XX001", 1, "data corrupted"},
    {"F0000", 1, "configuration file error"},
    {"HV00N", 1, "a foreign server's connection"},
    {"3D000", 1, "no such database"},
    {"28000", 1, "invalid authorization"},
    {"28P01", 1, "invalid password"},
    {"25006", 1, "read-only transaction"},
    {"25P03", 1, "idle_in_transaction_session_timeout"},
    {"25P04", 1, "transaction_timeout"},
    {"72000", 1, "snapshot too old"},
    {"42501", 1, "a revoked grant (stop 41)"},
    {"42P01", 1, "a missing table: a migration window (stop 41)"},
    /* the plugin's */
    {"42601", 0, "syntax error"},
    {"42703", 0, "undefined column"},
    {"42883", 0, "undefined function"},
    {"42P02", 0, "undefined parameter"},
    {"42804", 0, "datatype mismatch"},
    {"P0001", 0, "a RAISE of its function"},
    {"P0002", 0, "no data found"},
    {"P0004", 0, "assert failure"},
    {"21000", 0, "cardinality violation"},
    {"0A000", 0, "feature not supported"},
    {"2F005", 0, "function ended without RETURN"},
    {"38001", 0, "SQL routine exception"},
    {"39P01", 0, "trigger protocol violated"},
    {"44000", 0, "WITH CHECK OPTION violation"},
    {"34000", 0, "invalid cursor name"},
    {"26000", 0, "invalid statement name"},
    {"22012", 0, "division by zero"},
    {"22P02", 0, "invalid text representation"},
    {"23505", 0, "unique violation"},
    {"23503", 0, "foreign key violation"},
    {"40001", 0, "serialization failure"},
    {"40P01", 0, "deadlock"},
    {"25001", 0, "active SQL transaction (VACUUM in a transaction)"},
    {"25P02", 0, "in an aborted transaction: the earlier error tells"},
    {"55P02", 0, "a setting it cannot change now"},
    {"55P04", 0, "an enum value it added and used"},
    {"54001", 0, "stack depth limit: its recursion"},
    {"0B000", 0, "invalid transaction initiation"},
    {"", 0, "no failure"},
};

int
main(void)
{
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        int got = idem_plugin_state_stale(rows[i].state);
        if (got != rows[i].store) {
            fprintf(stderr, "%s (%s): %s's fault, want %s's\n", rows[i].state, rows[i].what,
                    got ? "the store" : "the plugin", rows[i].store ? "the store" : "the plugin");
        }
        CHECK_INT(got, rows[i].store);
    }
    /* twiced's own statements: their SQL is the table's, so a 42601 or 42703 there
     * means the table changed under it, an operator's matter */
    CHECK_INT(idem_state_stale("42703"), 1);
    CHECK_INT(idem_state_stale("42601"), 1);
    return check_done("test-idem-plugin-fault");
}
