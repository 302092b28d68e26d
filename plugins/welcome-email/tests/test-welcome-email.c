/*
 * test-welcome-email.c - the welcome-email plugin through the SDK mock
 * host. `unit`: settings, keys, the refusals (a subject or template that
 * is not UTF-8 among them). `integration`: real mail to a private
 * scripts/smtp-sink.py (aiosmtpd): recipient, subject, filled and escaped
 * templates, a Message-ID stable per key, 451 -> RETRY, 550 -> REJECT with
 * the server's reply.
 */
#include "check.h"
#include "test_server.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <twice/mock.h>

static char maildir[256];
static char smtp_url[64];

static twice_mock *
new_mock(const char *url, const char *tmpl_dir)
{
    char err[512], path[512];
    twice_mock *m = twice_mock_open(PLUGIN_PATH, err, sizeof(err));
    if (m == NULL) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    if (url != NULL) {
        twice_mock_set(m, "smtp_url", url);
    }
    twice_mock_set(m, "from", "welcome@example.com");
    snprintf(path, sizeof(path), "%s/welcome.txt", tmpl_dir);
    twice_mock_set(m, "template_text", path);
    snprintf(path, sizeof(path), "%s/welcome.html", tmpl_dir);
    twice_mock_set(m, "template_html", path);
    return m;
}

/* The declared default of setting `name` of the plugin at path (a copy). */
static const char *
default_of(const char *path, const char *name)
{
    static char out[2][512];
    static int turn;
    char err[512];
    twice_mock *m = twice_mock_open(path, err, sizeof(err));
    const twice_setting *s = m != NULL ? twice_mock_plugin(m)->settings : NULL;
    for (; s != NULL && s->name != NULL && strcmp(s->name, name) != 0; s++) {
    }
    turn ^= 1;
    snprintf(out[turn], sizeof(out[turn]), "%s",
             s != NULL && s->default_value != NULL ? s->default_value : "(none)");
    twice_mock_free(m);
    return out[turn];
}

static void
test_settings(void)
{
    twice_mock *m = new_mock(NULL, TEMPLATE_DIR);
    CHECK(twice_mock_init(m) != 0);
    CHECK_CONTAINS(twice_mock_error(m), "missing required setting 'smtp_url'");
    twice_mock_free(m);

    m = new_mock("http://127.0.0.1:25", TEMPLATE_DIR);
    CHECK(twice_mock_init(m) != 0);
    CHECK_STR(twice_mock_error(m),
              "plugin 'welcome-email': setting 'smtp_url': must start with smtp:// or smtps://");
    twice_mock_free(m);

    m = new_mock("smtp://127.0.0.1:25", "/nonexistent/templates");
    CHECK(twice_mock_init(m) != 0);
    CHECK_CONTAINS(
        twice_mock_error(m),
        "setting 'template_text': template /nonexistent/templates/welcome.txt: No such file");
    twice_mock_free(m);

    m = new_mock("smtp://127.0.0.1:25", TEMPLATE_DIR);
    twice_mock_set(m, "from", "Welcome <welcome@example.com>");
    CHECK(twice_mock_init(m) != 0);
    CHECK_CONTAINS(twice_mock_error(m), "setting 'from': must be a plain address");
    twice_mock_free(m);

    m = new_mock("smtp://127.0.0.1:25", TEMPLATE_DIR);
    twice_mock_set(m, "timeout", "601");
    CHECK(twice_mock_init(m) != 0);
    CHECK_STR(twice_mock_error(m),
              "plugin 'welcome-email': setting 'timeout': must be 1-600 seconds");
    twice_mock_free(m);

#define LABEL63 "abcdefghij-abcdefghij-abcdefghij-abcdefghij-abcdefghij-abcdefgh"
    const char *bad_domains[] = {"",
                                 "a..b",
                                 ".example.com",
                                 "example.com.",
                                 "exa mple.com",
                                 "ex_ample.com",
                                 "mail-.example.com",
                                 "-mail.example.com",
                                 "example.com-",
                                 "x." LABEL63 "i.com"};
    for (size_t i = 0; i < sizeof(bad_domains) / sizeof(bad_domains[0]); i++) {
        m = new_mock("smtp://127.0.0.1:25", TEMPLATE_DIR);
        twice_mock_set(m, "message_id_domain", bad_domains[i]);
        if (bad_domains[i][0] == '\0') {
            twice_mock_set(m, "from", "welcome@bad!domain");
        }
        CHECK(twice_mock_init(m) != 0);
        CHECK_CONTAINS(twice_mock_error(m), "setting 'message_id_domain': must be a domain name");
        twice_mock_free(m);
    }
    const char *good_domains[] = {"localhost", "mail-1.x--y.example.com", "x." LABEL63 ".com"};
    for (size_t i = 0; i < sizeof(good_domains) / sizeof(good_domains[0]); i++) {
        m = new_mock("smtp://127.0.0.1:25", TEMPLATE_DIR);
        twice_mock_set(m, "message_id_domain", good_domains[i]);
        CHECK_INT(twice_mock_init(m), 0);
        twice_mock_free(m);
    }
#undef LABEL63

    /* In the build tree the defaults are the source tree's templates, which
     * exist: no template setting is needed (they named an installed path,
     * and init failed in every checkout). The installed plugin's name the
     * installed templates. */
    CHECK_STR(default_of(PLUGIN_PATH, "template_text"), TEMPLATE_DIR "/welcome.txt");
    CHECK_STR(default_of(PLUGIN_PATH, "template_html"), TEMPLATE_DIR "/welcome.html");
    CHECK_STR(default_of(INSTALLED_PLUGIN_PATH, "template_text"),
              INSTALLED_TEMPLATE_DIR "/welcome.txt");
    CHECK_STR(default_of(INSTALLED_PLUGIN_PATH, "template_html"),
              INSTALLED_TEMPLATE_DIR "/welcome.html");
    char err[512];
    m = twice_mock_open(PLUGIN_PATH, err, sizeof(err));
    twice_mock_set(m, "smtp_url", "smtp://127.0.0.1:25");
    twice_mock_set(m, "from", "welcome@example.com");
    CHECK_INT(twice_mock_init(m), 0);
    twice_mock_free(m);
}

