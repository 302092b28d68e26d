/*
 * welcome_email.c - the welcome-email plugin: one welcome mail per
 * candidate, sent over SMTP with libcurl, keyed "welcome-email:{candidateId}".
 * Settings, init/fini and the SMTP exchange live here; the message itself is
 * built in mime.c (with libcurl's MIME API) from the templates of
 * template.c. Not a mailing list tool.
 */
#include "welcome.h"

#include "settings_common.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <twice/plugin.h>

/* The plugin's state: read-only after init, so handle() may run on many
 * threads at once. Every string is owned. */
struct welcome {
    const twice_api *api;
    char *smtp_url, *username, *password, *from, *mail_from, *subject;
    char *domain; /* of the Message-ID: message_id_domain, else the From domain */
    char *text_tmpl, *html_tmpl;
    long timeout;
    int starttls_required;
};

static void
welcome_free(struct welcome *w)
{
    if (w == NULL) {
        return;
    }
    free(w->smtp_url);
    free(w->username);
    if (w->password != NULL) {
        explicit_bzero(w->password, strlen(w->password));
        free(w->password);
    }
    free(w->from);
    free(w->mail_from);
    free(w->subject);
    free(w->domain);
    free(w->text_tmpl);
    free(w->html_tmpl);
    free(w);
}

/* A copy of an optional setting (NULL when not set or empty). */
static int
copy_setting(const twice_api *api, const twice_settings *s, const char *name, char **out)
{
    const char *v = api->setting(s, name);
    *out = NULL;
    if (v == NULL || *v == '\0') {
        return 0;
    }
    *out = strdup(v);
    return *out != NULL ? 0 : -1;
}

/* Checks of what the settings say: 0, or -1 with the setting to blame. */
static int
check_settings(struct welcome *w, struct setting_refusal *r)
{
    /* Credentials over plain smtp:// only after STARTTLS: curl then refuses
     * a server that does not offer it instead of sending them in clear. */
    w->starttls_required = w->username != NULL && w->smtp_url != NULL &&
                           plugin_ascii_strncasecmp(w->smtp_url, "smtp://", 7) == 0;
    if (w->smtp_url == NULL || (plugin_ascii_strncasecmp(w->smtp_url, "smtp://", 7) != 0 &&
                                plugin_ascii_strncasecmp(w->smtp_url, "smtps://", 8) != 0)) {
        return setting_refuse(r, "smtp_url", "must start with smtp:// or smtps://");
    }
    if (w->from == NULL || !mime_valid_address(w->from)) {
        return setting_refuse(r, "from", "must be a plain address like welcome@example.com");
    }
    if (w->timeout < 1 || w->timeout > 600) {
        return setting_refuse(r, "timeout", "must be 1-600 seconds");
    }
    if (w->subject == NULL) {
        return setting_refuse(r, "subject", "must not be empty");
    }
    if (template_utf8_error(w->subject, strlen(w->subject)) >= 0) {
        return setting_refuse(r, "subject",
                              "must be UTF-8 text (the mail declares charset UTF-8)");
    }
    if (w->domain == NULL && (w->domain = strdup(strchr(w->from, '@') + 1)) == NULL) {
        return setting_refuse(r, NULL, "out of memory");
    }
    if (!mime_valid_domain(w->domain)) {
        return setting_refuse(r, "message_id_domain",
                              "must be a domain name like example.com (by default the domain "
                              "of from)");
    }
    return 0;
}

static int
load_templates(struct welcome *w, const twice_settings *s, struct setting_refusal *r)
{
    static const char *const names[] = {"template_text", "template_html"};
    char **out[] = {&w->text_tmpl, &w->html_tmpl};
    char err[512];
    for (size_t i = 0; i < 2; i++) {
        if (template_load(w->api->setting(s, names[i]), out[i], err, sizeof(err)) != 0) {
            return setting_refuse(r, names[i], "%s", err);
        }
    }
    return 0;
}

