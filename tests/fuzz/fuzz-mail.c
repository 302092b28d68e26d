/*
 * fuzz-mail.c - libFuzzer target: what the welcome-email plugin builds a
 * mail from, as a hostile producer (the body's fields) or a careless
 * operator (templates, addresses, domain) could write it: the {{placeholder}}
 * templates filled in each mode (template_fill), the address and domain
 * checks (mime_valid_address, mime_valid_domain), the Message-ID
 * (mime_message_id) and the header lines of the message (mime_attach, which
 * needs an easy handle but no server). Not the SMTP exchange
 * (welcome_email.c: the plugin's integration test) or the base64 bodies
 * (libcurl's).
 *
 * Input: the first byte chooses (mod 3), the rest is cut at NUL bytes. 0: a
 * template and the values of its placeholders, in the order they are asked
 * for. 1: an address, a domain, an idempotency key and an id for the
 * Message-ID, written into a buffer of (first byte / 3 % 64 + 1) bytes too.
 * 2: subject, text, html, from, to, key, id and domain of a message (an
 * address or domain the checks refuse is replaced, as the plugin never
 * gets that far with it).
 * Promises checked: a filled template is the template with each value in
 * place of its placeholder, as is (raw), with & < > " ' escaped (HTML: no
 * such byte of a value reaches the output raw), or without its control
 * bytes (header: no CR or LF of a value starts a header line); an address
 * accepted has one '@' inside, at most 254 bytes and none of the bytes it
 * refuses; a domain accepted 1-253 bytes of [A-Za-z0-9.-] without an empty
 * label; a Message-ID is "<welcome-email.ID.HASH@DOMAIN>" as documented,
 * cut short only by its cap and terminated within it; the message's header
 * lines are the seven documented, in order, none with a control byte but
 * the subject's folds, whose encoded words (at most 75 bytes) decode to the
 * subject without control bytes, cut at 400 bytes on a UTF-8 boundary.
 */
#include "fuzz.h"

#include "welcome.h"

#include <openssl/evp.h>

#define SUBJECT_MAX 400 /* mime.c's: bytes of subject text kept */
#define WORD_START  "=?UTF-8?B?"

static CURL *curl; /* for mime_attach; made once */

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void) argc;
    (void) argv;
    curl = curl_easy_init();
    return curl != NULL ? 0 : -1;
}

static size_t
count_of(const char *s, const char *bytes)
{
    size_t n = 0;
    for (; *s != '\0'; s++) {
        n += strchr(bytes, *s) != NULL;
    }
    return n;
}

static size_t
controls_of(const char *s)
{
    size_t n = 0;
    for (; *s != '\0'; s++) {
        n += (unsigned char) *s < 0x20 || *s == 0x7f;
    }
    return n;
}

/* ---- templates ---- */

/* The values, in the order asked for (NULL past the last one, or all NULL
 * when none), and what they add to the output in each mode. */
struct values {
    const struct fuzz_pieces *f;
    int none;
    size_t asked, added[3], escaped;
};

static const char *
lookup(void *ctx, const char *path)
{
    struct values *v = ctx;
    FUZZ_ASSERT(path[0] != '\0' && strlen(path) <= 128);
    size_t k = 1 + v->asked++;
    const char *s = !v->none && k < v->f->n ? v->f->p[k] : NULL;
    if (s != NULL) {
        size_t len = strlen(s), special = count_of(s, "&<>\"'");
        v->added[FILL_RAW] += len;
        v->added[FILL_HTML] += len + 4 * count_of(s, "&") + 3 * count_of(s, "<>") +
                               5 * count_of(s, "\"") + 4 * count_of(s, "'");
        v->added[FILL_HEADER] += len - controls_of(s);
        v->escaped += special;
    }
    return s;
}

static void
fill(const struct fuzz_pieces *f)
{
    const char *tmpl = f->p[0];
    /* the check init makes of the subject and template_load of the files
     * agrees with fuzz.h's, and names the first bad byte */
    long bad = template_utf8_error(tmpl, f->len[0]);
    FUZZ_ASSERT((bad < 0) == fuzz_utf8_valid(tmpl, f->len[0]));
    FUZZ_ASSERT(bad < 0 || (fuzz_utf8_valid(tmpl, (size_t) bad) &&
                            !fuzz_utf8_valid(tmpl + bad, f->len[0] - (size_t) bad)));
    struct values none = {.f = f, .none = 1};
    struct text bare = {0};
    template_fill(tmpl, FILL_RAW, lookup, &none, &bare);
    FUZZ_ASSERT(!bare.failed);
    for (int mode = FILL_RAW; mode <= FILL_HEADER; mode++) {
        struct values v = {.f = f};
        struct text out = {0};
        template_fill(tmpl, (enum fill_mode) mode, lookup, &v, &out);
        FUZZ_ASSERT(!out.failed && v.asked == none.asked);
        const char *s = out.s != NULL ? out.s : "";
        FUZZ_ASSERT(strlen(s) == out.len && out.len == bare.len + v.added[mode]);
        if (mode == FILL_HTML) {
            FUZZ_ASSERT(count_of(s, "<") == count_of(tmpl, "<"));
            FUZZ_ASSERT(count_of(s, ">") == count_of(tmpl, ">"));
            FUZZ_ASSERT(count_of(s, "\"") == count_of(tmpl, "\""));
            FUZZ_ASSERT(count_of(s, "'") == count_of(tmpl, "'"));
            FUZZ_ASSERT(count_of(s, "&") == count_of(tmpl, "&") + v.escaped);
        } else if (mode == FILL_HEADER) {
            FUZZ_ASSERT(controls_of(s) == controls_of(tmpl));
        }
        text_free(&out);
    }
    text_free(&bare);
}

