/*
 * sqs_parse.c - SQS response bodies to C structs: received messages with
 * their attributes and MD5 checks, batch results, queue attributes. Pure
 * functions over jansson; requests and transport live in sqs.c.
 */
#include "sqs_parse.h"

#include "buf.h"

#include <jansson.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

/* Parse a response body; NULL (with e set, retryable) when it is not a
 * JSON object. An empty body counts as {} (void operations). */
static json_t *
sqs_load(const char *json, size_t len, struct sqs_error *e)
{
    if (len == 0) {
        return json_object();
    }
    json_error_t jerr;
    json_t *root = json_loadb(json, len, JSON_ALLOW_NUL, &jerr);
    if (!json_is_object(root)) {
        sqs_error_set(e, "MalformedResponse", 1, "the response is not a JSON object: %s",
                      root == NULL ? jerr.text : "wrong type");
        json_decref(root);
        return NULL;
    }
    return root;
}

int
sqs_md5_hex(const void *data, size_t len, char out[33])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    out[0] = '\0';
    if (EVP_Digest(data, len, md, &mdlen, EVP_md5(), NULL) != 1 || mdlen != 16) {
        return -1;
    }
    static const char hex[] = "0123456789abcdef";
    for (unsigned int i = 0; i < 16; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[32] = '\0';
    return 0;
}

int
sqs_base64_decode(const char *in, size_t len, unsigned char **out, size_t *outlen)
{
    *out = NULL;
    *outlen = 0;
    if (len % 4 != 0 || len > (size_t) 0x7fffffff) {
        return -1;
    }
    unsigned char *p = malloc(len / 4 * 3 + 1);
    if (p == NULL) {
        return -1;
    }
    int n = len > 0 ? EVP_DecodeBlock(p, (const unsigned char *) in, (int) len) : 0;
    if (n < 0) {
        free(p);
        return -1;
    }
    /* EVP_DecodeBlock counts padding as zero bytes: take them off */
    size_t pad = (len >= 1 && in[len - 1] == '=') + (len >= 2 && in[len - 2] == '=');
    *out = p;
    *outlen = (size_t) n - pad;
    return 0;
}

int
sqs_base64_encode(const unsigned char *in, size_t len, struct buf *out)
{
    if (len > (size_t) 0x3fffffff || buf_reserve(out, (len + 2) / 3 * 4 + 1) != 0) {
        return -1;
    }
    int n = EVP_EncodeBlock((unsigned char *) out->data + out->len, in, (int) len);
    out->len += (size_t) n;
    out->data[out->len] = '\0';
    return 0;
}

static int
sqs_attr_cmp(const void *a, const void *b)
{
    const struct sqs_attr *const *x = a, *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

static void
sqs_put_u32(struct buf *b, size_t v)
{
    unsigned char be[4] = {(unsigned char) (v >> 24), (unsigned char) (v >> 16),
                           (unsigned char) (v >> 8), (unsigned char) v};
    buf_append(b, be, 4);
}

/* Per the reference: sorted by name, each as len+name, len+type, a
 * transport byte (1 String/Number, 2 Binary) and len+value. */
int
sqs_md5_of_attrs(const struct sqs_attr *attrs, size_t n, char out[33])
{
    const struct sqs_attr **sorted = calloc(n ? n : 1, sizeof *sorted);
    struct buf b = BUF_INIT;
    int rc = -1;
    if (sorted == NULL) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        sorted[i] = &attrs[i];
    }
    qsort(sorted, n, sizeof *sorted, sqs_attr_cmp);
    for (size_t i = 0; i < n; i++) {
        const struct sqs_attr *a = sorted[i];
        sqs_put_u32(&b, strlen(a->name));
        buf_puts(&b, a->name);
        sqs_put_u32(&b, strlen(a->data_type));
        buf_puts(&b, a->data_type);
        if (a->string_value == NULL) {
            buf_putc(&b, 2);
            sqs_put_u32(&b, a->binary_len);
            buf_append(&b, a->binary, a->binary_len);
        } else {
            buf_putc(&b, 1);
            sqs_put_u32(&b, strlen(a->string_value));
            buf_puts(&b, a->string_value);
        }
    }
    if (!b.failed) {
        rc = sqs_md5_hex(b.data != NULL ? b.data : "", b.len, out);
    }
    buf_free(&b);
    free(sorted);
    return rc;
}

static char *
sqs_dup_member(json_t *obj, const char *name)
{
    const char *s = json_string_value(json_object_get(obj, name));
    return s != NULL ? strdup(s) : NULL;
}