static int
welcome_init(const twice_api *api, const twice_settings *s, void **state)
{
    struct welcome *w = calloc(1, sizeof(*w));
    struct setting_refusal r;
    setting_refuse(&r, NULL, "out of memory");
    if (w == NULL) {
        setting_refusal_report(api, s, &r);
        return -1;
    }
    w->api = api;
    const char *timeout = api->setting(s, "timeout");
    w->timeout = timeout != NULL ? strtol(timeout, NULL, 10) : 30;
    if (copy_setting(api, s, "smtp_url", &w->smtp_url) != 0 ||
        copy_setting(api, s, "username", &w->username) != 0 ||
        copy_setting(api, s, "password", &w->password) != 0 ||
        copy_setting(api, s, "from", &w->from) != 0 ||
        copy_setting(api, s, "subject", &w->subject) != 0 ||
        copy_setting(api, s, "message_id_domain", &w->domain) != 0 ||
        (w->from != NULL && asprintf(&w->mail_from, "<%s>", w->from) < 0)) {
        w->mail_from = NULL;
        goto fail;
    }
    if (check_settings(w, &r) != 0 || load_templates(w, s, &r) != 0) {
        goto fail;
    }
    /* Reference counted: safe even when the host called it already. */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        setting_refuse(&r, NULL, "curl_global_init failed");
        goto fail;
    }
    *state = w;
    return 0;
fail:
    setting_refusal_report(api, s, &r);
    welcome_free(w);
    return -1;
}

static void
welcome_fini(void *state)
{
    welcome_free(state);
    curl_global_cleanup();
}

/* ---- the SMTP exchange ---- */

/* The server's first error reply line ("550 5.1.1 ..."), printable ASCII
 * only: curl hands SMTP response lines to the header callback, and after a
 * failure it still says QUIT, whose "221 Bye" must not hide the reason. With
 * it, the command that reply answered: the verb of the last command curl
 * sent ("" before any: the greeting), from its debug callback. */
struct reply {
    char line[256];
    char sent[12]; /* the last command's verb ("EHLO", "MAIL", ...) */
    char step[12]; /* sent when line was kept */
};

static size_t
keep_reply(char *buf, size_t size, size_t nitems, void *arg)
{
    struct reply *r = arg;
    size_t n = size * nitems, k = 0;
    if (r->line[0] == '\0' && n >= 4 && (buf[0] == '4' || buf[0] == '5')) {
        for (size_t i = 0; i < n && k < sizeof(r->line) - 1; i++) {
            unsigned char c = (unsigned char) buf[i];
            if (c == '\r' || c == '\n') {
                break;
            }
            r->line[k++] = c >= 0x20 && c < 0x7f ? (char) c : '?';
        }
        r->line[k] = '\0';
        memcpy(r->step, r->sent, sizeof(r->step));
    }
    return n;
}

/* curl's debug callback (CURLOPT_VERBOSE is on for it; nothing is printed):
 * the SMTP commands curl sends, so that a refusal is placed by the command
 * it answers, in the protocol's words, not by curl's error text. Only the
 * verb is kept: an AUTH line carries credentials. */
static int
note_command(CURL *c, curl_infotype type, char *data, size_t size, void *arg)
{
    (void) c;
    struct reply *r = arg;
    if (type != CURLINFO_HEADER_OUT) {
        return 0;
    }
    size_t k = 0;
    for (; k < size && k < sizeof(r->sent) - 1; k++) {
        char ch = data[k];
        if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z'))) {
            break;
        }
        r->sent[k] = (char) (ch >= 'a' ? ch - ('a' - 'A') : ch);
    }
    r->sent[k] = '\0';
    return 0;
}

/* The relay cannot be reached at all: the queue's circuit breaker counts it. */
static int
unreachable(CURLcode rc)
{
    switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
        return 1;
    default:
        return 0;
    }
}

/*
 * A 5xx reply before any recipient was named: to the greeting, EHLO (and
 * curl's HELO after it), STARTTLS or MAIL FROM (whose address is the `from`
 * setting, the same for every message), so the relay refuses the session,
 * not this message: "554 no service", "530 Authentication required", "550
 * sender rejected". Except 552 to MAIL FROM (the message's SIZE is too
 * big). Which command the reply answered is the last one curl sent (r->step,
 * from its debug callback), not its error text, whose wording may change.
 */