static twice_status
run(twice_mock *m, const char *body, twice_mock_job **out)
{
    *out = twice_mock_job_new(m, body);
    return twice_mock_run(*out);
}

static void
test_refusals(void)
{
    /* port 9 on loopback: nothing is sent before these refusals */
    twice_mock *m = new_mock("smtp://127.0.0.1:9", TEMPLATE_DIR);
    CHECK_INT(twice_mock_init(m), 0);
    twice_mock_job *j;
    CHECK_INT(run(m, "{\"candidateId\":42,\"name\":\"Ana\"}", &j), TWICE_REJECT);
    CHECK_STR(twice_mock_job_key(j), "welcome-email:42");
    CHECK_STR(twice_mock_job_error(j), "message has no email");
    twice_mock_job_free(j);
    const char *bad[] = {"ana", "ana@", "@x", "a b@x.org", "a@b@c", "a<b>@x", "a@x\\r\\nBcc: y"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char body[128];
        snprintf(body, sizeof(body), "{\"candidateId\":1,\"email\":\"%s\"}", bad[i]);
        CHECK_INT(run(m, body, &j), TWICE_REJECT);
        CHECK_STR(twice_mock_job_error(j), "message has an invalid email address");
        twice_mock_job_free(j);
    }
    CHECK_INT(run(m, "{\"email\":\"ana@example.com\"}", &j), TWICE_REJECT);
    CHECK(!twice_mock_job_handled(j));
    CHECK_STR(twice_mock_job_error(j), "missing key field candidateId");
    twice_mock_job_free(j);
    twice_mock_free(m);
}

/* The mail says charset UTF-8: a subject setting or a template file that is
 * not UTF-8 text is refused at init, naming it, not sent as mojibake. */
static void
test_not_utf8_refused(void)
{
    char dir[] = "/tmp/welcome-test.XXXXXX", path[64];
    CHECK(mkdtemp(dir) != NULL);
    static const char *const files[][2] = {{"welcome.txt", "Hi {{name}}\n"},
                                           {"welcome.html", "<p>Caf\xe9 {{name}}</p>\n"}};
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, files[i][0]);
        FILE *f = fopen(path, "w");
        CHECK(f != NULL && fputs(files[i][1], f) >= 0 && fclose(f) == 0);
    }
    twice_mock *m = new_mock("smtp://127.0.0.1:9", dir);
    CHECK_INT(twice_mock_init(m), -1);
    CHECK_CONTAINS(twice_mock_error(m), "setting 'template_html': template ");
    CHECK_CONTAINS(twice_mock_error(m), "welcome.html: not UTF-8 text (byte 6)");
    twice_mock_free(m);

    const char *subject = "a\x80\x80 {{x}}";
    m = new_mock("smtp://127.0.0.1:9", TEMPLATE_DIR);
    twice_mock_set(m, "subject", subject);
    CHECK_INT(twice_mock_init(m), -1);
    CHECK_STR(twice_mock_error(m), "plugin 'welcome-email': setting 'subject': must be UTF-8 text "
                                   "(the mail declares charset UTF-8)");
    twice_mock_free(m);
    m = new_mock("smtp://127.0.0.1:9", TEMPLATE_DIR);
    twice_mock_set(m, "subject", "Bienvenue, {{name}} \xc3\xa0 bient\xc3\xb4t \xf0\x9f\x91\x8b");
    CHECK_INT(twice_mock_init(m), 0);
    twice_mock_free(m);
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, files[i][0]);
        unlink(path);
    }
    rmdir(dir);
}

