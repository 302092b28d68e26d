/*
 * test-storehealth.c - the store's health record in the shared region
 * (proc/storehealth.h): what the check writes is what /readyz and a
 * reload's check read, in another process too; a record for another store
 * says nothing; an answer goes stale; the identity and a relearn request
 * cross over; and a holder of the record's lock that died or was stopped
 * leaves readers going, not waiting. A real region (shm_create), real
 * processes (fork).
 */
#include "check.h"
#include "clock.h"
#include "shm.h"
#include "storehealth.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void
test_without_region(void)
{
    char why[256] = "";
    unsigned char id[8];
    uint64_t k = storehealth_key("dbname=x", "keys");
    storehealth_begin(k);
    storehealth_record(k, 0, "refused");
    CHECK_INT(storehealth_ok(k, why, sizeof(why)), 1); /* nothing known: ready */
    CHECK_INT(storehealth_identity(k, id, sizeof(id)), -1);
    storehealth_relearn();
    CHECK_INT(storehealth_take_relearn(), 0);
}

static void
test_keys(void)
{
    uint64_t k = storehealth_key("host=a dbname=x", "keys");
    CHECK(k != 0);
    CHECK(k == storehealth_key("host=a dbname=x", "keys"));
    CHECK(k != storehealth_key("host=b dbname=x", "keys"));
    CHECK(k != storehealth_key("host=a dbname=x", "other"));
    CHECK(storehealth_key("d", NULL) == storehealth_key("d", ""));
    /* The dsn and the table do not run into each other. */
    CHECK(storehealth_key("ab", "c") != storehealth_key("a", "bc"));
}

static void
test_outcomes(void)
{
    char why[256] = "";
    uint64_t k = storehealth_key("dbname=a", "keys"), other = storehealth_key("dbname=b", "keys");
    storehealth_begin(k);
    CHECK_INT(storehealth_ok(k, why, sizeof(why)), 1); /* healthy until a check says otherwise */
    storehealth_record(k, 0, "connection refused");
    CHECK_INT(storehealth_ok(k, why, sizeof(why)), 0);
    CHECK_STR(why, "idempotency store does not answer: connection refused");
    why[0] = '\0';
    CHECK_INT(storehealth_ok(other, why, sizeof(why)), 1); /* another store: not known */
    CHECK_STR(why, "");
    storehealth_record(other, 1, ""); /* a check of another store writes nothing */
    CHECK_INT(storehealth_ok(k, why, sizeof(why)), 0);
    storehealth_record(k, 1, "");
    CHECK_INT(storehealth_ok(k, why, sizeof(why)), 1);
    /* An answer older than STOREHEALTH_STALE_MS counts as none. */
    shm_region()->storehealth.answered_ms = clock_mono_ms() - STOREHEALTH_STALE_MS - 2000;
    CHECK_INT(storehealth_ok(k, why, sizeof(why)), 0);
    CHECK(strstr(why, "idempotency store has not answered for ") == why);
    storehealth_record(k, 1, "");
    CHECK_INT(storehealth_ok(k, why, sizeof(why)), 1);
}

static void
test_identity_and_relearn(void)
{
    const char learned[24] = "cluster 7 database a";
    char out[24];
    uint64_t k = storehealth_key("dbname=a", "keys"), other = storehealth_key("dbname=b", "keys");
    storehealth_begin(k);
    CHECK_INT(storehealth_identity(k, out, sizeof(out)), -1); /* none learned yet */
    storehealth_learned(k, learned, sizeof(learned));
    memset(out, 0, sizeof(out));
    CHECK_INT(storehealth_identity(k, out, sizeof(out)), 0);
    CHECK(memcmp(out, learned, sizeof(out)) == 0);
    CHECK_INT(storehealth_identity(k, out, sizeof(out) - 1), -1); /* not what was stored */
    CHECK_INT(storehealth_identity(other, out, sizeof(out)), -1);
    storehealth_learned(k, learned, SHM_STORE_ID_MAX + 1); /* too large: kept out */
    CHECK_INT(storehealth_identity(k, out, sizeof(out)), 0);
    storehealth_begin(other); /* a reload's new store: the old identity is not its */
    CHECK_INT(storehealth_identity(k, out, sizeof(out)), -1);
    CHECK_INT(storehealth_identity(other, out, sizeof(out)), -1);

    CHECK_INT(storehealth_take_relearn(), 0);
    storehealth_relearn();
    CHECK_INT(storehealth_take_relearn(), 1);
    CHECK_INT(storehealth_take_relearn(), 0); /* taken once */
}

/* A check in another process writes; this one reads it. */
static void
test_across_processes(void)
{
    char why[256] = "";
    uint64_t k = storehealth_key("dbname=c", "keys");
    storehealth_begin(k);
    pid_t pid = fork();
    if (pid == 0) {
        storehealth_record(k, 0, "the server is starting up");
        storehealth_relearn();
        _exit(0);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status));
    CHECK_INT(storehealth_ok(k, why, sizeof(why)), 0);
    CHECK_STR(why, "idempotency store does not answer: the server is starting up");
    CHECK_INT(storehealth_take_relearn(), 1);
}

/* A process that dies holding the record's lock does not lock it for good;
 * one stopped holding it leaves readers knowing nothing, not waiting. */
static void
test_lock_holders(void)
{
    char why[256] = "";
    uint64_t k = storehealth_key("dbname=d", "keys");
    storehealth_begin(k);
    storehealth_record(k, 0, "down");
    int ready[2];
    CHECK(pipe(ready) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        pthread_mutex_lock(&shm_region()->storehealth.lock);
        _exit(write(ready[1], "x", 1) == 1 ? 0 : 1); /* dies holding it */
    }
    int status = 0;
    char c;
    CHECK(waitpid(pid, &status, 0) == pid && read(ready[0], &c, 1) == 1);
    CHECK_INT(storehealth_ok(k, why, sizeof(why)), 0); /* taken over: still known */
    storehealth_record(k, 1, "");
    CHECK_INT(storehealth_ok(k, why, sizeof(why)), 1);

    storehealth_record(k, 0, "down");
    pid = fork();
    if (pid == 0) {
        pthread_mutex_lock(&shm_region()->storehealth.lock);
        if (write(ready[1], "x", 1) != 1) {
            _exit(1);
        }
        pause(); /* holds it until killed */
        _exit(0);
    }
    CHECK(read(ready[0], &c, 1) == 1);
    long long t0 = clock_mono_ms();
    CHECK_INT(storehealth_ok(k, why, sizeof(why)), 1); /* not known, not waited for */
    CHECK(clock_mono_ms() - t0 < 2000);
    kill(pid, SIGKILL);
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK_INT(storehealth_ok(k, why, sizeof(why)), 0); /* the record itself was kept */
    close(ready[0]);
    close(ready[1]);
}

int
main(void)
{
    test_without_region();
    test_keys();
    CHECK(shm_create() >= 0);
    test_outcomes();
    test_identity_and_relearn();
    test_across_processes();
    test_lock_holders();
    return check_done("test-storehealth");
}
