/*
 * test-creds-parse.c - the pure parts of the credential sources: the JSON
 * credential documents, the STS XML reply, which container URIs may be
 * used, the STS endpoint, the refresh rule, and running a
 * credential_process (exit status, timeout, the end of stderr in messages).
 * Not the chain (test-creds.c) and not the wire (test_creds.py).
 */
#include "check.h"

#include "atomics.h"
#include "awsconfig.h"
#include "creds.h"
#include "creds_provider.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"

/* ---- JSON documents ---- */

static void
test_json_container(void)
{
    struct creds c;
    char why[256] = "";
    const char *doc = "{\"AccessKeyId\": \"ASIACONTAINER\", \"SecretAccessKey\": \"" SECRET "\","
                      " \"Token\": \"tok/+=\", \"Expiration\": \"2100-01-01T00:00:00Z\","
                      " \"RoleArn\": \"arn:aws:iam::1:role/x\"}";

    CHECK_INT(creds_from_json(doc, strlen(doc), "Token", CREDS_JSON_EXPIRATION, "container", &c,
                              why, sizeof(why)),
              1);
    CHECK_STR(c.access_key_id, "ASIACONTAINER");
    CHECK_STR(c.secret_access_key, SECRET);
    CHECK_STR(c.session_token, "tok/+=");
    CHECK_INT(c.expiration, 4102444800LL);
    CHECK_STR(c.provider, "container");
    creds_clear(&c);
}

static void
test_json_imds(void)
{
    struct creds c;
    char why[256] = "";
    const char *ok = "{\"Code\": \"Success\", \"LastUpdated\": \"2100-01-01T00:00:00Z\", "
                     "\"Type\": \"AWS-HMAC\", \"AccessKeyId\": \"ASIAIMDS\", "
                     "\"SecretAccessKey\": \"s\", \"Token\": \"t\", "
                     "\"Expiration\": \"2100-01-01T06:00:00Z\"}";
    const char *bad = "{\"Code\": \"Failure\", \"AccessKeyId\": \"ASIAIMDS\", "
                      "\"SecretAccessKey\": \"s\", \"Expiration\": \"2100-01-01T06:00:00Z\"}";
    unsigned flags = CREDS_JSON_EXPIRATION | CREDS_JSON_SUCCESS;

    CHECK_INT(creds_from_json(ok, strlen(ok), "Token", flags, "imds", &c, why, sizeof(why)), 1);
    CHECK_INT(c.expiration, 4102444800LL + 6 * 3600);
    creds_clear(&c);
    CHECK_INT(creds_from_json(bad, strlen(bad), "Token", flags, "imds", &c, why, sizeof(why)), 0);
    CHECK_STR(why, "the credentials' Code is \"Failure\", not Success");
    CHECK(c.access_key_id == NULL);
}

static void
test_json_process(void)
{
    struct creds c;
    char why[256] = "";
    const char *v1 = "{\"Version\": 1, \"AccessKeyId\": \"AKIDP\", \"SecretAccessKey\": \"s\"}";
    const char *v2 = "{\"Version\": 2, \"AccessKeyId\": \"AKIDP\", \"SecretAccessKey\": \"s\"}";

    /* No token, no expiration: long-term credentials. */
    CHECK_INT(creds_from_json(v1, strlen(v1), "SessionToken", CREDS_JSON_VERSION_1, "process:x",
                              &c, why, sizeof(why)),
              1);
    CHECK(c.session_token == NULL);
    CHECK_INT(c.expiration, 0);
    creds_clear(&c);
    CHECK_INT(creds_from_json(v2, strlen(v2), "SessionToken", CREDS_JSON_VERSION_1, "process:x",
                              &c, why, sizeof(why)),
              0);
    CHECK_STR(why, "the JSON has no \"Version\": 1");
}

