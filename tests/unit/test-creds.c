/*
 * test-creds.c - the credential chain's local sources (env, the profile
 * files), its order and error texts, the INI reading of awsconfig.c and
 * expirations. Files are written to a temporary folder; the environment is
 * restored. The network sources are switched off or unset here: their
 * wire formats are tested against fake servers (test_creds.py), their
 * parsers in test-creds-parse.c, refreshing in test-creds-refresh.c.
 */
#include "check.h"

#include "awsconfig.h"
#include "creds.h"
#include "creds_provider.h"

#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"

static const char *const vars[] = {
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_CREDENTIAL_EXPIRATION",
    "AWS_PROFILE",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "HOME",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
    "AWS_ROLE_SESSION_NAME",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
    "AWS_EC2_METADATA_DISABLED",
    "AWS_EC2_METADATA_SERVICE_ENDPOINT",
    "AWS_EC2_METADATA_V1_DISABLED",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_STS",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
};
#define NVARS (sizeof(vars) / sizeof(vars[0]))

static char *saved[NVARS];
static char tmpdir[] = "/tmp/twice-test-creds-XXXXXX";
static char empty_home[128];

static void
save_env(void)
{
    for (size_t i = 0; i < NVARS; i++) {
        const char *v = getenv(vars[i]);
        saved[i] = v != NULL ? strdup(v) : NULL;
    }
}

static void
restore_env(void)
{
    for (size_t i = 0; i < NVARS; i++) {
        if (saved[i] != NULL) {
            setenv(vars[i], saved[i], 1);
        } else {
            unsetenv(vars[i]);
        }
        free(saved[i]);
    }
}

/* No AWS variables, a HOME without .aws, and no instance metadata (this
 * machine may well answer at 169.254.169.254): neither the developer's
 * own credentials nor a previous test leak in. */
static void
reset_env(void)
{
    for (size_t i = 0; i < NVARS; i++) {
        unsetenv(vars[i]);
    }
    setenv("HOME", empty_home, 1);
    setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
}

/* tmpdir/name with text in it; the path is in a static buffer per slot. */
static const char *
write_file(const char *name, const char *text)
{
    static char paths[8][256];
    static int next;
    char *path = paths[next++ % 8];

    snprintf(path, 256, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f != NULL) {
        fputs(text, f);
        fclose(f);
    }
    return path;
}

/* One chain, one creds_get: the rc, *c filled (creds_clear it). */
static int
get(const char *profile, struct creds *c, char *err, size_t errlen)
{
    struct creds_chain *chain = creds_chain_new(profile);

    CHECK(chain != NULL);
    if (chain == NULL) {
        memset(c, 0, sizeof(*c));
        return -1;
    }
    int rc = creds_get(chain, c, err, errlen);
    creds_chain_free(chain);
    return rc;
}

/* Expect credentials with this key id from this provider. */
static void
expect_creds(const char *profile, const char *akid, const char *secret, const char *token,
             const char *provider)
{
    struct creds c;
    char err[1024] = "";

    CHECK_INT(get(profile, &c, err, sizeof(err)), 0);
    CHECK_STR(err, "");
    CHECK_STR(c.access_key_id, akid);
    CHECK_STR(c.secret_access_key, secret);
    if (token == NULL) {
        CHECK(c.session_token == NULL);
    } else {
        CHECK_STR(c.session_token, token);
    }
    CHECK_STR(c.provider, provider);
    creds_clear(&c);
}

/* Expect failure; the error text goes to err. */
static void
expect_none(const char *profile, char *err, size_t errlen)
{
    struct creds c;

    CHECK_INT(get(profile, &c, err, errlen), -1);
    CHECK(c.access_key_id == NULL && c.secret_access_key == NULL);
}

/* ---- environment ---- */

