/*
 * payloads.c - S3 clients for a worker's threads, and deleting the payload
 * objects of finished jobs (delete_payload) after their messages are
 * deleted, never before: a message that is still in SQS still needs it.
 */
#include "payloads.h"

#include "config.h"
#include "job.h"
#include "log.h"
#include "payload.h"
#include "s3.h"
#include "sqs.h"
#include "worker.h"

#include <stdio.h>

struct s3_client *
payloads_client(struct worker *w)
{
    struct s3_client *c = NULL;
    char err[512];
    if (s3_client_new(w->cfg->aws.s3_endpoint, w->endpoint->region, w->cfg->aws.ca_file, w->creds,
                      &c, err, sizeof(err)) != 0) {
        log_error("S3 client: %s; payloads in S3 wait until a reload fixes it", err);
        return NULL;
    }
    return c;
}

/* Does j's payload go now? */
static int
payload_done(const struct twice_job *j)
{
    return j->pointer != NULL && j->msg_deleted && j->qcfg->delete_payload &&
           (j->action == JOB_ACT_COMPLETE || j->action == JOB_ACT_DELETE);
}

void
payloads_delete(struct worker *w, struct s3_client **s3, struct twice_job *list)
{
    for (struct twice_job *j = list; j != NULL; j = j->next) {
        if (!payload_done(j)) {
            continue;
        }
        if (*s3 == NULL && (*s3 = payloads_client(w)) == NULL) {
            return;
        }
        struct s3_error e;
        if (s3_delete(*s3, j->pointer->bucket, j->pointer->key, &e) != 0) {
            job_log(TWICE_LOG_WARN, j, "deleting its payload %s/%s from S3 failed: %s",
                    j->pointer->bucket, j->pointer->key, e.message);
        }
    }
}
