/*
 * leanmaster.c - the resident memory of a master that maps no libcurl, libpq or
 * OpenSSL (issue 19's memory question; bench/README.md, "Memory").
 *
 * twiced's master is 12.5 MB at the bench's peak, 11 MB of it what libcurl, libpq,
 * OpenSSL and the libraries they bring cost any process that loads and uses them.
 * This program is the floor of a master that kept only what needs no database and no
 * SQS: libconfig, libmicrohttpd serving one answer, jansson, a 92 MB shared region of
 * which 48 kB are touched (as twiced's is), and three idle threads. It prints its
 * VmRSS, RssAnon and RssFile after a second. Not run by run.sh:
 *
 *     build-bench/bench/leanmaster etc/twice.conf
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#include <jansson.h>
#include <libconfig.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define REGION_SIZE    ((size_t) 92 << 20)
#define REGION_TOUCHED ((size_t) 48 << 10)

static enum MHD_Result
answer(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
       const char *version, const char *data, size_t *size, void **state)
{
    (void) cls, (void) url, (void) method, (void) version, (void) data, (void) size, (void) state;
    struct MHD_Response *r = MHD_create_response_from_buffer(2, "ok", MHD_RESPMEM_PERSISTENT);
    enum MHD_Result rc = MHD_queue_response(conn, 200, r);
    MHD_destroy_response(r);
    return rc;
}

/* A thread that touches a little of its stack and sleeps, as the master's do. */
static void *
idle(void *arg)
{
    char buf[16384];
    (void) arg;
    memset(buf, 1, sizeof buf);
    sleep(1000);
    return NULL;
}

static void
print_rss(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    if (f == NULL) {
        perror("leanmaster: /proc/self/status");
        return;
    }
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "VmRSS", 5) == 0 || strncmp(line, "RssAnon", 7) == 0 ||
            strncmp(line, "RssFile", 7) == 0) {
            fputs(line, stdout);
        }
    }
    fclose(f);
}

int
main(int argc, char **argv)
{
    config_t cfg;
    config_init(&cfg);
    if (argc > 1 && config_read_file(&cfg, argv[1]) != CONFIG_TRUE) {
        fprintf(stderr, "leanmaster: %s:%d: %s\n", argv[1], config_error_line(&cfg),
                config_error_text(&cfg));
    }
    json_t *j = json_pack("{s:i}", "messages", 1);
    free(json_dumps(j, 0));
    json_decref(j);
    struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, answer,
                                            NULL, MHD_OPTION_END);
    int fd = memfd_create("leanmaster-shm", 0);
    if (d == NULL || fd < 0 || ftruncate(fd, (off_t) REGION_SIZE) != 0) {
        perror("leanmaster: set-up");
        return 1;
    }
    char *region = mmap(NULL, REGION_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (region == MAP_FAILED) {
        perror("leanmaster: mmap");
        return 1;
    }
    memset(region, 0, REGION_TOUCHED);
    pthread_t threads[3];
    for (int i = 0; i < 3; i++) {
        if (pthread_create(&threads[i], NULL, idle, NULL) != 0) {
            fprintf(stderr, "leanmaster: pthread_create failed\n");
            return 1;
        }
    }
    sleep(1);
    print_rss();
    MHD_stop_daemon(d);
    config_destroy(&cfg);
    return 0;
}