static void
test_env(void)
{
    reset_env();
    setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
    setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
    expect_creds(NULL, "AKIDENV", SECRET, NULL, "env");
    setenv("AWS_SECURITY_TOKEN", "legacy-token", 1);
    expect_creds(NULL, "AKIDENV", SECRET, "legacy-token", "env");
    setenv("AWS_SESSION_TOKEN", "session-token", 1);
    expect_creds(NULL, "AKIDENV", SECRET, "session-token", "env");
    setenv("AWS_SESSION_TOKEN", "", 1); /* empty counts as unset */
    expect_creds(NULL, "AKIDENV", SECRET, "legacy-token", "env");
}

static void
test_env_beats_files(void)
{
    reset_env();
    setenv("AWS_SHARED_CREDENTIALS_FILE",
           write_file("c1", "[default]\naws_access_key_id = AKIDFILE\n"
                            "aws_secret_access_key = filesecret\n"),
           1);
    setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
    setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
    expect_creds(NULL, "AKIDENV", SECRET, NULL, "env");
    /* A lone key id is not credentials: the file's are used. */
    unsetenv("AWS_SECRET_ACCESS_KEY");
    expect_creds(NULL, "AKIDFILE", "filesecret", NULL, "profile:default");
}

static void
test_partial_env_error(void)
{
    char err[1024] = "";

    reset_env();
    setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
    expect_none(NULL, err, sizeof(err));
    CHECK_STR(err, "no AWS credentials: tried env (AWS_ACCESS_KEY_ID set but "
                   "AWS_SECRET_ACCESS_KEY not), web-identity (AWS_WEB_IDENTITY_TOKEN_FILE not "
                   "set), profile default (~/.aws/credentials: no such file; ~/.aws/config: no "
                   "such file), container (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI and _FULL_URI "
                   "not set), imds (AWS_EC2_METADATA_DISABLED=true)");
    reset_env();
    setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
    expect_none(NULL, err, sizeof(err));
    CHECK_CONTAINS(err, "env (AWS_ACCESS_KEY_ID not set)");
    CHECK(strstr(err, SECRET) == NULL);
}

/* ---- the profile files ---- */

static void
test_credentials_file(void)
{
    reset_env();
    setenv("AWS_SHARED_CREDENTIALS_FILE",
           write_file("c2", "[default]\naws_access_key_id=AKIDDEF\naws_secret_access_key=s1\n"
                            "aws_session_token=t1\n\n[dev]\naws_access_key_id=AKIDDEV\n"
                            "aws_secret_access_key=s2\n"),
           1);
    expect_creds(NULL, "AKIDDEF", "s1", "t1", "profile:default");
    expect_creds("dev", "AKIDDEV", "s2", NULL, "profile:dev");
    setenv("AWS_PROFILE", "dev", 1);
    expect_creds(NULL, "AKIDDEV", "s2", NULL, "profile:dev");
    expect_creds("default", "AKIDDEF", "s1", "t1", "profile:default"); /* argument wins */
}

static void
test_config_file(void)
{
    char err[1024];

    reset_env();
    setenv("AWS_CONFIG_FILE",
           write_file("f1", "[default]\nregion = us-east-2\naws_access_key_id = AKIDCDEF\n"
                            "aws_secret_access_key = cs0\n"
                            "[profile dev]\naws_access_key_id = AKIDCDEV\n"
                            "aws_secret_access_key = cs1\n"
                            "[plain]\naws_access_key_id = AKIDPLAIN\n"
                            "aws_secret_access_key = cs2\n"),
           1);
    expect_creds(NULL, "AKIDCDEF", "cs0", NULL, "profile:default");
    setenv("AWS_PROFILE", "dev", 1);
    expect_creds(NULL, "AKIDCDEV", "cs1", NULL, "profile:dev");
    /* In the config file a profile's section is [profile NAME]. */
    expect_none("plain", err, sizeof(err));
    CHECK_CONTAINS(err, "no [profile plain]");
}

static void
test_credentials_file_wins(void)
{
    reset_env();
    setenv("AWS_SHARED_CREDENTIALS_FILE",
           write_file("c3", "[dev]\naws_access_key_id = AKIDCRED\naws_secret_access_key = a\n"),
           1);
    setenv("AWS_CONFIG_FILE",
           write_file("f2", "[profile dev]\naws_access_key_id = AKIDCONF\n"
                            "aws_secret_access_key = b\naws_session_token = tok\n"),
           1);
    /* Whole sets, never mixed: the config file's token is not added. */
    expect_creds("dev", "AKIDCRED", "a", NULL, "profile:dev");
    /* An incomplete set in the credentials file yields to the config file. */
    write_file("c3", "[dev]\naws_access_key_id = AKIDCRED\n");
    expect_creds("dev", "AKIDCONF", "b", "tok", "profile:dev");
}