static int
session_refused(long code, const struct reply *r)
{
    if (code < 500 || code > 599 || r->line[0] == '\0') {
        return 0;
    }
    const char *s = r->step;
    if (*s == '\0' || strcmp(s, "EHLO") == 0 || strcmp(s, "HELO") == 0 ||
        strcmp(s, "STARTTLS") == 0) {
        return 1;
    }
    return strcmp(s, "MAIL") == 0 && code != 552;
}

/*
 * What a failed exchange means. A 4xx reply is the server's "try later"; a
 * 5xx reply to our recipient or message is final (the server's words become
 * the DLQ reason), except a refused login or session, which is our
 * configuration or the relay's, not the message. No reply at all
 * (connection, TLS, timeout) is transient. A relay that cannot be reached,
 * says 421 (service not available) or refuses the session is down for every
 * message, not only this one: the host hears of it (downstream_unavailable),
 * so a breaker can pause the queue.
 */
static twice_status
classify(const struct welcome *w, twice_job *job, CURLcode rc, long code, const struct reply *r,
         const char *errbuf)
{
    const char *reply = r->line;
    const char *detail = *reply != '\0'    ? reply
                         : *errbuf != '\0' ? errbuf
                                           : curl_easy_strerror(rc);
    int refused = session_refused(code, r);
    if ((code == 421 || refused || (code == 0 && unreachable(rc))) &&
        TWICE_API_HAS(w->api, downstream_unavailable)) {
        w->api->downstream_unavailable(job, 0);
    }
    if (rc == CURLE_LOGIN_DENIED) {
        w->api->error(job, "SMTP login refused: %s (check username/password)", detail);
        return TWICE_RETRY;
    }
    if (refused) {
        w->api->error(job,
                      "SMTP relay refused the session before any recipient: %s (%s; check "
                      "smtp_url, username/password and from)",
                      *reply != '\0' ? reply : detail, errbuf);
        return TWICE_RETRY;
    }
    if (code >= 500 && code < 600) {
        w->api->error(job, "%s", *reply != '\0' ? reply : detail);
        return TWICE_REJECT;
    }
    if (code >= 400 && code < 500) {
        w->api->error(job, "SMTP temporary failure: %s", detail);
        return TWICE_RETRY;
    }
    w->api->error(job, "SMTP: %s", *errbuf != '\0' ? errbuf : curl_easy_strerror(rc));
    return TWICE_RETRY;
}

static void
set_options(const struct welcome *w, CURL *c, struct curl_slist *rcpt)
{
    curl_easy_setopt(c, CURLOPT_URL, w->smtp_url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "smtp,smtps");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, w->timeout);
    curl_easy_setopt(c, CURLOPT_USE_SSL, w->starttls_required ? CURLUSESSL_ALL : CURLUSESSL_TRY);
    /* Certificate and host name checks are curl's defaults and never
     * switched off here. */
    if (w->username != NULL) {
        curl_easy_setopt(c, CURLOPT_USERNAME, w->username);
        curl_easy_setopt(c, CURLOPT_PASSWORD, w->password != NULL ? w->password : "");
    }
    curl_easy_setopt(c, CURLOPT_MAIL_FROM, w->mail_from);
    curl_easy_setopt(c, CURLOPT_MAIL_RCPT, rcpt);
}

/* Send message m to its one recipient. One easy handle per call: handle()
 * runs on many threads. */
static twice_status
send_mail(const struct welcome *w, twice_job *job, const struct mime_mail *m)
{
    char errbuf[CURL_ERROR_SIZE] = "", rcpt_addr[300];
    struct reply reply = {.line = ""};
    struct curl_slist *headers = NULL;
    curl_mime *mime = NULL;
    twice_status st = TWICE_RETRY;
    snprintf(rcpt_addr, sizeof(rcpt_addr), "<%s>", m->to);
    struct curl_slist *rcpt = curl_slist_append(NULL, rcpt_addr);
    CURL *c = curl_easy_init();
    if (c == NULL || rcpt == NULL || mime_attach(c, m, &headers, &mime) != 0) {
        w->api->error(job, "out of memory preparing the SMTP request");
        goto out;
    }
    set_options(w, c, rcpt);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_MIMEPOST, mime);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, keep_reply);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &reply);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_DEBUGFUNCTION, note_command);
    curl_easy_setopt(c, CURLOPT_DEBUGDATA, &reply);
    curl_easy_setopt(c, CURLOPT_VERBOSE, 1L);
    CURLcode rc = curl_easy_perform(c);
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    st = rc == CURLE_OK ? TWICE_DONE : classify(w, job, rc, code, &reply, errbuf);
out:
    curl_easy_cleanup(c);
    curl_mime_free(mime);
    curl_slist_free_all(headers);
    curl_slist_free_all(rcpt);
    return st;
}

