/*
 * payload.c - the Extended Client's S3 pointer (payload.h): telling a
 * pointer from an ordinary body, checking its bucket name and key before
 * anything is fetched, and writing one for `twicectl send`.
 */
#include "payload.h"

#include "buf.h"
#include "jsondoc.h"
#include "jsonwrite.h"
#include "s3.h"

#include <stdio.h>
#include <string.h>

/* How far into a body the class name is looked for. */
#define PAYLOAD_SNIFF 256

int
payload_looks_like_pointer(const char *body, size_t len)
{
    size_t i = 0;
    while (i < len && strchr(" \t\r\n", body[i]) != NULL && body[i] != '\0') {
        i++;
    }
    if (i == len || body[i] != '[') {
        return 0;
    }
    size_t n = len - i < PAYLOAD_SNIFF ? len - i : PAYLOAD_SNIFF;
    return memmem(body + i, n, PAYLOAD_POINTER_CLASS, strlen(PAYLOAD_POINTER_CLASS)) != NULL;
}

/* The string member `name` of the object at index o of d, NUL-free, or
 * NULL. The last one wins, as everywhere. */
static const struct jsondoc_value *
member_string(const struct jsondoc *d, uint32_t o, const char *name)
{
    const struct jsondoc_value *found = NULL;
    size_t n = strlen(name);
    uint32_t c = o + 1;
    for (uint32_t k = 0; k < d->v[o].count; k++, c = d->v[c].next) {
        const struct jsondoc_value *f = &d->v[c];
        if (f->name_len == n && memcmp(f->name, name, n) == 0) {
            found = f;
        }
    }
    if (found == NULL || found->type != JSONDOC_STRING ||
        memchr(found->str, '\0', found->len) != NULL) {
        return NULL;
    }
    return found;
}

/* Is doc the two-element array that starts with the class name? */
static int
is_pointer_shape(const struct jsondoc *d)
{
    const struct jsondoc_value *r = &d->v[0], *cls = &d->v[1];
    size_t n = strlen(PAYLOAD_POINTER_CLASS);
    return r->type == JSONDOC_ARRAY && r->count >= 1 && cls->type == JSONDOC_STRING &&
           cls->len == n && memcmp(cls->str, PAYLOAD_POINTER_CLASS, n) == 0;
}

int
payload_pointer_read(const struct jsondoc *doc, const char *body, size_t len, int has_size_attr,
                     struct payload_pointer *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof(*p));
    if (doc == NULL) {
        if (!has_size_attr && !payload_looks_like_pointer(body, len)) {
            return 0;
        }
        snprintf(err, errlen, "an S3 payload pointer that is not valid JSON");
        return -1;
    }
    if (!is_pointer_shape(doc)) {
        if (!has_size_attr) {
            return 0;
        }
        snprintf(err, errlen,
                 "the message has the " PAYLOAD_SIZE_ATTR " attribute and its "
                 "body is no S3 payload pointer");
        return -1;
    }
    uint32_t o = doc->v[1].next;
    if (doc->v[0].count != 2 || doc->v[o].type != JSONDOC_OBJECT) {
        snprintf(err, errlen, "an S3 payload pointer without its {s3BucketName, s3Key} object");
        return -1;
    }
    const struct jsondoc_value *b = member_string(doc, o, "s3BucketName");
    const struct jsondoc_value *k = member_string(doc, o, "s3Key");
    if (b == NULL || k == NULL || b->len >= sizeof(p->bucket) || k->len >= sizeof(p->key)) {
        snprintf(err, errlen,
                 "an S3 payload pointer without string s3BucketName and s3Key "
                 "(of at most 63 and 1024 bytes)");
        return -1;
    }
    memcpy(p->bucket, b->str, b->len);
    memcpy(p->key, k->str, k->len);
    if (!s3_valid_bucket(p->bucket)) {
        snprintf(err, errlen,
                 "an S3 payload pointer whose s3BucketName is not a valid bucket "
                 "name");
        return -1;
    }
    if (!s3_valid_key(p->key)) {
        snprintf(err, errlen, "an S3 payload pointer whose s3Key is not a valid object key");
        return -1;
    }
    return 1;
}

int
payload_pointer_write(struct buf *out, const char *bucket, const char *key)
{
    struct jsonwrite w;
    if (jsonwrite_begin(&w, out) != 0) {
        return -1;
    }
    jsonwrite_array(&w);
    jsonwrite_string(&w, PAYLOAD_POINTER_CLASS);
    jsonwrite_open(&w);
    jsonwrite_member_string(&w, "s3BucketName", bucket);
    jsonwrite_member_string(&w, "s3Key", key);
    jsonwrite_close(&w);
    jsonwrite_end_array(&w);
    return jsonwrite_end(&w);
}