static void
test_missing_profile(void)
{
    char err[1024], want[2048];

    reset_env();
    const char *cred = write_file("c4", "[default]\naws_access_key_id = A\n"
                                        "aws_secret_access_key = " SECRET "\n");
    const char *conf = write_file("f3", "[default]\nregion = eu-west-1\n");
    setenv("AWS_SHARED_CREDENTIALS_FILE", cred, 1);
    setenv("AWS_CONFIG_FILE", conf, 1);
    setenv("AWS_PROFILE", "nope", 1);
    expect_none(NULL, err, sizeof(err));
    snprintf(want, sizeof(want),
             "no AWS credentials: tried env (AWS_ACCESS_KEY_ID not set), web-identity "
             "(AWS_WEB_IDENTITY_TOKEN_FILE not set), profile nope (%s: no [nope]; %s: no "
             "[profile nope]), container (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI and _FULL_URI "
             "not set), imds (AWS_EC2_METADATA_DISABLED=true)",
             cred, conf);
    CHECK_STR(err, want);
    /* A section that has the secret but not the key id: named, not shown. */
    write_file("c4", "[nope]\naws_secret_access_key = " SECRET "\n");
    expect_none(NULL, err, sizeof(err));
    CHECK_CONTAINS(err, "[nope] has no aws_access_key_id");
    CHECK(strstr(err, SECRET) == NULL);
    write_file("c4", "[nope]\naws_access_key_id = AKIDONLY\n");
    expect_none(NULL, err, sizeof(err));
    CHECK_CONTAINS(err, "[nope] has aws_access_key_id but no aws_secret_access_key");
}

/* Without the variables the files are under HOME. */
static void
test_home_files(void)
{
    char dir[256], err[1024];

    reset_env();
    snprintf(dir, sizeof(dir), "%s/home", tmpdir);
    mkdir(dir, 0700);
    snprintf(dir, sizeof(dir), "%s/home/.aws", tmpdir);
    mkdir(dir, 0700);
    write_file("home/.aws/credentials", "[default]\naws_access_key_id = AKIDHOME\n"
                                        "aws_secret_access_key = h\n");
    write_file("home/.aws/config", "[profile dev]\naws_access_key_id = AKIDHOMECONF\n"
                                   "aws_secret_access_key = hc\n");
    snprintf(dir, sizeof(dir), "%s/home", tmpdir);
    setenv("HOME", dir, 1);
    expect_creds(NULL, "AKIDHOME", "h", NULL, "profile:default");
    expect_creds("dev", "AKIDHOMECONF", "hc", NULL, "profile:dev");
    expect_none("other", err, sizeof(err));
    CHECK_CONTAINS(err, "profile other (~/.aws/credentials: no [other]; ~/.aws/config: no "
                        "[profile other])");
}

/* ---- INI syntax, as the AWS CLI writes and reads it ---- */

static void
test_ini_syntax(void)
{
    reset_env();
    setenv("AWS_SHARED_CREDENTIALS_FILE",
           write_file("c5", "# a comment\n"
                            "; another\n"
                            "[other]\n"
                            "aws_access_key_id = AKIDOTHER\n"
                            "\n"
                            "[default]\r\n"
                            "  # indented comment\n"
                            "AWS_Access_Key_ID   =   AKIDINI  \r\n"
                            "aws_secret_access_key\t=\tini/secret+x=\r\n"
                            "s3 =\n"
                            "    aws_session_token = nested-not-a-key\n"
                            "[default]\n"
                            "aws_access_key_id = AKIDLAST\n"),
           1);
    /* Keys any case, blanks trimmed, CRLF, '=' inside a value, nested
     * values skipped, a repeated section merged with the last value kept. */
    expect_creds(NULL, "AKIDLAST", "ini/secret+x=", NULL, "profile:default");
    setenv("AWS_CONFIG_FILE",
           write_file("f4", "[profile   spaced]\naws_access_key_id=AKIDSP\n"
                            "aws_secret_access_key=sp\n"),
           1);
    expect_creds("spaced", "AKIDSP", "sp", NULL, "profile:spaced");
}