static void
test_json_errors(void)
{
    struct creds c;
    char why[256] = "";
    const char *notjson = "AccessKeyId=AKID SecretAccessKey=" SECRET;
    const char *nosecret = "{\"AccessKeyId\": \"AKID\", \"Expiration\": \"2100-01-01T00:00:00Z\"}";
    const char *noexp = "{\"AccessKeyId\": \"AKID\", \"SecretAccessKey\": \"" SECRET "\"}";
    const char *badexp = "{\"AccessKeyId\": \"A\", \"SecretAccessKey\": \"s\", "
                         "\"Expiration\": \"soon\"}";
    const char *array = "[\"" SECRET "\"]";

    CHECK_INT(creds_from_json(notjson, strlen(notjson), "Token", 0, "x", &c, why, sizeof(why)), 0);
    CHECK_CONTAINS(why, "the answer is not JSON (error at line 1");
    CHECK(strstr(why, SECRET) == NULL && strstr(why, "AKID") == NULL);
    CHECK_INT(creds_from_json(array, strlen(array), "Token", 0, "x", &c, why, sizeof(why)), 0);
    CHECK_STR(why, "the answer is not a JSON object");
    CHECK_INT(creds_from_json(nosecret, strlen(nosecret), "Token", 0, "x", &c, why, sizeof(why)),
              0);
    CHECK_STR(why, "the JSON has no SecretAccessKey");
    CHECK_INT(creds_from_json(noexp, strlen(noexp), "Token", CREDS_JSON_EXPIRATION, "x", &c, why,
                              sizeof(why)),
              0);
    CHECK_STR(why, "the JSON has no Expiration");
    CHECK_INT(creds_from_json(badexp, strlen(badexp), "Token", 0, "x", &c, why, sizeof(why)), 0);
    CHECK_STR(why, "Expiration \"soon\" is not an ISO 8601 time");
}

/* ---- the STS reply ---- */

static const char sts_ok[] =
    "<AssumeRoleWithWebIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\n"
    "  <AssumeRoleWithWebIdentityResult>\n"
    "    <SubjectFromWebIdentityToken>system:serviceaccount:ns:sa</SubjectFromWebIdentityToken>\n"
    "    <AssumedRoleUser>\n"
    "      <Arn>arn:aws:sts::123456789012:assumed-role/r/s</Arn>\n"
    "      <AssumedRoleId>AROAEXAMPLE:s</AssumedRoleId>\n"
    "    </AssumedRoleUser>\n"
    "    <Credentials>\n"
    "      <SessionToken>FwoGZXIvYXdzE&amp;a&lt;b&gt;c&quot;d&apos;e&#65;&#x42;</SessionToken>\n"
    "      <SecretAccessKey>sec/ret+KEY&amp;</SecretAccessKey>\n"
    "      <Expiration>2100-01-01T00:00:00Z</Expiration>\n"
    "      <AccessKeyId>ASIAWEBID</AccessKeyId>\n"
    "    </Credentials>\n"
    "    <Provider>oidc.eks.amazonaws.com</Provider>\n"
    "  </AssumeRoleWithWebIdentityResult>\n"
    "  <ResponseMetadata><RequestId>1</RequestId></ResponseMetadata>\n"
    "</AssumeRoleWithWebIdentityResponse>\n";

static void
test_sts_reply(void)
{
    struct creds c;
    char why[512] = "";

    CHECK_INT(creds_sts_parse(sts_ok, strlen(sts_ok), "web-identity", &c, why, sizeof(why)), 1);
    CHECK_STR(c.access_key_id, "ASIAWEBID");
    CHECK_STR(c.secret_access_key, "sec/ret+KEY&");
    CHECK_STR(c.session_token, "FwoGZXIvYXdzE&a<b>c\"d'eAB");
    CHECK_INT(c.expiration, 4102444800LL);
    CHECK_STR(c.provider, "web-identity");
    creds_clear(&c);
}

