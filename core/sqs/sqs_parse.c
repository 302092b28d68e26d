/*
 * sqs_parse.c - the SQS answers that are not on the hot path (queue
 * attributes, a string member) read with jansson, and the MD5 and base64
 * helpers every reader shares. ReceiveMessage answers are sqs_receive.c's,
 * batch results sqs_results.c's; requests and transport live in sqs.c.
 */
#include "sqs_parse.h"

#include "buf.h"
#include "digest.h"
#include "sqs_limits.h"

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
    unsigned char md[16];
    out[0] = '\0';
    if (digest_md5(data, len, md) != 0) {
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
sqs_base64_decode_into(const char *in, size_t len, unsigned char *out, size_t *outlen)
{
    *outlen = 0;
    if (len % 4 != 0 || len > (size_t) 0x7fffffff) {
        return -1;
    }
    int n = len > 0 ? EVP_DecodeBlock(out, (const unsigned char *) in, (int) len) : 0;
    if (n < 0) {
        return -1;
    }
    /* EVP_DecodeBlock counts padding as zero bytes: take them off */
    size_t pad = (len >= 1 && in[len - 1] == '=') + (len >= 2 && in[len - 2] == '=');
    *outlen = (size_t) n - pad;
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
    if (sqs_base64_decode_into(in, len, p, outlen) != 0) {
        free(p);
        return -1;
    }
    *out = p;
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

const char *
sqs_batch_id(size_t i)
{
    static const char *const ids[] = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
    _Static_assert(sizeof(ids) / sizeof(ids[0]) == SQS_BATCH_MAX, "an id per batch entry");
    return i < SQS_BATCH_MAX ? ids[i] : "overflow";
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
    for (size_t i = n; name != NULL && i > 0; i--) {
        if (attrs[i - 1].name != NULL && strcmp(attrs[i - 1].name, name) == 0) {
            return &attrs[i - 1];
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