/* ---- integration: reading what the sink stored ---- */

static char *
slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strdup(buf);
}

static char *
stored(int n, const char *ext)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%d.%s", maildir, n, ext);
    return slurp(path);
}

/* The value of header `name` in a message (first occurrence), or "". */
static const char *
header(const char *eml, const char *name, char *out, size_t cap)
{
    char want[64];
    snprintf(want, sizeof(want), "\r\n%s: ", name);
    const char *p = eml != NULL ? strstr(eml, want) : NULL;
    p = p != NULL ? p + strlen(want) : NULL;
    if (eml != NULL && strncmp(eml, want + 2, strlen(want + 2)) == 0) {
        p = eml + strlen(want + 2); /* the first header */
    }
    out[0] = '\0';
    if (p != NULL) {
        size_t n = strcspn(p, "\r\n");
        snprintf(out, cap, "%.*s", (int) (n < cap ? n : cap - 1), p);
    }
    return out;
}

/* The decoded body of the part of this content type (base64). */
static char *
part(const char *eml, const char *type)
{
    char want[64], b64[1 << 15];
    size_t n = 0;
    snprintf(want, sizeof(want), "Content-Type: %s;", type);
    const char *p = eml != NULL ? strstr(eml, want) : NULL;
    p = p != NULL ? strstr(p, "\r\n\r\n") : NULL;
    if (p == NULL) {
        return strdup("(no such part)");
    }
    for (p += 4; *p != '\0' && *p != '-' && n < sizeof(b64) - 1; p++) {
        if (*p != '\r' && *p != '\n') {
            b64[n++] = *p;
        }
    }
    unsigned char *out = calloc(1, n + 1);
    int len = EVP_DecodeBlock(out, (const unsigned char *) b64, (int) n);
    while (len > 0 && n > 0 && b64[--n] == '=') {
        len--; /* EVP_DecodeBlock counts the padding */
    }
    out[len > 0 ? len : 0] = '\0';
    return (char *) out;
}

static void
expected_message_id(const char *key, const char *id, const char *domain, char *out, size_t cap)
{
    unsigned char md[32];
    unsigned int n;
    char hex[17];
    EVP_Digest(key, strlen(key), md, &n, EVP_sha256(), NULL);
    for (int i = 0; i < 8; i++) {
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    }
    snprintf(out, cap, "<welcome-email.%s.%s@%s>", id, hex, domain);
}