static void
test_sts_errors(void)
{
    struct creds c;
    char why[512] = "";
    const char *err = "<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"
                      "<Error><Type>Sender</Type><Code>InvalidIdentityToken</Code>"
                      "<Message>Incorrect token audience &amp; issuer</Message></Error>"
                      "<RequestId>x</RequestId></ErrorResponse>";
    const char *partial = "<R><Credentials><AccessKeyId>A</AccessKeyId>"
                          "<SecretAccessKey>s</SecretAccessKey></Credentials></R>";
    const char *badent = "<R><Credentials><AccessKeyId>A</AccessKeyId><SecretAccessKey>s&bogus;"
                         "</SecretAccessKey><SessionToken>t</SessionToken><Expiration>"
                         "2100-01-01T00:00:00Z</Expiration></Credentials></R>";
    const char *cut = "<R><Credentials><AccessKeyId>A</AccessKeyId><SecretAccessKey>s";

    CHECK_INT(creds_sts_parse(err, strlen(err), "web-identity", &c, why, sizeof(why)), 0);
    CHECK_STR(why, "InvalidIdentityToken: Incorrect token audience & issuer");
    /* A SignatureDoesNotMatch that quotes the canonical request: its
     * headers hold the session token, which must not reach the log. */
    const char *quoted = "<ErrorResponse><Error><Code>SignatureDoesNotMatch</Code><Message>The "
                         "request signature we calculated does not match.\n\nThe Canonical "
                         "String for this request should have been\n'POST\n/\n\n"
                         "x-amz-security-token:SECRETTOKEN\n'</Message></Error></ErrorResponse>";
    CHECK_INT(creds_sts_parse(quoted, strlen(quoted), "assume-role", &c, why, sizeof(why)), 0);
    CHECK_STR(why, "SignatureDoesNotMatch: The request signature we calculated does not match.");
    const char *token_only = "<ErrorResponse><Error><Code>SignatureDoesNotMatch</Code><Message>"
                             "x-amz-security-token:SECRETTOKEN</Message></Error></ErrorResponse>";
    CHECK_INT(creds_sts_parse(token_only, strlen(token_only), "assume-role", &c, why, sizeof(why)),
              0);
    CHECK(strstr(why, "SECRETTOKEN") == NULL);
    CHECK_INT(creds_sts_parse(partial, strlen(partial), "web-identity", &c, why, sizeof(why)), 0);
    CHECK_CONTAINS(why, "lack AccessKeyId, SecretAccessKey, SessionToken or Expiration");
    CHECK_INT(creds_sts_parse(badent, strlen(badent), "web-identity", &c, why, sizeof(why)), 0);
    CHECK_INT(creds_sts_parse(cut, strlen(cut), "web-identity", &c, why, sizeof(why)), 0);
    CHECK_INT(creds_sts_parse("", 0, "web-identity", &c, why, sizeof(why)), 0);
    CHECK_STR(why, "the reply has no Credentials");
    CHECK(c.access_key_id == NULL);

    /* A NUL byte in the text (XML has none) makes the element malformed:
     * a key is not cut short at it, a reason is never empty (fuzz-creds). */
    static const char nul_key[] = "<R><Credentials><AccessKeyId>AKID\0tail</AccessKeyId>"
                                  "<SecretAccessKey>s</SecretAccessKey><SessionToken>t"
                                  "</SessionToken><Expiration>2100-01-01T00:00:00Z"
                                  "</Expiration></Credentials></R>";
    CHECK_INT(creds_sts_parse(nul_key, sizeof(nul_key) - 1, "web-identity", &c, why, sizeof(why)),
              0);
    CHECK(c.access_key_id == NULL);
    static const char nul_code[] = "<ErrorResponse><Error><Code>\0\0Denied</Code>"
                                   "<Message>Not authorized</Message></Error></ErrorResponse>";
    CHECK_INT(
        creds_sts_parse(nul_code, sizeof(nul_code) - 1, "web-identity", &c, why, sizeof(why)), 0);
    CHECK_STR(why, "the reply has no Credentials: Not authorized");
    static const char empty_code[] = "<ErrorResponse><Error><Code></Code></Error></ErrorResponse>";
    CHECK_INT(
        creds_sts_parse(empty_code, strlen(empty_code), "web-identity", &c, why, sizeof(why)), 0);
    CHECK_STR(why, "the reply has no Credentials");
}