static void
test_profile_value(void)
{
    char *v = NULL;

    reset_env();
    CHECK_INT(awsconfig_profile_value(NULL, "region", &v), 0); /* no file */
    CHECK(v == NULL);
    setenv("AWS_CONFIG_FILE",
           write_file("f5", "[default]\nregion = us-west-2\ns3 =\n  region = nested\n"
                            "[profile dev]\nRegion=eu-central-1\n[profile blank]\nregion =\n"),
           1);
    CHECK_INT(awsconfig_profile_value(NULL, "region", &v), 1);
    CHECK_STR(v, "us-west-2");
    free(v);
    setenv("AWS_PROFILE", "dev", 1);
    CHECK_INT(awsconfig_profile_value(NULL, "region", &v), 1);
    CHECK_STR(v, "eu-central-1");
    free(v);
    CHECK_INT(awsconfig_profile_value("default", "region", &v), 1);
    CHECK_STR(v, "us-west-2");
    free(v);
    CHECK_INT(awsconfig_profile_value("dev", "output", &v), 0);
    CHECK(v == NULL);
    CHECK_INT(awsconfig_profile_value("blank", "region", &v), 0);
    CHECK_INT(awsconfig_profile_value("missing", "region", &v), 0);
    setenv("AWS_CONFIG_FILE", tmpdir, 1); /* a directory cannot be read */
    CHECK_INT(awsconfig_profile_value(NULL, "region", &v), -1);
    CHECK(v == NULL);
}

/* ---- expiry and the cache ---- */