/* ---- handle ---- */

struct lookup_ctx {
    const twice_api *api;
    const twice_job *job;
};

static const char *
lookup_field(void *arg, const char *path)
{
    struct lookup_ctx *ctx = arg;
    return ctx->api->field(ctx->job, path, NULL);
}

static twice_status
welcome_handle(void *state, twice_job *job)
{
    const struct welcome *w = state;
    struct lookup_ctx ctx = {w->api, job};
    struct text subject = {0}, text = {0}, html = {0};
    twice_status st = TWICE_REJECT;
    const char *to = w->api->field(job, "email", NULL);
    if (to == NULL || *to == '\0') {
        w->api->error(job, "message has no email");
        return TWICE_REJECT;
    }
    if (!mime_valid_address(to)) {
        w->api->error(job, "message has an invalid email address");
        return TWICE_REJECT;
    }
    template_fill(w->subject, FILL_HEADER, lookup_field, &ctx, &subject);
    template_fill(w->text_tmpl, FILL_RAW, lookup_field, &ctx, &text);
    template_fill(w->html_tmpl, FILL_HTML, lookup_field, &ctx, &html);
    struct mime_mail m = {w->from,
                          to,
                          subject.s != NULL ? subject.s : "",
                          text.s != NULL ? text.s : "",
                          html.s != NULL ? html.s : "",
                          w->api->key(job),
                          w->api->field(job, "candidateId", NULL),
                          w->domain};
    if (subject.failed || text.failed || html.failed) {
        w->api->error(job, "out of memory building the message");
        st = TWICE_RETRY;
    } else if ((st = send_mail(w, job, &m)) == TWICE_DONE) {
        char msgid[400];
        mime_message_id(m.key, m.id_part, m.domain, msgid, sizeof(msgid));
        w->api->log(job, TWICE_LOG_INFO, "welcome email sent, Message-ID %s", msgid);
    }
    text_free(&subject);
    text_free(&text);
    text_free(&html);
    return st;
}

static const twice_setting welcome_settings[] = {
    {"smtp_url", TWICE_SETTING_STRING, 1, NULL,
     "SMTP server, smtp://host:587 (STARTTLS when offered) or smtps://host:465"},
    {"username", TWICE_SETTING_STRING, 0, NULL, "SMTP login (STARTTLS is then required)"},
    {"password", TWICE_SETTING_STRING, 0, NULL, "SMTP password (a secret, never logged)"},
    {"from", TWICE_SETTING_STRING, 1, NULL, "sender address, e.g. welcome@example.com"},
    {"subject", TWICE_SETTING_STRING, 0, "Welcome, {{name}}!", "subject template"},
    {"message_id_domain", TWICE_SETTING_STRING, 0, NULL,
     "domain of the Message-ID (default: the domain of from)"},
    {"template_text", TWICE_SETTING_STRING, 0, welcome_default_text, "text body template file"},
    {"template_html", TWICE_SETTING_STRING, 0, welcome_default_html,
     "HTML body template file (placeholders HTML-escaped)"},
    {"timeout", TWICE_SETTING_INT, 0, "30", "seconds for the whole SMTP exchange (1-600)"},
    {NULL, TWICE_SETTING_STRING, 0, NULL, NULL},
};

TWICE_PLUGIN(.name = "welcome-email", .version = "1.0.0",
             .key_template = "welcome-email:{candidateId}", .settings = welcome_settings,
             .init = welcome_init, .handle = welcome_handle, .fini = welcome_fini)