static void
test_send(twice_mock *m)
{
    char h[512], want[128];
    twice_mock_job *j;
    CHECK_INT(run(m,
                  "{\"type\":\"welcome-email\",\"candidateId\":42,"
                  "\"email\":\"ana@example.com\",\"name\":\"Ana <b>&\\r\\nBcc: x@y.z\"}",
                  &j),
              TWICE_DONE);
    CHECK(twice_mock_job_error(j) == NULL);
    /* the Message-ID's domain is the From address's (it was "@twice") */
    expected_message_id("welcome-email:42", "42", "example.com", want, sizeof(want));
    CHECK_CONTAINS(twice_mock_job_log_text(j, 0, NULL), want);
    twice_mock_job_free(j);

    char *meta = stored(1, "json"), *eml = stored(1, "eml");
    CHECK_CONTAINS(meta, "\"rcpt_tos\": [\n  \"ana@example.com\"\n ]");
    CHECK_CONTAINS(meta, "\"mail_from\": \"welcome@example.com\"");
    CHECK_STR(header(eml, "To", h, sizeof(h)), "ana@example.com");
    CHECK_STR(header(eml, "From", h, sizeof(h)), "welcome@example.com");
    CHECK_STR(header(eml, "Subject", h, sizeof(h)), "Welcome, Ana <b>&Bcc: x@y.z!");
    CHECK_STR(header(eml, "Message-ID", h, sizeof(h)), want);
    CHECK_STR(header(eml, "MIME-Version", h, sizeof(h)), "1.0");
    CHECK_CONTAINS(header(eml, "Date", h, sizeof(h)), " +0000");
    CHECK_CONTAINS(header(eml, "Content-Type", h, sizeof(h)), "multipart/alternative");
    CHECK(strstr(eml != NULL ? eml : "", "\r\nBcc:") == NULL);
    char *text = part(eml, "text/plain"), *html = part(eml, "text/html");
    CHECK_CONTAINS(text, "Hello Ana <b>&\r\nBcc: x@y.z,\r\n");
    CHECK_CONTAINS(text, "sent to ana@example.com.");
    CHECK_CONTAINS(html, "<p>Hello Ana &lt;b&gt;&amp;\r\nBcc: x@y.z,</p>");
    CHECK_CONTAINS(html, "<title>Welcome, Ana &lt;b&gt;&amp;");
    free(text);
    free(html);
    free(meta);
    free(eml);

    /* the same key again (another MessageId, another name): same Message-ID;
     * a missing name is an empty string */
    CHECK_INT(run(m, "{\"candidateId\":42,\"email\":\"ana@example.com\"}", &j), TWICE_DONE);
    twice_mock_job_free(j);
    eml = stored(2, "eml");
    CHECK_STR(header(eml, "Message-ID", h, sizeof(h)), want);
    CHECK_STR(header(eml, "Subject", h, sizeof(h)), "Welcome, !");
    free(eml);
}

static void
test_unicode_subject(twice_mock *m)
{
    char h[512];
    twice_mock_job *j;
    CHECK_INT(run(m,
                  "{\"candidateId\":\"c-7\",\"email\":\"zoe@example.com\","
                  "\"name\":\"Zo\\u00eb \\u00c5ngstr\\u00f6m\"}",
                  &j),
              TWICE_DONE);
    twice_mock_job_free(j);
    char *eml = stored(3, "eml");
    CHECK_CONTAINS(header(eml, "Subject", h, sizeof(h)), "=?UTF-8?B?");
    CHECK_CONTAINS(header(eml, "Message-ID", h, sizeof(h)), "<welcome-email.c-7.");
    char *html = part(eml, "text/html");
    CHECK_CONTAINS(html, "Hello Zo\xc3\xab \xc3\x85ngstr\xc3\xb6m,");
    free(html);
    free(eml);
}

static void
test_failures(twice_mock *m)
{
    twice_mock_job *j;
    CHECK_INT(run(m, "{\"candidateId\":5,\"email\":\"tempfail-5@example.com\"}", &j), TWICE_RETRY);
    CHECK_CONTAINS(twice_mock_job_error(j), "451 4.3.0 twice-test-sink: temporary failure");
    CHECK_INT(twice_mock_job_downstream_unavailable(j), -1); /* this mailbox, not the relay */
    twice_mock_job_free(j);
    /* 421: the relay is not available for anyone (the host's breaker counts it) */
    CHECK_INT(run(m, "{\"candidateId\":12,\"email\":\"unavailable-12@example.com\"}", &j),
              TWICE_RETRY);
    CHECK_CONTAINS(twice_mock_job_error(j), "421 4.3.2");
    CHECK_INT(twice_mock_job_downstream_unavailable(j), 0);
    twice_mock_job_free(j);
    CHECK_INT(run(m, "{\"candidateId\":6,\"email\":\"reject-6@example.com\"}", &j), TWICE_REJECT);
    CHECK_STR(twice_mock_job_error(j), "550 5.1.1 twice-test-sink: mailbox "
                                       "<reject-6@example.com> rejected (reject address)");
    twice_mock_job_free(j);
    CHECK_INT(run(m, "{\"candidateId\":7,\"email\":\"reject-data-7@example.com\"}", &j),
              TWICE_REJECT);
    CHECK_CONTAINS(twice_mock_job_error(j), "550 5.1.1 twice-test-sink: mailbox");
    twice_mock_job_free(j);
    CHECK_INT(run(m, "{\"candidateId\":8,\"email\":\"tempfail-data-8@example.com\"}", &j),
              TWICE_RETRY);
    CHECK_CONTAINS(twice_mock_job_error(j), "451 4.3.0");
    twice_mock_job_free(j);
    /* nothing was stored for any of them */
    char *none = stored(4, "json");
    CHECK(none == NULL);
    free(none);
}