static void
sqs_attrs_free(struct sqs_attr *attrs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(attrs[i].name);
        free(attrs[i].data_type);
        free(attrs[i].string_value);
        free(attrs[i].binary);
    }
    free(attrs);
}

/* One MessageAttributes entry. Binary types ("Binary", "Binary.x") carry
 * BinaryValue; the rest StringValue ("" when missing). */
static int
sqs_parse_attr(const char *name, json_t *v, struct sqs_attr *a, struct sqs_error *e)
{
    const char *type = json_string_value(json_object_get(v, "DataType"));
    a->name = strdup(name);
    a->data_type = strdup(type != NULL ? type : "String");
    if (a->name == NULL || a->data_type == NULL) {
        sqs_error_set(e, "OutOfMemory", 0, "out of memory");
        return -1;
    }
    if (strncmp(a->data_type, "Binary", 6) == 0) {
        json_t *bv = json_object_get(v, "BinaryValue");
        const char *s = json_string_value(bv);
        if (s == NULL ||
            sqs_base64_decode(s, json_string_length(bv), &a->binary, &a->binary_len) != 0) {
            sqs_error_set(e, "MalformedResponse", 1, "message attribute %.64s: bad BinaryValue",
                          name);
            return -1;
        }
        return 0;
    }
    const char *s = json_string_value(json_object_get(v, "StringValue"));
    if ((a->string_value = strdup(s != NULL ? s : "")) == NULL) {
        sqs_error_set(e, "OutOfMemory", 0, "out of memory");
        return -1;
    }
    return 0;
}

static int
sqs_parse_attrs(json_t *obj, struct sqs_message *m, struct sqs_error *e)
{
    size_t n = json_object_size(obj);
    if (!json_is_object(obj) || n == 0) {
        return 0;
    }
    if ((m->attrs = calloc(n, sizeof *m->attrs)) == NULL) {
        sqs_error_set(e, "OutOfMemory", 0, "out of memory");
        return -1;
    }
    const char *name;
    json_t *v;
    json_object_foreach(obj, name, v)
    {
        /* count first: a failed entry is freed with the message */
        m->nattrs++;
        if (sqs_parse_attr(name, v, &m->attrs[m->nattrs - 1], e) != 0) {
            return -1;
        }
    }
    return 0;
}