static void
test_sts_endpoint(void)
{
    char *e;

    unsetenv("AWS_ENDPOINT_URL_STS");
    unsetenv("AWS_ENDPOINT_URL");
    unsetenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS");
    CHECK_STR(e = awsconfig_service_url("sts", "eu-west-1"),
              "https://sts.eu-west-1.amazonaws.com");
    free(e);
    CHECK_STR(e = awsconfig_service_url("sts", "cn-north-1"),
              "https://sts.cn-north-1.amazonaws.com.cn");
    free(e);
    CHECK_STR(e = awsconfig_service_url("sts", NULL), "https://sts.amazonaws.com");
    free(e);
    setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1", 1);
    CHECK_STR(e = awsconfig_service_url("sts", "eu-west-1"), "http://127.0.0.1:1");
    free(e);
    setenv("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:2", 1);
    CHECK_STR(e = awsconfig_service_url("sts", "eu-west-1"), "http://127.0.0.1:2");
    free(e);
    setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "TRUE", 1);
    CHECK_STR(e = awsconfig_service_url("sts", "eu-west-1"),
              "https://sts.eu-west-1.amazonaws.com");
    free(e);
    unsetenv("AWS_ENDPOINT_URL_STS");
    unsetenv("AWS_ENDPOINT_URL");
    unsetenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS");
}

/* ---- container URIs ---- */

static void
test_container_uris(void)
{
    static const char *const ok[] = {
        "https://creds.example.com/v1",
        "https://creds.example.com:8443/x",
        "http://127.0.0.1/creds",
        "http://127.0.0.1:51679/creds",
        "http://127.1.2.3:80",
        "http://localhost:8080/x",
        "http://[::1]:80/x",
        "http://169.254.170.2/v2/credentials/abc",
        "http://169.254.170.23/v1/credentials",
        "http://[fd00:ec2::23]/v1/credentials",
        "HTTP://[FD00:EC2::23]:80/v1/credentials",
    };
    static const char *const refused[] = {
        "http://example.com/creds",
        "http://128.0.0.1/creds",
        "http://169.254.169.254/latest",
        "http://127.0.0.1@evil.example/x",
        "http://evil.example#@127.0.0.1/x",
        "http://127.0.0.1.evil.example/x",
        "http://[fd00:ec2::24]/x",
        "http://127.0.0.1:80x/x",
        "ftp://127.0.0.1/x",
        "file:///etc/passwd",
        "https:///nohost",
        "127.0.0.1/x",
    };

    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        if (!creds_container_uri_allowed(ok[i])) {
            fprintf(stderr, "refused: %s\n", ok[i]);
        }
        CHECK(creds_container_uri_allowed(ok[i]));
    }
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        if (creds_container_uri_allowed(refused[i])) {
            fprintf(stderr, "allowed: %s\n", refused[i]);
        }
        CHECK(!creds_container_uri_allowed(refused[i]));
    }
}

/* ---- the refresh rule ---- */

static void
test_refresh_time(void)
{
    time_t t0 = 1700000000;

    CHECK_INT(creds_refresh_time(t0, 0), 0);
    /* Six hours (IMDS): 15 minutes ahead. */
    CHECK_INT(creds_refresh_time(t0, t0 + 6 * 3600), t0 + 6 * 3600 - 900);
    /* Five minutes left: at half-life, 150 s ahead. */
    CHECK_INT(creds_refresh_time(t0, t0 + 300), t0 + 150);
    /* Very short: at least 20 s ahead, even if that is now. */
    CHECK_INT(creds_refresh_time(t0, t0 + 30), t0 + 10);
    CHECK_INT(creds_refresh_time(t0, t0 + 5), t0 - 15);
}

/* ---- credential_process ---- */