static void
test_expiration(void)
{
    struct creds c;
    char err[1024];
    time_t t = 0;

    CHECK_INT(creds_parse_time("2100-01-01T00:00:00Z", &t), 0);
    CHECK_INT(t, 4102444800LL);
    CHECK_INT(creds_parse_time("2100-01-01T01:00:00.123+01:00", &t), 0);
    CHECK_INT(t, 4102444800LL);
    CHECK_INT(creds_parse_time("2099-12-31T22:30:00-0130", &t), 0);
    CHECK_INT(t, 4102444800LL);
    CHECK_INT(creds_parse_time("2100-01-01T00:00:00", &t), 0);
    CHECK_INT(creds_parse_time("2100-01-01", &t), -1);
    CHECK_INT(creds_parse_time("2100-13-01T00:00:00Z", &t), -1);
    CHECK_INT(creds_parse_time("2100-01-01T00:00:00Zjunk", &t), -1);

    reset_env();
    setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
    setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
    setenv("AWS_CREDENTIAL_EXPIRATION", "2100-01-01T00:00:00Z", 1);
    CHECK_INT(get(NULL, &c, err, sizeof(err)), 0);
    CHECK_INT(c.expiration, 4102444800LL);
    creds_clear(&c);
    setenv("AWS_CREDENTIAL_EXPIRATION", "tomorrow", 1);
    expect_none(NULL, err, sizeof(err));
    CHECK_CONTAINS(err, "env (AWS_CREDENTIAL_EXPIRATION \"tomorrow\" is not an ISO 8601 time)");
    setenv("AWS_CREDENTIAL_EXPIRATION", "2000-01-01T00:00:00Z", 1);
    expect_none(NULL, err, sizeof(err));
    CHECK_CONTAINS(err, "env (expired at 2000-01-01T00:00:00Z)");
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
chain_expect(struct creds_chain *chain, const char *akid)
{
    struct creds c;
    char err[1024] = "";

    CHECK_INT(creds_get(chain, &c, err, sizeof(err)), 0);
    CHECK_STR(c.access_key_id, akid);
    creds_clear(&c);
}

static void
test_cache(void)
{
    char err[1024];

    reset_env();
    setenv("AWS_ACCESS_KEY_ID", "AKIDONE", 1);
    setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
    struct creds_chain *chain = creds_chain_new(NULL);
    CHECK(chain != NULL);
    /* Credentials that do not expire are resolved once. */
    chain_expect(chain, "AKIDONE");
    setenv("AWS_ACCESS_KEY_ID", "AKIDTWO", 1);
    chain_expect(chain, "AKIDONE");
    creds_chain_free(chain);

    /* An hour left: cached, no refresh due yet. */
    set_expiration_in(3600);
    chain = creds_chain_new(NULL);
    chain_expect(chain, "AKIDTWO");
    setenv("AWS_ACCESS_KEY_ID", "AKIDTHREE", 1);
    chain_expect(chain, "AKIDTWO");
    creds_chain_free(chain);

    /* Five seconds left is too little to sign with: as good as expired. */
    set_expiration_in(5);
    expect_none(NULL, err, sizeof(err));
    CHECK_CONTAINS(err, "env (expired at ");
}

/* A profile's credential_process sits between its credentials-file keys
 * and its config-file keys, as in botocore. */
static void
test_credential_process_order(void)
{
    char cmd[512];

    reset_env();
    snprintf(cmd, sizeof(cmd),
             "[default]\ncredential_process = printf '{\"Version\": 1, \"AccessKeyId\": "
             "\"AKIDPROC\", \"SecretAccessKey\": \"procsecret\", \"SessionToken\": \"ptok\", "
             "\"Expiration\": \"2100-01-01T00:00:00Z\"}'\n"
             "aws_access_key_id = AKIDCONFIG\naws_secret_access_key = cs\n");
    setenv("AWS_CONFIG_FILE", write_file("f6", cmd), 1);
    expect_creds(NULL, "AKIDPROC", "procsecret", "ptok", "process:default");
    setenv("AWS_SHARED_CREDENTIALS_FILE",
           write_file("c6", "[default]\naws_access_key_id = AKIDCRED\n"
                            "aws_secret_access_key = cr\n"),
           1);
    expect_creds(NULL, "AKIDCRED", "cr", NULL, "profile:default");
    /* In the credentials file too; there it wins over the config file's. */
    write_file("c6", "[default]\ncredential_process = printf '{\"Version\": 1, "
                     "\"AccessKeyId\": \"AKIDPROC2\", \"SecretAccessKey\": \"s2\"}'\n");
    expect_creds(NULL, "AKIDPROC2", "s2", NULL, "process:default");
}

/* A source that is configured but fails stops the chain: no quiet fallback
 * to the next source's identity. */
static void
test_configured_source_fails(void)
{
    char err[1024];

    reset_env();
    setenv("AWS_SHARED_CREDENTIALS_FILE",
           write_file("c7", "[default]\naws_access_key_id = AKIDFALLBACK\n"
                            "aws_secret_access_key = fb\n"),
           1);
    setenv("AWS_WEB_IDENTITY_TOKEN_FILE", "/nonexistent/token", 1);
    setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/r", 1);
    expect_none(NULL, err, sizeof(err));
    CHECK_STR(err, "AWS credentials: web-identity: web identity token file /nonexistent/token: "
                   "No such file or directory");
    /* STS's region, when the chain has none, is checked where it is read */
    setenv("AWS_WEB_IDENTITY_TOKEN_FILE", write_file("token7", "a-token"), 1);
    setenv("AWS_DEFAULT_REGION", "EU", 1);
    expect_none(NULL, err, sizeof(err));
    CHECK_STR(err, "AWS credentials: web-identity: AWS_DEFAULT_REGION=EU: not a region name "
                   "(lowercase letters, digits and '-', like us-east-1)");
    unsetenv("AWS_DEFAULT_REGION");
    /* STS's endpoint is checked where it is read, and named: it failed as an
     * opaque HTTP error (or went where curl guessed) */
    setenv("AWS_REGION", "eu-west-1", 1);
    setenv("AWS_ENDPOINT_URL_STS", "sts.local:4566", 1);
    expect_none(NULL, err, sizeof(err));
    CHECK_STR(err, "AWS credentials: web-identity: AWS_ENDPOINT_URL_STS: not a usable STS "
                   "endpoint URL: must start with http:// or https://");
    unsetenv("AWS_ENDPOINT_URL_STS");
    unsetenv("AWS_REGION");
    /* Only half configured: a reason, and the next source answers. */
    unsetenv("AWS_ROLE_ARN");
    expect_creds(NULL, "AKIDFALLBACK", "fb", NULL, "profile:default");

    reset_env();
    setenv("AWS_CONFIG_FILE",
           write_file("f7", "[default]\ncredential_process = echo token-on-stderr >&2; exit 3\n"),
           1);
    expect_none(NULL, err, sizeof(err));
    CHECK_STR(err, "AWS credentials: profile default: credential_process exited with "
                   "status 3; stderr: token-on-stderr");
    write_file("f7", "[default]\ncredential_process = echo '{\"Version\": 2}'\n");
    expect_none(NULL, err, sizeof(err));
    CHECK_CONTAINS(err, "credential_process printed no credentials: the JSON has no "
                        "\"Version\": 1");

    reset_env();
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://example.com/creds", 1);
    expect_none(NULL, err, sizeof(err));
    CHECK_CONTAINS(err, "AWS credentials: container: AWS_CONTAINER_CREDENTIALS_FULL_URI is "
                        "neither https nor http to the loopback");
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1:9/creds", 1);
    setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "abc\r\nX-Injected: 1", 1);
    expect_none(NULL, err, sizeof(err));
    CHECK_STR(err, "AWS credentials: container: the container authorization token holds a "
                   "line break (from AWS_CONTAINER_AUTHORIZATION_TOKEN)");
    setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "/nonexistent/ecs-token", 1);
    expect_none(NULL, err, sizeof(err));
    CHECK_STR(err, "AWS credentials: container: AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE "
                   "/nonexistent/ecs-token: No such file or directory");
}