/* A system attribute as text: SQS sends strings; accept numbers too. */
static const char *
sqs_sysattr(json_t *attrs, const char *name, char *tmp, size_t len)
{
    json_t *v = json_object_get(attrs, name);
    if (json_is_integer(v)) {
        snprintf(tmp, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return tmp;
    }
    return json_string_value(v);
}

static int
sqs_parse_sysattrs(json_t *attrs, struct sqs_message *m)
{
    char tmp[32];
    const char *s;
    m->receive_count = 1;
    if ((s = sqs_sysattr(attrs, "ApproximateReceiveCount", tmp, sizeof tmp)) != NULL) {
        long v = strtol(s, NULL, 10);
        m->receive_count = v < 1 ? 1 : v > 0x7fffffff ? 0x7fffffff : (int) v;
    }
    if ((s = sqs_sysattr(attrs, "SentTimestamp", tmp, sizeof tmp)) != NULL) {
        m->sent_timestamp_ms = strtoll(s, NULL, 10);
    }
    if ((s = sqs_sysattr(attrs, "MessageGroupId", tmp, sizeof tmp)) != NULL &&
        (m->group_id = strdup(s)) == NULL) {
        return -1;
    }
    if ((s = sqs_sysattr(attrs, "AWSTraceHeader", tmp, sizeof tmp)) != NULL &&
        (m->aws_trace_header = strdup(s)) == NULL) {
        return -1;
    }
    return 0;
}

/* Body: MD5OfBody checked on the bytes as received, then copied. */
static int
sqs_parse_body(json_t *jm, struct sqs_message *m, struct sqs_error *e)
{
    json_t *jb = json_object_get(jm, "Body");
    const char *body = json_string_value(jb);
    if (body == NULL) {
        sqs_error_set(e, "MalformedResponse", 1, "message %.64s has no Body",
                      m->message_id != NULL ? m->message_id : "?");
        return -1;
    }
    m->body_len = json_string_length(jb);
    const char *want = json_string_value(json_object_get(jm, "MD5OfBody"));
    char md5[33];
    if (want != NULL && sqs_md5_hex(body, m->body_len, md5) == 0 && strcasecmp(md5, want) != 0) {
        sqs_error_set(e, "BodyMD5Mismatch", 1, "message %.64s: MD5OfBody %.40s, body hashes to %s",
                      m->message_id, want, md5);
        return -1;
    }
    if ((m->body = malloc(m->body_len + 1)) == NULL) {
        sqs_error_set(e, "OutOfMemory", 0, "out of memory");
        return -1;
    }
    memcpy(m->body, body, m->body_len);
    m->body[m->body_len] = '\0';
    return 0;
}

static int
sqs_check_attrs_md5(json_t *jm, const struct sqs_message *m, struct sqs_error *e)
{
    const char *want = json_string_value(json_object_get(jm, "MD5OfMessageAttributes"));
    char md5[33];
    if (want == NULL || m->nattrs == 0 || sqs_md5_of_attrs(m->attrs, m->nattrs, md5) != 0) {
        return 0; /* nothing to check against, or no MD5 here (FIPS) */
    }
    if (strcasecmp(md5, want) != 0) {
        sqs_error_set(e, "AttributesMD5Mismatch", 1,
                      "message %.64s: MD5OfMessageAttributes %.40s, attributes hash to %s",
                      m->message_id, want, md5);
        return -1;
    }
    return 0;
}

static int
sqs_parse_message(json_t *jm, struct sqs_message *m, struct sqs_error *e)
{
    if (!json_is_object(jm)) {
        sqs_error_set(e, "MalformedResponse", 1, "a message is not a JSON object");
        return -1;
    }
    m->message_id = sqs_dup_member(jm, "MessageId");
    m->receipt_handle = sqs_dup_member(jm, "ReceiptHandle");
    if (m->message_id == NULL || m->receipt_handle == NULL) {
        sqs_error_set(e, "MalformedResponse", 1, "a message lacks MessageId or ReceiptHandle");
        return -1;
    }
    if (sqs_parse_body(jm, m, e) != 0 ||
        sqs_parse_attrs(json_object_get(jm, "MessageAttributes"), m, e) != 0 ||
        sqs_check_attrs_md5(jm, m, e) != 0) {
        return -1;
    }
    if (sqs_parse_sysattrs(json_object_get(jm, "Attributes"), m) != 0) {
        sqs_error_set(e, "OutOfMemory", 0, "out of memory");
        return -1;
    }
    return 0;
}

int
sqs_parse_receive(const char *json, size_t len, struct sqs_message **msgs, size_t *n,
                  struct sqs_error *e)
{
    *msgs = NULL;
    *n = 0;
    json_t *root = sqs_load(json, len, e);
    if (root == NULL) {
        return -1;
    }
    json_t *arr = json_object_get(root, "Messages");
    size_t count = json_array_size(arr);
    struct sqs_message *out = NULL;
    size_t i = 0;
    int rc = -1;
    if (count == 0) {
        rc = 0; /* no "Messages" key: nothing received */
        goto done;
    }
    if ((out = calloc(count, sizeof *out)) == NULL) {
        sqs_error_set(e, "OutOfMemory", 0, "out of memory");
        goto done;
    }
    for (i = 0; i < count; i++) {
        if (sqs_parse_message(json_array_get(arr, i), &out[i], e) != 0) {
            sqs_messages_free(out, i + 1);
            out = NULL;
            goto done;
        }
    }
    *msgs = out;
    *n = count;
    rc = 0;
done:
    json_decref(root);
    return rc;
}

const char *
sqs_batch_id(size_t i)
{
    static const char *const ids[] = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
    return i < 10 ? ids[i] : "overflow";
}

void
sqs_message_clear(struct sqs_message *m)
{
    free(m->message_id);
    free(m->receipt_handle);
    free(m->body);
    free(m->group_id);
    free(m->aws_trace_header);
    sqs_attrs_free(m->attrs, m->nattrs);
    memset(m, 0, sizeof(*m));
}

void
sqs_messages_free(struct sqs_message *msgs, size_t n)
{
    for (size_t i = 0; msgs != NULL && i < n; i++) {
        sqs_message_clear(&msgs[i]);
    }
    free(msgs);
}

static long
sqs_find_id(const char *const *ids, size_t n, const char *id)
{
    for (size_t i = 0; id != NULL && i < n; i++) {
        if (strcmp(ids[i], id) == 0) {
            return (long) i;
        }
    }
    return -1;
}

/* SenderFault is a JSON boolean; accept "true" as well. */
static int
sqs_json_true(json_t *v)
{
    const char *s = json_string_value(v);
    return json_is_true(v) || (s != NULL && strcmp(s, "true") == 0);
}

static void
sqs_batch_failed(json_t *f, struct sqs_batch_result *r)
{
    const char *code = json_string_value(json_object_get(f, "Code"));
    const char *msg = json_string_value(json_object_get(f, "Message"));
    r->ok = 0;
    r->sender_fault = sqs_json_true(json_object_get(f, "SenderFault"));
    snprintf(r->code, sizeof r->code, "%s", code != NULL && code[0] != '\0' ? code : "Failed");
    snprintf(r->message, sizeof r->message, "%s", msg != NULL ? msg : "");
}

int
sqs_parse_batch(const char *json, size_t len, const char *const *ids, size_t n,
                struct sqs_batch_result *results, struct sqs_error *e)
{
    json_t *root = sqs_load(json, len, e);
    if (root == NULL) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        memset(&results[i], 0, sizeof results[i]);
        snprintf(results[i].code, sizeof results[i].code, "NoResult");
        snprintf(results[i].message, sizeof results[i].message,
                 "the response reported this entry neither successful nor failed");
    }
    size_t k;
    json_t *v;
    json_array_foreach(json_object_get(root, "Successful"), k, v)
    {
        long i = sqs_find_id(ids, n, json_string_value(json_object_get(v, "Id")));
        if (i < 0) {
            continue;
        }
        const char *mid = json_string_value(json_object_get(v, "MessageId"));
        memset(&results[i], 0, sizeof results[i]);
        results[i].ok = 1;
        snprintf(results[i].message_id, sizeof results[i].message_id, "%s",
                 mid != NULL ? mid : "");
    }
    json_array_foreach(json_object_get(root, "Failed"), k, v)
    {
        long i = sqs_find_id(ids, n, json_string_value(json_object_get(v, "Id")));
        if (i >= 0) {
            sqs_batch_failed(v, &results[i]);
        }
    }
    json_decref(root);
    return 0;
}

