/*
 * fuzz-sigv4.c - libFuzzer target: the SigV4 canonical request builder
 * (sigv4_canonical_request) and the whole signature over it. Not a check
 * of signature correctness: the official vectors in test-sigv4 are.
 *
 * Input: byte 0 is the separator of the pieces that follow, byte 1 a flag
 * digit (1: normalize the path, 2: no query, 4: no body); then method,
 * path, query, up to four headers "name:value", and the body (the rest).
 * Promises checked: the canonical URI and query are fully %-encoded, a
 * normalized path has no empty, "." or ".." segments, the signed headers
 * are lower-case, sorted and unique, the payload hash is 64 hex digits,
 * and the same request always gives the same bytes.
 */
#include "fuzz.h"

#include "buf.h"
#include "creds.h"
#include "sigv4.h"

#define MAX_HEADERS 4

static int
is_encoded(char c, int slash)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '.' || c == '_' || c == '~' || c == '%' || (slash && c == '/');
}

static void
check_path(const char *s, size_t n, int normalized)
{
    FUZZ_ASSERT(n >= 1 && s[0] == '/');
    for (size_t i = 0; i < n; i++) {
        FUZZ_ASSERT(is_encoded(s[i], 1));
    }
    if (!normalized) {
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '/') {
            continue;
        }
        size_t seg = strcspn(s + i + 1, "/\n");
        size_t end = i + 1 + seg;
        FUZZ_ASSERT(seg > 0 || end == n); /* only a trailing '/' makes an empty one */
        FUZZ_ASSERT(!(seg == 1 && s[i + 1] == '.'));
        FUZZ_ASSERT(!(seg == 2 && s[i + 1] == '.' && s[i + 2] == '.'));
    }
}

static void
check_query(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        FUZZ_ASSERT(is_encoded(s[i], 0) || s[i] == '=' || s[i] == '&');
    }
}

/* "a;b;c": lower-case, strictly increasing (so no name twice). */
static void
check_signed(const char *s)
{
    const char *prev = NULL;
    size_t prevlen = 0;

    for (const char *p = s;; p++) {
        size_t n = strcspn(p, ";");
        for (size_t i = 0; i < n; i++) {
            FUZZ_ASSERT(!(p[i] >= 'A' && p[i] <= 'Z'));
        }
        if (prev != NULL) {
            int c = memcmp(prev, p, prevlen < n ? prevlen : n);
            FUZZ_ASSERT(c < 0 || (c == 0 && prevlen < n));
        }
        prev = p;
        prevlen = n;
        p += n;
        if (*p == '\0') {
            break;
        }
    }
}

/* An HTTP header name (RFC 9110 token): what any caller sends. */
static int
is_token(const char *s)
{
    if (*s == '\0') {
        return 0;
    }
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char) *s;
        if (c <= 0x20 || c >= 0x7f || strchr("\"(),/:;<=>?@[\\]{}", c) != NULL) {
            return 0;
        }
    }
    return 1;
}

/* The six lines of a canonical request, checked. Header lines may hold
 * any bytes (values are signed as sent), so the end is found from the
 * back: the payload hash, then the signed header list. */
static void
check_canonical(const struct buf *creq, const char *signed_headers, int normalized, int has_query)
{
    const char *s = buf_str(creq);
    const char *l1 = strchr(s, '\n');
    FUZZ_ASSERT(l1 != NULL);
    const char *l2 = strchr(l1 + 1, '\n');
    FUZZ_ASSERT(l2 != NULL);
    const char *l3 = strchr(l2 + 1, '\n');
    FUZZ_ASSERT(l3 != NULL);
    check_path(l1 + 1, (size_t) (l2 - l1 - 1), normalized);
    check_query(l2 + 1, (size_t) (l3 - l2 - 1));
    FUZZ_ASSERT(has_query || l3 == l2 + 1);
    FUZZ_ASSERT(creq->len >= 65 && s[creq->len - 65] == '\n');
    for (size_t i = creq->len - 64; i < creq->len; i++) {
        FUZZ_ASSERT((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'));
    }
    size_t sl = strlen(signed_headers);
    FUZZ_ASSERT(creq->len >= 66 + sl);
    FUZZ_ASSERT(memcmp(s + creq->len - 65 - sl, signed_headers, sl) == 0);
    check_signed(signed_headers);
}

static void
sign(const struct sigv4_request *r)
{
    struct creds c = {.access_key_id = "AKIDEXAMPLE",
                      .secret_access_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"};
    struct buf out = BUF_INIT;

    if (sigv4_authorization(r, &c, "us-east-1", "sqs", "20150830T123600Z", &out) == 0) {
        FUZZ_ASSERT(strncmp(buf_str(&out), "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/", 40) == 0);
    }
    buf_free(&out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_pieces f;
    struct sigv4_header h[MAX_HEADERS];
    struct buf creq = BUF_INIT, sh = BUF_INIT, again = BUF_INIT, sh2 = BUF_INIT;

    if (size < 2 || fuzz_split(data + 2, size - 2, (char) data[0], 4 + MAX_HEADERS, &f) != 0) {
        return 0;
    }
    int flags = data[1] & 7;
    struct sigv4_request r = {
        .method = is_token(f.p[0]) ? f.p[0] : "POST", /* callers pass a constant */
        .path = f.p[1],
        .query = (flags & 2) ? NULL : f.p[2],
        .headers = h,
        .body = (flags & 4) ? NULL : f.p[3 + MAX_HEADERS],
        .body_len = f.len[3 + MAX_HEADERS],
        .normalize_path = flags & 1,
    };
    for (size_t i = 0; i < MAX_HEADERS && 3 + i < f.n; i++) {
        char *line = (char *) f.p[3 + i]; /* the pieces are ours to cut */
        char *colon = strchr(line, ':');
        if (colon != NULL) {
            *colon = '\0';
        }
        if (is_token(line)) {
            h[r.nheaders].name = line;
            h[r.nheaders].value = colon != NULL ? colon + 1 : "";
            r.nheaders++;
        }
    }
    if (sigv4_canonical_request(&r, &creq, &sh) == 0) {
        check_canonical(&creq, buf_str(&sh), r.normalize_path, r.query != NULL);
        FUZZ_ASSERT(sigv4_canonical_request(&r, &again, &sh2) == 0);
        FUZZ_ASSERT(again.len == creq.len && memcmp(again.data, creq.data, creq.len) == 0);
        sign(&r);
    }
    buf_free(&creq);
    buf_free(&sh);
    buf_free(&again);
    buf_free(&sh2);
    fuzz_pieces_free(&f);
    return 0;
}
