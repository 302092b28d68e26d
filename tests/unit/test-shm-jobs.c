/*
 * test-shm-jobs.c - what a worker writes into the shared region's job table
 * and DLQ events for the master to read: each text field cut to its slot
 * (one byte kept for the NUL), NULL written as "", and the record's state;
 * a job's queue and plugin named whole from the master's names (jobnames.h).
 * One process, a real shared region (shm_create).
 */
#include "check.h"
#include "config.h"
#include "jobnames.h"
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
    CHECK_INT(shm_job_begin(3, 1, 1, 0, id, 2), 1);
    const struct shm_job *j = &shm_region()->jobs[3].job[1];
    CHECK_INT(j->used, 2);
    CHECK_INT(j->attempt, 2);
    CHECK_INT(j->queue, 1);
    CHECK_INT(j->plugin, 0);
    CHECK_INT(strlen(j->message_id), sizeof(j->message_id) - 1);
    CHECK(strncmp(j->message_id, id, sizeof(j->message_id) - 1) == 0);
    CHECK_INT(shm_thread_job(), 1);

    /* the next job on that thread leaves nothing of the longer one behind */
    CHECK_INT(shm_job_begin(3, 1, 0, 0, NULL, 1), 1);
    CHECK_INT(j->queue, 0);
    CHECK_STR(j->message_id, "");
    shm_job_end(3, 1);
    CHECK_INT(j->used, 0);
    CHECK_INT(shm_thread_job(), -1);
}

/* The master names a job record from its generation's configuration: names
 * of CONFIG_MAX_NAME bytes whole (the record once kept 63 of them); a record
 * whose indices are out of range, or whose worker's configuration has other
 * names than the master's (it read changed @include files) or has not said
 * yet, is named "?". */
static void
test_job_names(void)
{
    char q0[CONFIG_MAX_NAME + 1], q1[CONFIG_MAX_NAME + 1], pl[CONFIG_MAX_NAME + 1];
    memset(q0, 'a', CONFIG_MAX_NAME);
    memset(q1, 'b', CONFIG_MAX_NAME);
    memset(pl, 'p', CONFIG_MAX_NAME);
    q0[CONFIG_MAX_NAME] = q1[CONFIG_MAX_NAME] = pl[CONFIG_MAX_NAME] = '\0';
    struct config_queue queues[2] = {{.name = q0}, {.name = q1}};
    struct config_plugin plugins[1] = {{.name = pl}};
    struct config c = {.queues = queues, .nqueues = 2, .plugins = plugins, .nplugins = 1};
    struct jobnames *n = jobnames_new(&c);
    CHECK(n != NULL);
    CHECK(jobnames_hold(n) == n);
    jobnames_drop(n); /* the worker's hold; the generation's remains */

    CHECK_INT(shm_jobs_grow(4, 1), 0);
    shm_proc_names(4, shm_names_of(&c));
    CHECK_INT(shm_job_begin(4, 0, 1, 0, "m-1", 1), 0);
    const struct shm_job *j = &shm_region()->jobs[4].job[0];
    uint32_t said = shm_region()->procs[4].names;
    const char *queue, *plugin;
    CHECK_INT(jobnames_get(n, j->queue, j->plugin, said, &queue, &plugin), 1);
    CHECK_STR(queue, q1);
    CHECK_STR(plugin, pl);

    /* a worker whose configuration has other names (the queues swapped) */
    struct config_queue swapped[2] = {{.name = q1}, {.name = q0}};
    struct config other = {.queues = swapped, .nqueues = 2, .plugins = plugins, .nplugins = 1};
    CHECK(shm_names_of(&other) != said);
    CHECK_INT(jobnames_get(n, j->queue, j->plugin, shm_names_of(&other), &queue, &plugin), 0);
    CHECK_STR(queue, "?");
    CHECK_STR(plugin, "?");
    CHECK_INT(jobnames_get(n, j->queue, j->plugin, 0, &queue, &plugin), 0); /* not said yet */
    CHECK_INT(jobnames_get(n, 2, 0, said, &queue, &plugin), 0);
    CHECK_INT(jobnames_get(n, 1, -1, said, &queue, &plugin), 0);
    CHECK_INT(jobnames_get(NULL, 1, 0, said, &queue, &plugin), 0);
    shm_job_end(4, 0);
    jobnames_drop(n);
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
    test_job_names();
    test_dlq_event_fields();
    return check_done("test-shm-jobs");
}
