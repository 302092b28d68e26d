/*
 * fuzz-body.c - libFuzzer target: message bodies as twice reads them
 * (jsonpath_parse_body, jsonpath_get, jsonpath_scalar_text). Not for key
 * templates (fuzz-keytmpl) or SQS responses (fuzz-sqs-response).
 *
 * Input: the first line is a dotted path, the rest the body. Promises
 * checked: a refused body's error has no control byte (it goes into DLQ
 * attributes and logs); what twice accepts it can write and read back
 * unchanged; a real number's text reads back as the same double; the empty
 * path is the root.
 */
#include "fuzz.h"

#include "buf.h"
#include "jsonpath.h"

#include <jansson.h>

/* A scalar's text; for reals, that it reads back as the same value. */
static void
check_scalar(const json_t *v)
{
    struct buf text = BUF_INIT;
    int rc = jsonpath_scalar_text(v, &text);

    if (v == NULL || json_is_null(v) || json_is_object(v) || json_is_array(v)) {
        FUZZ_ASSERT(rc == -1 && text.len == 0);
    } else {
        FUZZ_ASSERT(rc == 0);
        if (json_is_real(v)) {
            FUZZ_ASSERT(strtod(buf_str(&text), NULL) == json_real_value(v));
        } else if (json_is_string(v)) {
            FUZZ_ASSERT(text.len == json_string_length(v));
        }
    }
    buf_free(&text);
}

/* Written back with jansson and parsed the strict way, the body is equal. */
static void
check_round_trip(const json_t *root)
{
    char err[256];
    char *text = json_dumps(root, JSON_ENCODE_ANY | JSON_COMPACT);

    if (text == NULL) {
        return; /* out of memory */
    }
    json_t *again = jsonpath_parse_body(text, strlen(text), err, sizeof(err));
    FUZZ_ASSERT(again != NULL);
    FUZZ_ASSERT(json_equal(root, again));
    json_decref(again);
    free(text);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_pieces f;
    char err[256];

    if (fuzz_split(data, size, '\n', 2, &f) != 0) {
        return 0;
    }
    json_t *root = jsonpath_parse_body(f.p[1], f.len[1], err, sizeof(err));
    if (root == NULL) {
        FUZZ_ASSERT(strncmp(err, "line ", 5) == 0);
        FUZZ_ASSERT(!fuzz_has_control(err, strlen(err), ""));
    } else {
        FUZZ_ASSERT(jsonpath_get(root, "") == root);
        check_scalar(jsonpath_get(root, f.p[0]));
        check_round_trip(root);
        json_decref(root);
    }
    FUZZ_ASSERT(jsonpath_get(NULL, f.p[0]) == NULL);
    fuzz_pieces_free(&f);
    return 0;
}