static void *
hammer(void *arg)
{
    struct creds_chain *chain = arg;
    long bad = 0;

    for (int i = 0; i < 200; i++) {
        struct creds c;
        char err[256];
        if (creds_get(chain, &c, err, sizeof(err)) != 0 || c.access_key_id == NULL ||
            strcmp(c.access_key_id, "AKIDTHREAD") != 0) {
            bad++;
        }
        creds_clear(&c);
    }
    return (void *) bad;
}

/* Many threads on a fresh chain at once: each gets whole credentials,
 * the ones the single first resolution found. */
static void
test_threads(void)
{
    pthread_t t[4];

    reset_env();
    setenv("AWS_ACCESS_KEY_ID", "AKIDTHREAD", 1);
    setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
    set_expiration_in(3600);
    struct creds_chain *chain = creds_chain_new(NULL);
    for (int i = 0; i < 4; i++) {
        CHECK_INT(pthread_create(&t[i], NULL, hammer, chain), 0);
    }
    for (int i = 0; i < 4; i++) {
        void *bad = NULL;
        pthread_join(t[i], &bad);
        CHECK_INT((long) bad, 0);
    }
    creds_chain_free(chain);
}

static void
test_copy_clear(void)
{
    struct creds a, b;

    CHECK_INT(creds_set(&a, "AKID", SECRET, "tok", 42, "a-provider-name-longer-than-32-bytes"), 0);
    CHECK_STR(a.provider, "a-provider-name-longer-than-32-");
    CHECK_INT(creds_copy(&b, &a), 0);
    CHECK(b.secret_access_key != a.secret_access_key);
    CHECK_STR(b.secret_access_key, SECRET);
    CHECK_STR(b.session_token, "tok");
    CHECK_INT(b.expiration, 42);
    creds_clear(&a);
    CHECK(a.access_key_id == NULL && a.secret_access_key == NULL && a.session_token == NULL);
    CHECK_INT(a.expiration, 0);
    CHECK_STR(b.access_key_id, "AKID");
    creds_clear(&b);
}

