/*
 * test-creds-whoami.c - `twicectl whoami` (ctl_whoami) in-process: what it
 * prints as text and as JSON for long-term and temporary credentials, its
 * failures, and that no secret ever shows. The configuration is built in
 * memory and handed over as the context's, so this runs without twicectl.c.
 */
#include "check.h"

#include "config.h"
#include "creds.h"
#include "ctl.h"

#include <jansson.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <getopt.h>
#include <unistd.h>

#define AKID   "AKIAIOSFODNN7EXAMPLE"
#define SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define TOKEN  "IQoJb3JpZ2luX2VjEXAMPLETOKEN"

static struct config test_cfg;
static int config_broken;

/* ---- running it ---- */

static char out_text[8192], err_text[8192];

static void
slurp(FILE *f, char *buf, size_t len)
{
    rewind(f);
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
}

/* ctl_whoami with args (NULL-terminated), stdout and stderr captured. */
static int
whoami(int json, const char *arg)
{
    char *argv[] = {"whoami", (char *) arg, NULL};
    struct ctl c;
    FILE *o = tmpfile(), *e = tmpfile();
    int saved_out = dup(1), saved_err = dup(2);

    memset(&c, 0, sizeof(c));
    c.json = json;
    c.cfg = config_broken ? NULL : &test_cfg;
    c.config_path = "/nonexistent/t.conf";
    optind = 0;
    fflush(stdout);
    fflush(stderr);
    dup2(fileno(o), 1);
    dup2(fileno(e), 2);
    int rc = ctl_whoami(&c, arg != NULL ? 2 : 1, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    slurp(o, out_text, sizeof(out_text));
    slurp(e, err_text, sizeof(err_text));
    CHECK(strstr(out_text, SECRET) == NULL && strstr(err_text, SECRET) == NULL);
    CHECK(strstr(out_text, TOKEN) == NULL && strstr(err_text, TOKEN) == NULL);
    CHECK(strstr(out_text, AKID) == NULL); /* only its tail */
    return rc;
}

static void
reset_env(void)
{
    static const char *const vars[] = {
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_CREDENTIAL_EXPIRATION",
        "AWS_PROFILE",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_ENDPOINT_URL_SQS",
        "AWS_ENDPOINT_URL",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    };
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        unsetenv(vars[i]);
    }
    setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config", 1);
    setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials", 1);
    setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
    test_cfg.aws.region = "eu-west-1";
    test_cfg.aws.endpoint = NULL;
    config_broken = 0;
}

static void
test_long_term_text(void)
{
    reset_env();
    setenv("AWS_ACCESS_KEY_ID", AKID, 1);
    setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
    CHECK_INT(whoami(0, NULL), CTL_OK);
    CHECK_STR(out_text, "provider:       env\n"
                        "access key id:  ...MPLE\n"
                        "session token:  no\n"
                        "expires:        never (long-term credentials)\n"
                        "region:         eu-west-1\n"
                        "endpoint:       https://sqs.eu-west-1.amazonaws.com\n");
    CHECK_STR(err_text, "");
}

static void
set_expiration_in(long seconds)
{
    char s[32];
    time_t t = time(NULL) + seconds;
    struct tm tm;

    gmtime_r(&t, &tm);
    strftime(s, sizeof(s), "%Y-%m-%dT%H:%M:%SZ", &tm);
    setenv("AWS_CREDENTIAL_EXPIRATION", s, 1);
}

static void
test_temporary_text_and_json(void)
{
    reset_env();
    setenv("AWS_ACCESS_KEY_ID", AKID, 1);
    setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
    setenv("AWS_SESSION_TOKEN", TOKEN, 1);
    set_expiration_in(41 * 60 + 30);
    test_cfg.aws.endpoint = "http://127.0.0.1:4566";
    CHECK_INT(whoami(0, NULL), CTL_OK);
    CHECK_CONTAINS(out_text, "session token:  yes (temporary)\n");
    CHECK_CONTAINS(out_text, "Z (in 41 minutes)\n");
    CHECK_CONTAINS(out_text, "endpoint:       http://127.0.0.1:4566\n");

    CHECK_INT(whoami(0, "--json"), CTL_OK);
    json_error_t jerr;
    json_t *o = json_loads(out_text, 0, &jerr);
    CHECK(o != NULL);
    CHECK_STR(json_string_value(json_object_get(o, "provider")), "env");
    CHECK_STR(json_string_value(json_object_get(o, "access_key_id_last4")), "MPLE");
    CHECK(json_is_true(json_object_get(o, "temporary")));
    CHECK_STR(json_string_value(json_object_get(o, "expiration")),
              getenv("AWS_CREDENTIAL_EXPIRATION"));
    json_int_t left = json_integer_value(json_object_get(o, "expires_in_seconds"));
    CHECK(left > 41 * 60 && left <= 41 * 60 + 30);
    CHECK_STR(json_string_value(json_object_get(o, "region")), "eu-west-1");
    json_decref(o);

    /* The global --json (struct ctl's json) does the same. */
    CHECK_INT(whoami(1, NULL), CTL_OK);
    CHECK_CONTAINS(out_text, "\"access_key_id_last4\": \"MPLE\"");
}

static void
test_relative_times(void)
{
    reset_env();
    setenv("AWS_ACCESS_KEY_ID", AKID, 1);
    setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
    set_expiration_in(5 * 3600 + 100);
    CHECK_INT(whoami(0, NULL), CTL_OK);
    CHECK_CONTAINS(out_text, "(in 5 hours)");
    set_expiration_in(3 * 86400 + 100);
    CHECK_INT(whoami(0, NULL), CTL_OK);
    CHECK_CONTAINS(out_text, "(in 3 days)");
}

static void
test_failures(void)
{
    reset_env();
    CHECK_INT(whoami(0, NULL), CTL_FAIL);
    CHECK_STR(out_text, "");
    CHECK_CONTAINS(err_text, "twicectl: whoami: no AWS credentials: tried env (");

    /* No region: the identity still shows, and the exit code says it. */
    setenv("AWS_ACCESS_KEY_ID", AKID, 1);
    setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
    test_cfg.aws.region = NULL;
    CHECK_INT(whoami(0, NULL), CTL_FAIL);
    CHECK_CONTAINS(out_text, "provider:       env\n");
    CHECK_CONTAINS(out_text, "region:         no AWS region: set aws.region");
    CHECK_CONTAINS(err_text, "twicectl: whoami: no AWS region");
    CHECK_INT(whoami(0, "--json"), CTL_FAIL);
    CHECK_CONTAINS(out_text, "\"region\": null");

    reset_env();
    CHECK_INT(whoami(0, "--yaml"), CTL_USAGE);
    CHECK_CONTAINS(err_text, "unknown option --yaml");
    CHECK_INT(whoami(0, "extra"), CTL_USAGE);
    CHECK_CONTAINS(err_text, "unexpected argument \"extra\"");
    CHECK_INT(whoami(0, "--help"), CTL_OK);
    CHECK_CONTAINS(out_text, "usage: twicectl [-c FILE] whoami [--json]");
    config_broken = 1;
    CHECK_INT(whoami(0, NULL), CTL_FAIL);
    CHECK_CONTAINS(err_text, "/nonexistent/t.conf");
}

int
main(void)
{
    test_long_term_text();
    test_temporary_text_and_json();
    test_relative_times();
    test_failures();
    return check_done("test-creds-whoami");
}