static int
run(const char *cmd, long timeout_ms, char *out, size_t cap, size_t *len, char *why, size_t whylen)
{
    why[0] = '\0';
    return creds_process_run(cmd, timeout_ms, NULL, out, cap, len, why, whylen);
}

static void
test_process_run(void)
{
    char out[64], why[512];
    size_t len = 0;
    struct timespec a, b;

    CHECK_INT(run("printf hello; echo secret-on-stderr >&2", 5000, out, sizeof(out) - 1, &len, why,
                  sizeof(why)),
              0);
    CHECK_STR(out, "hello");
    CHECK_INT(len, 5);
    /* stdin is /dev/null: a command that reads it does not hang. */
    CHECK_INT(run("cat; printf done", 5000, out, sizeof(out) - 1, &len, why, sizeof(why)), 0);
    CHECK_STR(out, "done");
    /* A failure shows the end of stderr (where tools say what to do),
     * escaped and cut short; never stdout (where the secrets are). */
    CHECK_INT(run("printf '{\"SecretAccessKey\":\"on-stdout\"}'; echo; "
                  "printf 'Error loading SSO Token.\\n\\tRun aws sso login\\033[31m\\n\\n' >&2;"
                  " exit 7",
                  5000, out, sizeof(out) - 1, &len, why, sizeof(why)),
              -1);
    CHECK_STR(why, "exited with status 7; stderr: Error loading SSO Token.\\n\\tRun aws sso "
                   "login\\x1b[31m");
    CHECK(strstr(why, "on-stdout") == NULL);
    CHECK_INT(run("head -c 3000 /dev/zero | tr '\\0' a >&2; printf ' the end' >&2; exit 1", 5000,
                  out, sizeof(out) - 1, &len, why, sizeof(why)),
              -1);
    CHECK_CONTAINS(why, "exited with status 1; stderr: ...aaa");
    CHECK_CONTAINS(why, "aaa the end");
    CHECK(strlen(why) < 220);
    CHECK_INT(run("exit 2", 5000, out, sizeof(out) - 1, &len, why, sizeof(why)), -1);
    CHECK_STR(why, "exited with status 2");
    CHECK_INT(run("kill -TERM $$", 5000, out, sizeof(out) - 1, &len, why, sizeof(why)), -1);
    CHECK_STR(why, "killed by signal 15");
    CHECK_INT(run("head -c 200 /dev/zero", 5000, out, sizeof(out) - 1, &len, why, sizeof(why)),
              -1);
    CHECK_STR(why, "printed more than 63 bytes");
    /* A hung command, and its children, are killed at the deadline. */
    clock_gettime(CLOCK_MONOTONIC, &a);
    CHECK_INT(run("sleep 30 & sleep 30", 300, out, sizeof(out) - 1, &len, why, sizeof(why)), -1);
    clock_gettime(CLOCK_MONOTONIC, &b);
    CHECK_STR(why, "did not finish within 300 ms (killed)");
    CHECK((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < 3000);
    /* Closing stdout early does not end the wait: the exit status counts. */
    CHECK_INT(
        run("exec >&-; sleep 0.2; exit 4", 5000, out, sizeof(out) - 1, &len, why, sizeof(why)),
        -1);
    CHECK_STR(why, "exited with status 4");
}

static void
test_process_cancel(void)
{
    char out[64], why[256];
    size_t len = 0;
    struct flag cancel = {0};

    flag_raise(&cancel);

    CHECK_INT(creds_process_run("sleep 30", 60000, &cancel, out, sizeof(out) - 1, &len, why,
                                sizeof(why)),
              -1);
    CHECK_STR(why, "cancelled");
}

int
main(void)
{
    test_json_container();
    test_json_imds();
    test_json_process();
    test_json_errors();
    test_sts_reply();
    test_sts_errors();
    test_sts_endpoint();
    test_container_uris();
    test_refresh_time();
    test_process_run();
    test_process_cancel();
    return check_done("test-creds-parse");
}
