/*
 * test-creds-refresh.c - the chain's refresh thread, driven through a
 * credential_process script that hands out numbered credentials with a
 * chosen lifetime (and can be told to be slow or to fail): the first
 * resolution is shared by concurrent callers, refreshes happen ahead of
 * the expiration without ever blocking creds_get, a failing refresh keeps
 * the cached credentials until they expire, and freeing the chain cuts a
 * slow refresh short. Takes about half a minute.
 */
#include "check.h"

#include "creds.h"

#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char dir[] = "/tmp/twice-test-refresh-XXXXXX";

/* count: runs so far; sleep: seconds each run takes; fail: exit 1; life:
 * the credentials' lifetime in seconds. */
static const char script[] =
    "d=$1\n"
    "n=$(( $(cat \"$d/count\" 2>/dev/null || echo 0) + 1 ))\n"
    "echo $n > \"$d/count\"\n"
    "[ -f \"$d/sleep\" ] && sleep \"$(cat \"$d/sleep\")\"\n"
    "[ -f \"$d/fail\" ] && exit 1\n"
    "exp=$(date -u -d \"@$(( $(date +%s) + $(cat \"$d/life\") ))\" +%Y-%m-%dT%H:%M:%SZ)\n"
    "printf '{\"Version\": 1, \"AccessKeyId\": \"AKID%d\", \"SecretAccessKey\": \"s\", "
    "\"SessionToken\": \"t\", \"Expiration\": \"%s\"}' \"$n\" \"$exp\"\n";

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static void
put(const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f != NULL) {
        fputs(text, f);
        fclose(f);
    }
}

static void
drop(const char *name)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    unlink(path);
}

static int
runs(void)
{
    char path[256];
    int n = 0;
    snprintf(path, sizeof(path), "%s/count", dir);
    FILE *f = fopen(path, "r");
    if (f != NULL) {
        if (fscanf(f, "%d", &n) != 1) {
            n = 0;
        }
        fclose(f);
    }
    return n;
}

/* A fresh state: no runs yet, the given lifetime, quick and succeeding. */
static void
reset(const char *life)
{
    drop("count");
    drop("sleep");
    drop("fail");
    put("life", life);
}

/* creds_get's key id into akid (64 bytes; "" on failure); returns its
 * latency in seconds. */
static double
timed_get(struct creds_chain *chain, char *akid, char *err, size_t errlen)
{
    struct creds c;
    double t = now_s();
    int rc = creds_get(chain, &c, err, errlen);
    t = now_s() - t;
    snprintf(akid, 64, "%s", rc == 0 ? c.access_key_id : "");
    creds_clear(&c);
    return t;
}

static void *
first_get(void *arg)
{
    char akid[64], err[512];
    timed_get(arg, akid, err, sizeof(err));
    return (void *) (long) (strcmp(akid, "AKID1") == 0);
}

/* Nothing cached yet: callers wait for the one first resolution. */
static void
test_first_resolution_is_shared(void)
{
    pthread_t t[4];
    double start = now_s();

    reset("3600");
    put("sleep", "0.3");
    struct creds_chain *chain = creds_chain_new(NULL);
    for (int i = 0; i < 4; i++) {
        pthread_create(&t[i], NULL, first_get, chain);
    }
    for (int i = 0; i < 4; i++) {
        void *ok = NULL;
        pthread_join(t[i], &ok);
        CHECK(ok != NULL);
    }
    CHECK(now_s() - start >= 0.3);
    CHECK_INT(runs(), 1);
    creds_chain_free(chain);
}

/* 24 s credentials are refreshed 20 s ahead; the refresh takes a second,
 * and creds_get keeps answering at once with the old ones meanwhile. */
static void
test_refresh_ahead_never_blocks(void)
{
    char akid[64], err[512];
    double worst = 0, start, switched = 0;

    reset("24");
    struct creds_chain *chain = creds_chain_new(NULL);
    timed_get(chain, akid, err, sizeof(err));
    start = now_s();
    CHECK_STR(akid, "AKID1");
    put("sleep", "1");
    while (now_s() - start < 7) {
        double t = timed_get(chain, akid, err, sizeof(err));
        worst = t > worst ? t : worst;
        if (switched == 0 && strcmp(akid, "AKID2") == 0) {
            switched = now_s() - start;
        }
        CHECK(strcmp(akid, "AKID1") == 0 || strcmp(akid, "AKID2") == 0);
        usleep(20000);
    }
    printf("refreshed after %.1f s; slowest creds_get %.3f s\n", switched, worst);
    CHECK(switched >= 3.5 && switched < 6.5); /* the script's clock has whole seconds */
    CHECK(worst < 0.2);
    CHECK_INT(runs(), 2);
    creds_chain_free(chain);
}

/* The refresh fails: the cached credentials serve until they expire
 * (10 s before their Expiration), retried with backoff meanwhile; then
 * the latest failure is the answer, at once. */
static void
test_failing_refresh_keeps_valid_creds(void)
{
    char akid[64], err[512];
    double start;
    long bad = 0;

    reset("24");
    struct creds_chain *chain = creds_chain_new(NULL);
    timed_get(chain, akid, err, sizeof(err));
    start = now_s();
    put("fail", "");
    while (now_s() - start < 12.5) {
        timed_get(chain, akid, err, sizeof(err));
        bad += strcmp(akid, "AKID1") != 0;
        usleep(50000);
    }
    CHECK_INT(bad, 0);
    CHECK(runs() >= 3); /* the first, then at least two retries */
    sleep(3);
    double t = timed_get(chain, akid, err, sizeof(err));
    CHECK_STR(akid, "");
    CHECK_CONTAINS(err, "profile default: credential_process exited with status 1");
    CHECK(t < 0.1);
    creds_chain_free(chain);
}

/* Freeing the chain while a refresh runs kills the slow process. */
static void
test_free_cuts_a_refresh_short(void)
{
    char akid[64], err[512];
    double start;

    reset("22");
    struct creds_chain *chain = creds_chain_new(NULL);
    timed_get(chain, akid, err, sizeof(err));
    CHECK_STR(akid, "AKID1");
    put("sleep", "30");
    start = now_s();
    while (runs() < 2 && now_s() - start < 10) {
        usleep(50000);
    }
    CHECK_INT(runs(), 2);
    start = now_s();
    creds_chain_free(chain);
    CHECK(now_s() - start < 1.5);
}

static int
remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void) st;
    (void) flag;
    (void) ftw;
    return remove(path);
}

int
main(void)
{
    char conf[512], path[256];

    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    put("creds.sh", script);
    snprintf(conf, sizeof(conf), "[default]\ncredential_process = /bin/sh %s/creds.sh %s\n", dir,
             dir);
    put("config", conf);
    snprintf(path, sizeof(path), "%s/config", dir);
    setenv("AWS_CONFIG_FILE", path, 1);
    snprintf(path, sizeof(path), "%s/none", dir);
    setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
    setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
    unsetenv("AWS_PROFILE");
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_WEB_IDENTITY_TOKEN_FILE");
    unsetenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
    unsetenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    test_first_resolution_is_shared();
    test_refresh_ahead_never_blocks();
    test_failing_refresh_keeps_valid_creds();
    test_free_cuts_a_refresh_short();
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return check_done("test-creds-refresh");
}
