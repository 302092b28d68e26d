/*
 * fuzz-config.c - libFuzzer target: the configuration loader (config_load)
 * on arbitrary bytes written to a file, as `twiced -t` reads one. Not for
 * plugin settings checks (the loader does those in a child) or for
 * libconfig's @include, which would read files of this machine: inputs with
 * it are skipped.
 *
 * Promises checked: a refused file has at least one problem, each reading
 * "FILE:..." on one line (no control byte), but for the last line that
 * counts problems not shown; a file with a NUL byte is refused for it
 * alone; an accepted one holds what the daemon relies on: every queue has a
 * name, url and dlq_url, exactly one of plugin and routes, only configured
 * plugins, values in range.
 */
#include "fuzz.h"

#include "config.h"
#include "diag.h"

#include <stdlib.h>
#include <unistd.h>

static char dir[256];
static char file[300];
static char plugin[300];

static void
remove_dir(void)
{
    unlink(plugin);
    rmdir(dir);
}

/* A directory of our own for the file name, so that relative paths name
 * nothing of this machine's; with one empty file, plugin.so, so that seeds
 * saying plugin_dir = "." can name a plugin that exists. libFuzzer ends a
 * timed run with _Exit, past atexit: scripts/fuzz.sh hands us a directory in
 * its own work area instead (TWICE_FUZZ_CONFIG_DIR), which it removes. */
int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *given = getenv("TWICE_FUZZ_CONFIG_DIR");

    (void) argc;
    (void) argv;
    if (given != NULL && given[0] != '\0') {
        snprintf(dir, sizeof(dir), "%s", given);
    } else {
        snprintf(dir, sizeof(dir), "%s", "/tmp/twice-fuzz-config.XXXXXX");
        if (mkdtemp(dir) == NULL) {
            perror("fuzz-config: mkdtemp");
            exit(1);
        }
        atexit(remove_dir);
    }
    snprintf(file, sizeof(file), "%s/twice.conf", dir);
    snprintf(plugin, sizeof(plugin), "%s/plugin.so", dir);
    FILE *fp = fopen(plugin, "w");
    if (fp == NULL) {
        perror("fuzz-config: plugin.so");
        exit(1);
    }
    fclose(fp);
    return 0;
}

/* Whether libconfig would see an @include directive: "@include" first on a
 * line but for blanks (its scanner's rule). Comments may mention it. */
static int
has_include(const char *text)
{
    for (const char *p = strstr(text, "@include"); p != NULL; p = strstr(p + 1, "@include")) {
        const char *q = p;
        while (q > text && (q[-1] == ' ' || q[-1] == '\t')) {
            q--;
        }
        if (q == text || q[-1] == '\n') {
            return 1;
        }
    }
    return 0;
}

static void
check_queue(const struct config *c, const struct config_queue *q)
{
    FUZZ_ASSERT(q->name != NULL && q->url != NULL && q->dlq_url != NULL);
    FUZZ_ASSERT(strcmp(q->url, q->dlq_url) != 0);
    FUZZ_ASSERT((q->plugin != NULL) != (q->route_by != NULL));
    FUZZ_ASSERT(q->plugin == NULL || config_find_plugin(c, q->plugin) != NULL);
    FUZZ_ASSERT(q->route_by == NULL || q->nroutes > 0);
    for (size_t i = 0; i < q->nroutes; i++) {
        FUZZ_ASSERT(q->routes[i].value != NULL && q->routes[i].plugin != NULL);
        FUZZ_ASSERT(config_find_plugin(c, q->routes[i].plugin) != NULL);
    }
    FUZZ_ASSERT(q->batch_size >= 1 && q->batch_size <= 10);
    FUZZ_ASSERT(q->wait_time >= 0 && q->wait_time <= 20);
    FUZZ_ASSERT(q->concurrency >= 1 && q->max_attempts >= 1);
    FUZZ_ASSERT(q->backoff_cap >= q->backoff_base);
    FUZZ_ASSERT(config_find_queue(c, q->name) == q);
}

/* Whether the input starts with a UTF-8 or UTF-16 byte order mark. */
static int
starts_with_bom(const uint8_t *data, size_t size)
{
    return (size >= 3 && data[0] == 0xef && data[1] == 0xbb && data[2] == 0xbf) ||
           (size >= 2 &&
            ((data[0] == 0xff && data[1] == 0xfe) || (data[0] == 0xfe && data[1] == 0xff)));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct diag d = DIAG_INIT;
    struct config *c = NULL;

    if (file[0] == '\0') {
        LLVMFuzzerInitialize(NULL, NULL);
    }
    char *text = strndup((const char *) data, size);
    int nul = memchr(data, '\0', size) != NULL;
    if (text == NULL || (!nul && has_include(text))) {
        free(text);
        return 0;
    }
    FILE *fp = fopen(file, "w");
    FUZZ_ASSERT(fp != NULL && fwrite(data, 1, size, fp) == size && fclose(fp) == 0);
    if (config_load(file, NULL, &c, &d) == 0) {
        FUZZ_ASSERT(!nul);
        FUZZ_ASSERT(c != NULL && d.n == 0);
        FUZZ_ASSERT(strcmp(c->file, file) == 0 && c->nqueues >= 1);
        for (size_t i = 0; i < c->nqueues; i++) {
            check_queue(c, &c->queues[i]);
        }
        for (size_t i = 0; i < c->nplugins; i++) {
            FUZZ_ASSERT(c->plugins[i].name != NULL && c->plugins[i].path != NULL);
            FUZZ_ASSERT(config_find_plugin(c, c->plugins[i].name) == &c->plugins[i]);
        }
        config_free(c);
    } else {
        FUZZ_ASSERT(c == NULL && d.n > 0);
        /* A NUL is named, unless a byte order mark comes first: UTF-16's
         * NULs are its encoding, which the BOM's line names instead. */
        FUZZ_ASSERT(!nul || (d.n == 1 && strstr(d.lines[0], starts_with_bom(data, size)
                                                                ? "byte order mark"
                                                                : ": a NUL byte: ") != NULL));
        for (size_t i = 0; i < d.n; i++) {
            if (d.more > 0 && i + 1 == d.n) {
                FUZZ_ASSERT(strncmp(d.lines[i], "... ", 4) == 0);
                continue;
            }
            FUZZ_ASSERT(strncmp(d.lines[i], file, strlen(file)) == 0);
            FUZZ_ASSERT(d.lines[i][strlen(file)] == ':');
            FUZZ_ASSERT(!fuzz_has_control(d.lines[i], strlen(d.lines[i]), ""));
        }
    }
    diag_free(&d);
    free(text);
    return 0;
}
