/*
 * fuzz-keytmpl.c - libFuzzer target: compile a key template and expand it
 * against a message. Not a test of JSON parsing itself (fuzz-body is).
 *
 * Input, cut at the first three '\n': template, value of the String
 * attribute "A", FIFO group id (an empty line: none), JSON body (the rest).
 * Promises checked: a key is 1..TWICE_KEY_MAX bytes without control
 * characters; a failed expansion leaves the output as it was and names a
 * DLQ reason; no error text carries a control byte into a log line.
 */
#include "fuzz.h"

#include "buf.h"
#include "jsonpath.h"
#include "keytmpl.h"

#include <twice/plugin.h>

#define PREFIX "pre:"

/* The message's attributes: "A" (String, the input's second line) and
 * "B" (Binary). ctx is A's text. */
static int
find_attr(const void *ctx, const char *name, struct keytmpl_attr *out)
{
    if (strcmp(name, "A") == 0) {
        *out = (struct keytmpl_attr){"String", ctx};
    } else if (strcmp(name, "B") == 0) {
        *out = (struct keytmpl_attr){"Binary", NULL};
    } else {
        return -1;
    }
    return 0;
}

static void
expand(const struct keytmpl *t, const struct fuzz_pieces *f)
{
    char err[256], body_err[256];
    struct keytmpl_input in = {.attr = find_attr, .attr_ctx = f->p[1]};
    struct buf out = BUF_INIT;
    struct jsondoc *body = NULL;

    in.group_id = f->len[2] > 0 ? f->p[2] : NULL;
    if (keytmpl_needs_body(t)) {
        body = jsondoc_parse(f->p[3], f->len[3], body_err, sizeof(body_err));
        in.body = body;
        in.body_error = body != NULL ? NULL : body_err;
    }
    buf_puts(&out, PREFIX); /* expansion appends: what was there must stay */
    enum keytmpl_result r = keytmpl_expand(t, &in, &out, err, sizeof(err));
    FUZZ_ASSERT(out.len >= strlen(PREFIX) && memcmp(out.data, PREFIX, strlen(PREFIX)) == 0);
    if (r == KEYTMPL_OK) {
        size_t klen = out.len - strlen(PREFIX);
        FUZZ_ASSERT(klen >= 1 && klen <= TWICE_KEY_MAX);
        FUZZ_ASSERT(!fuzz_has_control(out.data + strlen(PREFIX), klen, ""));
        FUZZ_ASSERT(keytmpl_reason(r)[0] == '\0');
    } else {
        FUZZ_ASSERT(out.len == strlen(PREFIX));
        FUZZ_ASSERT(keytmpl_reason(r)[0] != '\0');
        FUZZ_ASSERT(!fuzz_has_control(err, strlen(err), ""));
    }
    buf_free(&out);
    jsondoc_free(body);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_pieces f;
    struct keytmpl *t = NULL;
    char err[256];

    if (fuzz_split(data, size, '\n', 4, &f) != 0) {
        return 0;
    }
    if (keytmpl_compile(f.p[0], &t, err, sizeof(err)) == 0) {
        FUZZ_ASSERT(t != NULL);
        expand(t, &f);
        keytmpl_free(t);
    } else {
        FUZZ_ASSERT(t == NULL);
        FUZZ_ASSERT(strncmp(err, "column ", 7) == 0 || strcmp(err, "out of memory") == 0);
        FUZZ_ASSERT(!fuzz_has_control(err, strlen(err), ""));
    }
    fuzz_pieces_free(&f);
    return 0;
}