/* message_id_domain names the Message-ID's domain; the message is the one
 * curl's MIME API assembled: one Content-Type with its boundary, the two
 * parts in order, each base64. */
static void
test_message_id_domain(void)
{
    char h[512], want[160];
    twice_mock_job *j;
    twice_mock *m = new_mock(smtp_url, TEMPLATE_DIR);
    twice_mock_set(m, "message_id_domain", "mail.example.org");
    CHECK_INT(twice_mock_init(m), 0);
    CHECK_INT(run(m, "{\"candidateId\":11,\"email\":\"eve@example.com\",\"name\":\"Eve\"}", &j),
              TWICE_DONE);
    twice_mock_job_free(j);
    twice_mock_free(m);
    char *eml = stored(4, "eml");
    expected_message_id("welcome-email:11", "11", "mail.example.org", want, sizeof(want));
    CHECK_STR(header(eml, "Message-ID", h, sizeof(h)), want);
    const char *ct =
        eml != NULL ? strstr(eml, "Content-Type: multipart/alternative; boundary=") : NULL;
    CHECK(ct != NULL);
    if (ct != NULL) {
        CHECK(strstr(ct + 1, "Content-Type: multipart/") == NULL);
        const char *text = strstr(ct, "Content-Type: text/plain; charset=UTF-8\r\n"
                                      "Content-Transfer-Encoding: base64\r\n\r\n");
        const char *html = strstr(ct, "Content-Type: text/html; charset=UTF-8\r\n"
                                      "Content-Transfer-Encoding: base64\r\n\r\n");
        CHECK(text != NULL && html != NULL && text < html);
    }
    char *text = part(eml, "text/plain");
    CHECK_CONTAINS(text, "Hello Eve,\r\n");
    free(text);
    free(eml);
}

static void
test_no_server_and_no_tls(void)
{
    char url[64];
    twice_mock_job *j;
    snprintf(url, sizeof(url), "smtp://127.0.0.1:%d", server_free_port());
    twice_mock *m = new_mock(url, TEMPLATE_DIR);
    CHECK_INT(twice_mock_init(m), 0);
    CHECK_INT(run(m, "{\"candidateId\":9,\"email\":\"a@example.com\"}", &j), TWICE_RETRY);
    CHECK_CONTAINS(twice_mock_job_error(j), "SMTP: ");
    CHECK_INT(twice_mock_job_downstream_unavailable(j), 0); /* no relay at all */
    twice_mock_job_free(j);
    twice_mock_free(m);

    /* a login over smtp:// needs STARTTLS, which the sink does not offer:
     * the password is never sent in clear, the job is retried */
    m = new_mock(smtp_url, TEMPLATE_DIR);
    twice_mock_set(m, "username", "twice");
    twice_mock_set(m, "password", "twice-smtp-test");
    CHECK_INT(twice_mock_init(m), 0);
    CHECK_INT(run(m, "{\"candidateId\":10,\"email\":\"a@example.com\"}", &j), TWICE_RETRY);
    CHECK(strstr(twice_mock_job_error(j), "twice-smtp-test") == NULL);
    twice_mock_job_free(j);
    twice_mock_free(m);
}

static int
integration(void)
{
    struct test_server sink = {.pid = 0};
    char dirarg[300];
    snprintf(maildir, sizeof(maildir), "/tmp/twice-welcome-test.XXXXXX");
    if (mkdtemp(maildir) == NULL || server_start(&sink, SMTP_SINK, "--dir", maildir) != 0) {
        fprintf(stderr, "could not start %s\n", SMTP_SINK);
        return 1;
    }
    snprintf(dirarg, sizeof(dirarg), "%s", maildir);
    snprintf(smtp_url, sizeof(smtp_url), "smtp://127.0.0.1:%d", sink.port);
    twice_mock *m = new_mock(smtp_url, TEMPLATE_DIR);
    CHECK_INT(twice_mock_init(m), 0);
    test_send(m);
    test_unicode_subject(m);
    test_failures(m);
    twice_mock_free(m);
    test_message_id_domain();
    test_no_server_and_no_tls();
    server_stop(&sink);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dirarg);
    CHECK_INT(system(cmd), 0);
    return check_done("test-welcome-email integration");
}

int
main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "integration") == 0) {
        return integration();
    }
    test_settings();
    test_refusals();
    test_not_utf8_refused();
    return check_done("test-welcome-email unit");
}
