/*
 * test-shm-jobs.c - what a worker writes into the shared region's job table
 * and DLQ events for the master to read: each text field cut to its slot
 * (one byte kept for the NUL), NULL written as "", and the record's state.
 * One process, a real shared region (shm_create).
 */
#include "check.h"
#include "shm.h"

#include <string.h>

/* A job's fields as the master reads them; a long message id is cut. */
static void
test_job_fields(void)
{
    char id[300];
    memset(id, 'm', sizeof(id) - 1);
    id[sizeof(id) - 1] = '\0';
    CHECK_INT(shm_jobs_grow(3, 2), 0);
    CHECK_INT(shm_job_begin(3, 1, "orders", "noop", id, 2), 1);
    const struct shm_job *j = &shm_region()->jobs[3].job[1];
    CHECK_INT(j->used, 2);
    CHECK_INT(j->attempt, 2);
    CHECK_STR(j->queue, "orders");
    CHECK_STR(j->plugin, "noop");
    CHECK_INT(strlen(j->message_id), sizeof(j->message_id) - 1);
    CHECK(strncmp(j->message_id, id, sizeof(j->message_id) - 1) == 0);
    CHECK_INT(shm_thread_job(), 1);

    /* the next job on that thread leaves nothing of the longer one behind */
    CHECK_INT(shm_job_begin(3, 1, "q", "p", NULL, 1), 1);
    CHECK_STR(j->queue, "q");
    CHECK_STR(j->message_id, "");
    shm_job_end(3, 1);
    CHECK_INT(j->used, 0);
    CHECK_INT(shm_thread_job(), -1);
}

/* A DLQ event's fields, each cut to its slot. */
static void
test_dlq_event_fields(void)
{
    char key[1000];
    memset(key, 'k', sizeof(key) - 1);
    key[sizeof(key) - 1] = '\0';
    shm_dlq_event("orders", NULL, "invalid-json", "id-1", key);
    const struct shm_region *r = shm_region();
    const struct shm_dlq_event *e = &r->dlq[r->dlq_next % SHM_DLQ_EVENTS];
    CHECK_INT(e->seq, r->dlq_next);
    CHECK_STR(e->queue, "orders");
    CHECK_STR(e->plugin, "");
    CHECK_STR(e->reason, "invalid-json");
    CHECK_STR(e->message_id, "id-1");
    CHECK_INT(strlen(e->key), sizeof(e->key) - 1);
}

int
main(void)
{
    CHECK(shm_create() >= 0);
    if (shm_region() == NULL) {
        return check_done("test-shm-jobs");
    }
    test_job_fields();
    test_dlq_event_fields();
    return check_done("test-shm-jobs");
}
