/*
 * payloads.h - a worker's side of payloads kept in S3: the S3 client each
 * receiver and the acknowledger use, and the acknowledger's last step,
 * deleting the objects of finished jobs on queues with delete_payload.
 */
#ifndef TWICE_PAYLOADS_H
#define TWICE_PAYLOADS_H

struct s3_client;
struct twice_job;
struct worker;

/* An S3 client for w's region, endpoint and credentials (one per thread),
 * or NULL after logging why not (pointers then wait: keying_shape). */
struct s3_client *payloads_client(struct worker *w);

/*
 * For each job of list (linked by next) that is done or a duplicate, whose
 * message SQS deleted and whose queue says delete_payload: delete the S3
 * object its body pointed to. *s3 is made on first use. A failure is
 * logged and left: the object stays (an S3 lifecycle rule is the backstop).
 */
void payloads_delete(struct worker *w, struct s3_client **s3, struct twice_job *list);

#endif