/* ---- addresses and the Message-ID ---- */

static void
check_address(const char *a)
{
    if (!mime_valid_address(a)) {
        return;
    }
    const char *at = strchr(a, '@');
    FUZZ_ASSERT(strlen(a) <= 254 && at != NULL && at > a && at[1] != '\0');
    FUZZ_ASSERT(strchr(at + 1, '@') == NULL);
    for (const char *p = a; *p != '\0'; p++) {
        unsigned char c = (unsigned char) *p;
        FUZZ_ASSERT(c > 0x20 && c != 0x7f && strchr("<>()[],;:\"\\", c) == NULL);
    }
}

static int
check_domain(const char *d)
{
    if (!mime_valid_domain(d)) {
        return 0;
    }
    size_t n = strlen(d);
    FUZZ_ASSERT(n >= 1 && n <= 253 && d[0] != '.' && d[n - 1] != '.' && !strstr(d, ".."));
    FUZZ_ASSERT(strspn(d, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") ==
                n);
    /* every label: 1-63 bytes, no '-' at either end */
    for (const char *label = d; label != NULL;) {
        const char *dot = strchr(label, '.');
        size_t len = dot != NULL ? (size_t) (dot - label) : strlen(label);
        FUZZ_ASSERT(len >= 1 && len <= 63 && label[0] != '-' && label[len - 1] != '-');
        label = dot != NULL ? dot + 1 : NULL;
    }
    return 1;
}

/* What mime_message_id must write: "<welcome-email.ID.HASH@DOMAIN>". */
static void
expected_id(const char *key, const char *id_part, const char *domain, char *out, size_t cap)
{
    char id[65], hex[17];
    size_t n = 0;
    for (const char *p = id_part != NULL ? id_part : ""; *p != '\0' && n < 64; p++) {
        if (strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-", *p)) {
            id[n++] = *p;
        }
    }
    id[n] = '\0';
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    FUZZ_ASSERT(EVP_Digest(key, strlen(key), md, &len, EVP_sha256(), NULL) == 1 && len == 32);
    for (int i = 0; i < 8; i++) {
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    }
    snprintf(out, cap, "<welcome-email.%s.%s@%s>", n > 0 ? id : "x", hex, domain);
}

static void
message_id(const struct fuzz_pieces *f, size_t cap)
{
    check_address(f->p[0]);
    const char *domain = check_domain(f->p[1]) ? f->p[1] : "example.com";
    const char *id_part = f->n > 3 ? f->p[3] : NULL;
    char whole[400], want[400];
    FUZZ_ASSERT(mime_message_id(f->p[2], id_part, domain, whole, sizeof(whole)) == 0);
    expected_id(f->p[2], id_part, domain, want, sizeof(want));
    FUZZ_ASSERT(strlen(want) < sizeof(want) - 1 && strcmp(whole, want) == 0);
    char *out = malloc(cap); /* exactly cap bytes: ASan sees a write past them */
    if (out == NULL) {
        return;
    }
    FUZZ_ASSERT(mime_message_id(f->p[2], id_part, domain, out, cap) == 0);
    FUZZ_ASSERT(memchr(out, '\0', cap) != NULL && strncmp(out, whole, strlen(out)) == 0);
    free(out);
}

/* ---- the message's header lines ---- */

/* Decode one encoded word's base64 (n bytes) onto *t; its length. */
static size_t
decode_word(const char *b64, size_t n, struct text *t)
{
    unsigned char raw[64];
    FUZZ_ASSERT(n % 4 == 0 && n / 4 * 3 <= sizeof(raw));
    FUZZ_ASSERT(strspn(b64, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") >=
                n);
    int len = EVP_DecodeBlock(raw, (const unsigned char *) b64, (int) n);
    FUZZ_ASSERT(len >= 0);
    size_t pad = n >= 1 && b64[n - 1] == '=' ? (n >= 2 && b64[n - 2] == '=' ? 2 : 1) : 0;
    text_append(t, (const char *) raw, (size_t) len - pad);
    return (size_t) len - pad;
}

/* The subject's value: encoded words of whole characters (when the input
 * is UTF-8) folded onto lines of their own, decoded onto *t. */
static void
decode_subject(const char *s, int utf8, struct text *t)
{
    while (*s != '\0') {
        FUZZ_ASSERT(strncmp(s, WORD_START, strlen(WORD_START)) == 0);
        const char *b64 = s + strlen(WORD_START), *end = strstr(b64, "?=");
        FUZZ_ASSERT(end != NULL && (size_t) (end + 2 - s) <= 75);
        size_t had = t->len, n = decode_word(b64, (size_t) (end - b64), t);
        FUZZ_ASSERT(!utf8 || fuzz_utf8_valid(t->s + had, n));
        s = end + 2;
        if (*s != '\0') {
            FUZZ_ASSERT(strncmp(s, "\r\n ", 3) == 0);
            s += 3;
        }
    }
}

static void
check_subject(const char *line, const char *subject)
{
    FUZZ_ASSERT(strncmp(line, "Subject: ", 9) == 0);
    struct text kept = {0}, got = {0};
    int ascii = 1;
    for (const char *p = subject; *p != '\0' && kept.len < SUBJECT_MAX; p++) {
        unsigned char c = (unsigned char) *p;
        if (c >= 0x20 && c != 0x7f) {
            text_append(&kept, p, 1);
            ascii &= c < 0x80;
        }
    }
    const char *k = kept.s != NULL ? kept.s : "";
    int utf8 = fuzz_utf8_valid(k, kept.len);
    if (ascii) {
        FUZZ_ASSERT(strcmp(line + 9, k) == 0);
    } else {
        decode_subject(line + 9, utf8, &got);
        const char *g = got.s != NULL ? got.s : "";
        /* all of it but a last character cut short (at most 3 bytes) */
        FUZZ_ASSERT(got.len <= kept.len && got.len + 3 >= kept.len);
        FUZZ_ASSERT(memcmp(g, k, got.len) == 0 && (!utf8 || fuzz_utf8_valid(g, got.len)));
    }
    FUZZ_ASSERT(!kept.failed && !got.failed);
    text_free(&kept);
    text_free(&got);
}

static void
check_headers(const struct curl_slist *h, const struct mime_mail *m)
{
    char from[300], to[300], id[420];
    snprintf(from, sizeof(from), "From: %s", m->from);
    snprintf(to, sizeof(to), "To: %s", m->to);
    snprintf(id, sizeof(id), "Message-ID: ");
    expected_id(m->key, m->id_part, m->domain, id + strlen(id), sizeof(id) - strlen(id));
    const char *want[] = {from,
                          to,
                          "Subject: ",
                          "Date: ",
                          id,
                          "MIME-Version: 1.0",
                          "Content-Type: multipart/alternative"};
    size_t n = 0;
    for (; h != NULL; h = h->next, n++) {
        FUZZ_ASSERT(n < sizeof(want) / sizeof(want[0]));
        if (n == 2) {
            check_subject(h->data, m->subject);
            continue;
        }
        FUZZ_ASSERT(!fuzz_has_control(h->data, strlen(h->data), ""));
        if (n == 3) {
            FUZZ_ASSERT(strncmp(h->data, want[n], strlen(want[n])) == 0);
        } else {
            FUZZ_ASSERT(strcmp(h->data, want[n]) == 0);
        }
    }
    FUZZ_ASSERT(n == sizeof(want) / sizeof(want[0]));
}

static void
message(const struct fuzz_pieces *f)
{
    struct mime_mail m = {.subject = f->p[0], .text = f->p[1], .html = f->p[2]};
    m.from = mime_valid_address(f->p[3]) ? f->p[3] : "welcome@example.com";
    m.to = mime_valid_address(f->p[4]) ? f->p[4] : "candidate@example.org";
    m.key = f->p[5];
    m.id_part = f->n > 6 ? f->p[6] : NULL;
    m.domain = mime_valid_domain(f->p[7]) ? f->p[7] : "example.com";
    struct curl_slist *headers = NULL;
    curl_mime *mime = NULL;
    FUZZ_ASSERT(mime_attach(curl, &m, &headers, &mime) == 0);
    FUZZ_ASSERT(mime != NULL);
    check_headers(headers, &m);
    curl_slist_free_all(headers);
    curl_mime_free(mime);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_pieces f;
    if (size == 0 || fuzz_split(data + 1, size - 1, '\0', FUZZ_MAX_PIECES, &f) != 0) {
        return 0;
    }
    switch (data[0] % 3) {
    case 0:
        fill(&f);
        break;
    case 1:
        message_id(&f, (size_t) data[0] / 3 % 64 + 1);
        break;
    default:
        message(&f);
        break;
    }
    fuzz_pieces_free(&f);
    return 0;
}