int
sqs_parse_attributes(const char *json, size_t len, struct sqs_kv **out, size_t *n,
                     struct sqs_error *e)
{
    *out = NULL;
    *n = 0;
    json_t *root = sqs_load(json, len, e);
    if (root == NULL) {
        return -1;
    }
    json_t *attrs = json_object_get(root, "Attributes");
    size_t count = json_object_size(attrs), i = 0;
    struct sqs_kv *kv = calloc(count ? count : 1, sizeof *kv);
    int rc = -1;
    const char *name;
    json_t *v;
    if (kv == NULL) {
        goto nomem;
    }
    json_object_foreach(attrs, name, v)
    {
        char tmp[32];
        const char *s = sqs_sysattr(attrs, name, tmp, sizeof tmp);
        kv[i].name = strdup(name);
        kv[i].value = strdup(s != NULL ? s : "");
        i++;
        if (kv[i - 1].name == NULL || kv[i - 1].value == NULL) {
            goto nomem;
        }
    }
    *out = kv;
    *n = i;
    rc = 0;
    goto done;
nomem:
    sqs_kv_free(kv, i);
    sqs_error_set(e, "OutOfMemory", 0, "out of memory");
done:
    json_decref(root);
    return rc;
}

void
sqs_kv_free(struct sqs_kv *kv, size_t n)
{
    for (size_t i = 0; kv != NULL && i < n; i++) {
        free(kv[i].name);
        free(kv[i].value);
    }
    free(kv);
}

const struct sqs_attr *
sqs_attr_find(const struct sqs_attr *attrs, size_t n, const char *name)
{
    for (size_t i = 0; name != NULL && i < n; i++) {
        if (attrs[i].name != NULL && strcmp(attrs[i].name, name) == 0) {
            return &attrs[i];
        }
    }
    return NULL;
}

const char *
sqs_kv_get(const struct sqs_kv *kv, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(kv[i].name, name) == 0) {
            return kv[i].value;
        }
    }
    return NULL;
}

int
sqs_parse_string_member(const char *json, size_t len, const char *name, char **out,
                        struct sqs_error *e)
{
    *out = NULL;
    json_t *root = sqs_load(json, len, e);
    if (root == NULL) {
        return -1;
    }
    const char *s = json_string_value(json_object_get(root, name));
    int rc = -1;
    if (s == NULL) {
        sqs_error_set(e, "MalformedResponse", 1, "the response has no %s", name);
    } else if ((*out = strdup(s)) == NULL) {
        sqs_error_set(e, "OutOfMemory", 0, "out of memory");
    } else {
        rc = 0;
    }
    json_decref(root);
    return rc;
}