static int
remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void) st;
    (void) flag;
    (void) ftw;
    return remove(path);
}

static void
remove_tree(const char *dir)
{
    CHECK_INT(nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
}

/* ---- assume-role and SSO profiles: what is refused before any STS call ---- */

/* The chain's error for profile with this config file and a credentials
 * file whose [base] has no keys. */
static const char *
refusal(const char *profile, const char *config)
{
    static char err[1024];
    err[0] = '\0';
    reset_env();
    setenv("AWS_CONFIG_FILE", write_file("assume", config), 1);
    setenv("AWS_SHARED_CREDENTIALS_FILE", write_file("assume-cred", "[base]\n"), 1);
    setenv("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:9", 1); /* never reached */
    expect_none(profile, err, sizeof(err));
    return err;
}

static void
expect_refusal(const char *profile, const char *config, const char *want)
{
    CHECK_STR(refusal(profile, config), want);
}

static void
test_assume_role_refusals(void)
{
    const char *arn = "role_arn = arn:aws:iam::123456789012:role/r\n";
    char conf[1024];

    /* a loop of source profiles ends, named, instead of looping */
    snprintf(conf, sizeof(conf),
             "[profile a]\n%ssource_profile = b\n[profile b]\n%ssource_profile = c\n"
             "[profile c]\n%ssource_profile = a\n",
             arn, arn, arn);
    expect_refusal("a", conf,
                   "AWS credentials: profile a: source_profile loops: a -> b -> c -> a");
    /* a profile that is its own source signs with its own keys: it has none */
    snprintf(conf, sizeof(conf), "[profile a]\n%ssource_profile = a\n", arn);
    CHECK_CONTAINS(refusal("a", conf), "AWS credentials: profile a: source profile a: ");
    CHECK_CONTAINS(refusal("a", conf), "[profile a] has no aws_access_key_id");
    snprintf(conf, sizeof(conf), "[profile a]\n%ssource_profile = base\nmfa_serial = x\n", arn);
    expect_refusal("a", conf,
                   "AWS credentials: profile a: [profile a] has mfa_serial: twice runs "
                   "unattended and cannot ask for an MFA code; use a role that does not require "
                   "MFA, or credential_process");
    snprintf(conf, sizeof(conf), "[profile a]\n%ssource_profile = base\nduration_seconds = 60\n",
             arn);
    expect_refusal("a", conf,
                   "AWS credentials: profile a: [profile a]: duration_seconds must be 900-43200 "
                   "seconds, not \"60\"");
    snprintf(conf, sizeof(conf), "[profile a]\n%scredential_source = Ec2\n", arn);
    expect_refusal("a", conf,
                   "AWS credentials: profile a: [profile a]: credential_source must be "
                   "Environment, Ec2InstanceMetadata or EcsContainer, not \"Ec2\"");
    snprintf(conf, sizeof(conf),
             "[profile a]\n%scredential_source = Environment\nsource_profile = base\n", arn);
    expect_refusal("a", conf,
                   "AWS credentials: profile a: [profile a] sets both source_profile and "
                   "credential_source");
    snprintf(conf, sizeof(conf), "[profile a]\n%scredential_source = Environment\n", arn);
    expect_refusal("a", conf,
                   "AWS credentials: profile a: credential_source Environment: AWS_ACCESS_KEY_ID "
                   "not set");
    /* the source has no keys: said, with what each file lacks */
    snprintf(conf, sizeof(conf), "[profile a]\n%ssource_profile = base\n", arn);
    CHECK_CONTAINS(refusal("a", conf), "AWS credentials: profile a: source profile base: ");
    CHECK_CONTAINS(refusal("a", conf), "[base] has no aws_access_key_id");
    /* SSO: refused with the way around, not "has no aws_access_key_id" */
    expect_refusal("dev",
                   "[profile dev]\nsso_session = corp\nsso_account_id = 1\n"
                   "sso_role_name = R\n[sso-session corp]\nsso_start_url = https://x\n",
                   "AWS credentials: profile dev: [profile dev] is an IAM Identity Center (SSO) "
                   "profile, which twice does not read: give twice a profile with "
                   "credential_process = aws configure export-credentials --profile dev "
                   "--format process");
    /* a role_arn alone says what it lacks; the chain goes on */
    snprintf(conf, sizeof(conf), "[profile a]\n%s", arn);
    reset_env();
    setenv("AWS_CONFIG_FILE", write_file("assume", conf), 1);
    char err[1024] = "";
    expect_none("a", err, sizeof(err));
    CHECK_CONTAINS(err, "[profile a] has no aws_access_key_id (its role_arn needs source_profile "
                        "or credential_source)");
    /* With credential_source = Environment, the keys in the environment are
     * the role's source, not the identity: env defers to the profile. */
    snprintf(conf, sizeof(conf), "[profile a]\n%scredential_source = Environment\n", arn);
    reset_env();
    setenv("AWS_CONFIG_FILE", write_file("assume", conf), 1);
    setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
    setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
    setenv("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:9", 1);
    expect_none("a", err, sizeof(err));
    CHECK_CONTAINS(err, "AWS credentials: profile a: [profile a] role arn:aws:iam::123456789012:"
                        "role/r: STS http://127.0.0.1:9: CouldNotConnect");
    CHECK(strstr(err, SECRET) == NULL);
    expect_creds("other", "AKIDENV", SECRET, NULL, "env");
    setenv("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:9/?Action=x", 1); /* never reached */
    expect_none("a", err, sizeof(err));
    CHECK_CONTAINS(err, "AWS credentials: profile a: AWS_ENDPOINT_URL_STS: not a usable STS "
                        "endpoint URL: ");
    setenv("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:9", 1);
    /* STS's region, when the chain has none, is checked where it is read and
     * named by its source: it went into the STS URL and the signature as it
     * was, an opaque failure */
    setenv("AWS_REGION", "us east 1", 1);
    expect_none("a", err, sizeof(err));
    CHECK_CONTAINS(err, "AWS credentials: profile a: AWS_REGION=us east 1: not a region name "
                        "(lowercase letters, digits and '-', like us-east-1)");
    unsetenv("AWS_REGION");
    snprintf(conf, sizeof(conf),
             "[profile a]\n%scredential_source = Environment\nregion = Frankfurt\n", arn);
    write_file("assume", conf);
    expect_none("a", err, sizeof(err));
    CHECK_CONTAINS(err, "AWS credentials: profile a: profile a's region=Frankfurt: not a region "
                        "name (lowercase letters, digits and '-', like us-east-1)");
}

/* A credentials or token file that is a named pipe nobody writes to: open()
 * waited for a writer for ever, and the worker refreshing its credentials
 * with it. It now reads as empty at once (alarm: a hang fails the test). */
static void
test_fifo_is_not_waited_for(void)
{
    char path[300];
    snprintf(path, sizeof(path), "%s/fifo", tmpdir);
    CHECK_INT(mkfifo(path, 0600), 0);
    alarm(10);
    struct awsconfig_section *sec = NULL;
    CHECK_INT(awsconfig_read_profile(path, AWSCONFIG_CREDENTIALS, "default", &sec),
              AWSCONFIG_NO_SECTION);
    awsconfig_section_free(sec);
    char *token = creds_read_token_file(path, 4096);
    CHECK(token != NULL && token[0] == '\0');
    free(token);
    alarm(0);
    unlink(path);
}

int
main(void)
{
    if (mkdtemp(tmpdir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(empty_home, sizeof(empty_home), "%s/empty", tmpdir);
    mkdir(empty_home, 0700);
    save_env();
    test_env();
    test_env_beats_files();
    test_partial_env_error();
    test_credentials_file();
    test_config_file();
    test_credentials_file_wins();
    test_missing_profile();
    test_home_files();
    test_ini_syntax();
    test_profile_value();
    test_expiration();
    test_cache();
    test_credential_process_order();
    test_configured_source_fails();
    test_assume_role_refusals();
    test_threads();
    test_copy_clear();
    test_fifo_is_not_waited_for();
    restore_env();
    remove_tree(tmpdir);
    return check_done("test-creds");
}
