/*
 * followup.c - a follow-up message as SQS gets it (followup.h): its
 * attributes and twice-outbox-id, its FIFO deduplication id, the bytes SQS
 * counts, batches, and one SendMessageBatch. No storage, no logging.
 */
#include "followup.h"

#include "digest.h"
#include "sendcheck.h"
#include "sqs_limits.h"
#include "sqs_parse.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <twice/plugin.h>

/* SendMessageBatch's total payload limit is that of one message. */
#define FOLLOWUP_BATCH_BYTES SQS_MESSAGE_MAX_BYTES

/* A message's attributes and FIFO deduplication id, built from a follow-up
 * for one call. */
struct wire {
    struct sqs_attr attrs[SENDCHECK_MAX_ATTRS + 1];
    size_t nattrs;
    json_t *parsed; /* owns the user attributes' strings */
    char id_value[TWICE_KEY_MAX + 32];
    char dedup[65];
};

/* The attributes of f (its own ones, then twice-outbox-id) and the
 * deduplication id (the hex SHA-256 of twice-outbox-id) into *w; free
 * w->parsed after the call. 0, or -1 out of memory. */
static int
wire_build(const struct followup *f, struct wire *w)
{
    memset(w, 0, sizeof(*w));
    snprintf(w->id_value, sizeof(w->id_value), "%s#%d", f->key, f->idx);
    if (f->attrs != NULL) {
        w->parsed = json_loads(f->attrs, 0, NULL);
        size_t n = json_is_array(w->parsed) ? json_array_size(w->parsed) : 0;
        for (size_t i = 0; i + 1 < n && w->nattrs < SENDCHECK_MAX_ATTRS; i += 2) {
            w->attrs[w->nattrs++] = (struct sqs_attr){
                .name = (char *) json_string_value(json_array_get(w->parsed, i)),
                .data_type = "String",
                .string_value = (char *) json_string_value(json_array_get(w->parsed, i + 1)),
            };
        }
    }
    w->attrs[w->nattrs++] = (struct sqs_attr){
        .name = SENDCHECK_ID_ATTR, .data_type = "String", .string_value = w->id_value};
    unsigned char sha[32];
    if (digest_sha256(w->id_value, strlen(w->id_value), sha) != 0) {
        return -1;
    }
    for (int i = 0; i < 32; i++) {
        snprintf(w->dedup + 2 * i, 3, "%02x", sha[i]);
    }
    return 0;
}

size_t
followup_bytes(const struct followup *f)
{
    char idx[16];
    size_t n = f->body_len + strlen(SENDCHECK_ID_ATTR) + strlen("String") + strlen(f->key) +
               (size_t) snprintf(idx, sizeof(idx), "#%d", f->idx);
    if (f->attrs == NULL) {
        return n;
    }
    json_t *a = json_loads(f->attrs, 0, NULL);
    if (!json_is_array(a)) {
        json_decref(a);
        return FOLLOWUP_BATCH_BYTES;
    }
    for (size_t i = 0; i < json_array_size(a); i++) {
        const char *text = json_string_value(json_array_get(a, i));
        n += (text != NULL ? strlen(text) : 0) + (i % 2 == 0 ? strlen("String") : 0);
    }
    json_decref(a);
    return n;
}

size_t
followup_batch_len(const size_t *bytes, size_t n)
{
    size_t len = 0, total = 0;
    while (len < n && len < SQS_BATCH_MAX &&
           (len == 0 || total + bytes[len] <= FOLLOWUP_BATCH_BYTES)) {
        total += bytes[len];
        len++;
    }
    return len;
}

int
followup_send_batch(struct sqs_client *c, const struct followup *const *f, size_t n,
                    struct sqs_batch_result *res, struct sqs_error *err)
{
    struct wire w[SQS_BATCH_MAX];
    struct sqs_send_entry e[SQS_BATCH_MAX];
    int fifo = sendcheck_is_fifo(f[0]->url), built = 1;
    for (size_t i = 0; i < n; i++) {
        built &= wire_build(f[i], &w[i]) == 0;
        e[i] = (struct sqs_send_entry){
            .id = sqs_batch_id(i),
            .body = f[i]->body,
            .body_len = f[i]->body_len,
            .attrs = w[i].attrs,
            .nattrs = w[i].nattrs,
            .delay_seconds = fifo || f[i]->delay == 0 ? -1 : f[i]->delay,
            .group_id = f[i]->group_id,
            .dedup_id = fifo ? w[i].dedup : NULL,
        };
    }
    memset(err, 0, sizeof(*err));
    int rc = -1;
    if (built) {
        rc = sqs_send_batch(c, f[0]->url, e, n, res, err);
    } else {
        sqs_error_set(err, "OutOfMemory", 1, "building the follow-up messages");
    }
    for (size_t i = 0; i < n; i++) {
        json_decref(w[i].parsed);
    }
    return rc;
}
