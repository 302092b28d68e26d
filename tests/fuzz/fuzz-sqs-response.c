/*
 * fuzz-sqs-response.c - libFuzzer target: every parser of SQS response
 * bodies (core/sqs/sqs_parse.h: the streaming ReceiveMessage and batch
 * readers of sqs_receive.c and sqs_results.c, the jansson ones of
 * sqs_parse.c) on the same bytes, as a broken or hostile endpoint could
 * send them. Not for the transport (sqs.c) or signing.
 *
 * Input, cut at the first two NUL bytes: response body, x-amzn-query-error
 * header, x-amzn-ErrorType header (absent pieces: no header). Promises
 * checked: a parsed message has its id, receipt handle and a terminated
 * body, all in its batch's shared memory, which outlives any of them moved
 * away and is freed by the last (ASan and LSan watch); attributes are
 * String-like or Binary, never neither, with names unique; batch results
 * are one per entry; an error has a code without the "#" or ":" parts of
 * __type and is retryable on 5xx and on throttling.
 */
#include "fuzz.h"

#include "buf.h"
#include "sqs.h"
#include "sqs_parse.h"

static void
check_messages(const struct sqs_message *m, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        FUZZ_ASSERT(m[i].message_id != NULL && m[i].receipt_handle != NULL);
        FUZZ_ASSERT(m[i].receive_count >= 1);
        FUZZ_ASSERT(m[i].body != NULL && m[i].body[m[i].body_len] == '\0');
        for (size_t k = 0; k < m[i].nattrs; k++) {
            const struct sqs_attr *a = &m[i].attrs[k];
            FUZZ_ASSERT(a->name != NULL && a->data_type != NULL);
            if (strncmp(a->data_type, "Binary", 6) == 0) {
                FUZZ_ASSERT(a->string_value == NULL && a->binary != NULL);
            } else {
                FUZZ_ASSERT(a->string_value != NULL && a->binary == NULL);
            }
        }
        char md5[33];
        FUZZ_ASSERT(m[i].nattrs == 0 || sqs_md5_of_attrs(m[i].attrs, m[i].nattrs, md5) == 0);
        for (size_t k = 0; k < m[i].nattrs; k++) {
            for (size_t l = k + 1; l < m[i].nattrs; l++) {
                FUZZ_ASSERT(strcmp(m[i].attrs[k].name, m[i].attrs[l].name) != 0);
            }
        }
        FUZZ_ASSERT(m[i].batch != NULL && m[i].batch == m[0].batch);
    }
}

/* Let go of the messages out of order, one moved away and read after the
 * rest are gone: the batch must live until its last message does. */
static void
release(struct sqs_message *msgs, size_t n)
{
    if (n == 0) {
        free(msgs);
        return;
    }
    struct sqs_message kept = msgs[n / 2];
    memset(&msgs[n / 2], 0, sizeof(kept));
    for (size_t i = n; i-- > 0;) {
        sqs_message_clear(&msgs[i]);
    }
    free(msgs);
    FUZZ_ASSERT(kept.body[kept.body_len] == '\0' && kept.message_id != NULL);
    sqs_message_clear(&kept);
}

static void
receive(const struct fuzz_pieces *f)
{
    struct sqs_message *msgs = NULL;
    size_t n = 99;
    struct sqs_error e;
    char text[1024];

    if (sqs_parse_receive(f->p[0], f->len[0], &msgs, &n, &e) == 0) {
        FUZZ_ASSERT(n == 0 || msgs != NULL);
        check_messages(msgs, n);
        release(msgs, n);
    } else {
        FUZZ_ASSERT(msgs == NULL && n == 0 && e.code[0] != '\0');
        sqs_error_describe(&e, "ReceiveMessage", text, sizeof(text));
    }
}

static void
batch(const struct fuzz_pieces *f)
{
    const char *ids[10];
    struct sqs_batch_result results[10];
    struct sqs_error e;

    for (size_t i = 0; i < 10; i++) {
        ids[i] = sqs_batch_id(i);
    }
    if (sqs_parse_batch(f->p[0], f->len[0], ids, 10, results, &e) != 0) {
        return;
    }
    for (size_t i = 0; i < 10; i++) {
        FUZZ_ASSERT(memchr(results[i].code, '\0', sizeof(results[i].code)) != NULL);
        FUZZ_ASSERT(memchr(results[i].message, '\0', sizeof(results[i].message)) != NULL);
        FUZZ_ASSERT(results[i].ok || results[i].code[0] != '\0');
    }
}

static void
others(const struct fuzz_pieces *f)
{
    struct sqs_kv *kv = NULL;
    size_t n = 0;
    char *url = NULL;
    struct sqs_error e;

    if (sqs_parse_attributes(f->p[0], f->len[0], &kv, &n, &e) == 0) {
        for (size_t i = 0; i < n; i++) {
            FUZZ_ASSERT(sqs_kv_get(kv, n, kv[i].name) != NULL);
        }
    }
    sqs_kv_free(kv, n);
    if (sqs_parse_string_member(f->p[0], f->len[0], "QueueUrl", &url, &e) == 0) {
        FUZZ_ASSERT(url != NULL);
    } else {
        FUZZ_ASSERT(url == NULL);
    }
    free(url);
}

static void
error(const struct fuzz_pieces *f, long status)
{
    struct sqs_error e;
    char text[1024];

    sqs_parse_error(status, f->p[0], f->len[0], f->n > 1 ? f->p[1] : NULL,
                    f->n > 2 ? f->p[2] : NULL, &e);
    FUZZ_ASSERT(e.http_status == status && !e.transport);
    FUZZ_ASSERT(e.code[0] != '\0');
    FUZZ_ASSERT(strncmp(e.code, "HTTP ", 5) == 0 ||
                (strchr(e.code, '#') == NULL && strchr(e.code, ':') == NULL));
    FUZZ_ASSERT(strchr(e.query_code, ';') == NULL);
    FUZZ_ASSERT(!e.throttled || e.retryable);
    FUZZ_ASSERT(status != 503 || e.retryable);
    sqs_error_describe(&e, "ReceiveMessage", text, sizeof(text));
    FUZZ_ASSERT(strncmp(text, "ReceiveMessage: ", 16) == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_pieces f;

    if (fuzz_split(data, size, '\0', 3, &f) != 0) {
        return 0;
    }
    receive(&f);
    batch(&f);
    others(&f);
    error(&f, 400);
    error(&f, 503);
    fuzz_pieces_free(&f);
    return 0;
}
