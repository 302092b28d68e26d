/*
 * welcome.h - what the welcome-email plugin's files share: the default
 * template paths, a growable text, the {{placeholder}} templates and the
 * MIME message. Internal to the plugin (hidden visibility); not an SDK
 * header.
 */
#ifndef WELCOME_H
#define WELCOME_H

#include <curl/curl.h>
#include <stddef.h>

/* The default template files (template_dir.c): the source tree's in the
 * build tree, the installed ones in the installed plugin. */
extern const char welcome_default_text[];
extern const char welcome_default_html[];

/* A growable NUL-terminated text. After an allocation failure `failed`
 * is set and further appends do nothing; check it once at the end. */
struct text {
    char *s;
    size_t len, cap;
    int failed;
};

void text_append(struct text *t, const char *s, size_t n);
void text_puts(struct text *t, const char *s);
void text_free(struct text *t);

/* How a placeholder's value is written into its surroundings. */
enum fill_mode {
    FILL_RAW,   /* the text part: as is */
    FILL_HTML,  /* the HTML part: & < > " ' escaped */
    FILL_HEADER /* a header: CR, LF and other control characters dropped */
};

/* Looks a placeholder's body path up; NULL when missing (filled as ""). */
typedef const char *(*template_lookup)(void *ctx, const char *path);

/* Where s (n bytes) stops being well-formed UTF-8 (no overlong forms,
 * surrogates or code points past U+10FFFF): the byte's offset, or -1 when it
 * is all UTF-8. Templates must be: the mail declares charset UTF-8. */
long template_utf8_error(const char *s, size_t n);

/* Read a template file (at most 1 MiB, UTF-8 text) into *out (malloc'd,
 * owned by the caller). 0, or -1 with err naming the path and the reason. */
int template_load(const char *path, char **out, char *err, size_t errlen);

/*
 * Append tmpl to out with every {{path}} (spaces inside allowed) replaced
 * by lookup(ctx, path) written per mode. A "{{" that does not open a valid
 * placeholder ([A-Za-z0-9_.-] name, closed by "}}") is copied as is.
 */
void template_fill(const char *tmpl, enum fill_mode mode, template_lookup lookup, void *ctx,
                   struct text *out);

/* A minimal address check: one '@' with text on both sides, at most 254
 * bytes, no spaces, control characters or any of <>()[],;:"\ . */
int mime_valid_address(const char *addr);

/* A domain for the Message-ID, a host name as RFC 1123 allows: 1-253
 * bytes of dot-separated labels of 1-63 letters, digits and '-', none
 * starting or ending with '-' and none empty (no dot at either end). */
int mime_valid_domain(const char *domain);

/* The parts of one welcome message. Strings are borrowed. */
struct mime_mail {
    const char *from, *to, *subject; /* subject: already filled, one line */
    const char *text, *html;         /* the two bodies, already filled */
    const char *key;                 /* the idempotency key */
    const char *id_part;             /* e.g. the candidateId, for the Message-ID */
    const char *domain;              /* the Message-ID's domain (message_id_domain) */
};

/*
 * The deterministic Message-ID for a key: "<welcome-email.<id>.<16 hex of
 * SHA-256(key)>@<domain>>", the id reduced to [A-Za-z0-9_-] (at most 64).
 * 0, or -1 when SHA-256 failed.
 */
int mime_message_id(const char *key, const char *id_part, const char *domain, char *out,
                    size_t cap);

/*
 * The whole message for the easy handle c: its header lines into *headers
 * (for CURLOPT_HTTPHEADER: From, To, Subject, Date, Message-ID,
 * MIME-Version, Content-Type multipart/alternative) and its body into
 * *mime (for CURLOPT_MIMEPOST: a text/plain and a text/html part, UTF-8,
 * base64). Both are the caller's (curl_slist_free_all, curl_mime_free).
 * 0, or -1 on ENOMEM with nothing left allocated.
 */
int mime_attach(CURL *c, const struct mime_mail *m, struct curl_slist **headers, curl_mime **mime);

#endif
