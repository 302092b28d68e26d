/*
 * probe_child.c - the probe child (twiced-worker --probe; see probe.h and
 * probe.c for the parent's side): it loads each plugin (ABI, entry point,
 * key template), checks its settings against its declaration (a key
 * setting's template too) and that every queue using it has a key, runs
 * init with them and fini, and prints one line per problem. It never runs
 * a job. When every plugin passed, it runs the check of the store or SQS
 * the parent asked for (probe_check_fn: the daemon's is duty/oneshot.c).
 */
#include "probe.h"

#include "buf.h"
#include "childargs.h"
#include "cnum.h"
#include "config.h"
#include "hostapi.h"
#include "instance.h"
#include "keying.h"
#include "log.h"
#include "proctitle.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Progress lines start with '#' ("#plugin NAME LINE FILE": names have no
 * spaces): the parent uses them to name a plugin that crashed the probe, at
 * its entry's FILE:LINE; every other line is a problem. The report goes to
 * out, never to stdout, which the plugin's own output may use. */
static int
check_plugin(const struct config *c, const struct config_plugin *cp, int fd, FILE *out)
{
    struct plugin_instance p;
    char err[1024];
    const char *file = cp->file != NULL ? cp->file : c->file; /* maybe an @include'd one */
    memset(&p, 0, sizeof(p));
    p.cfg = cp;
    p.name = cp->name;
    if (fd < 0) {
        return 0; /* the master could not open it and has said why */
    }
    fprintf(out, "#plugin %s %d %s\n", cp->name, cp->line, file);
    fflush(out);
    if (loader_open_fd(cp->path, fd, &p.lp, NULL, err, sizeof(err)) != 0) {
        fprintf(out, "%s:%d: plugin '%s': %s\n", file, cp->line, cp->name, err);
        return 1;
    }
    struct diag d = DIAG_INIT;
    int problems = loader_check_settings(&p.lp, cp, c->file, &d);
    if (problems == 0) {
        problems = keying_check_queues(c, cp->name, &p.lp, &d);
    }
    for (size_t i = 0; i < d.n; i++) {
        fprintf(out, "%s\n", d.lines[i]);
    }
    diag_free(&d);
    if (problems == 0) {
        if (hostapi_init(&p, c->file, err, sizeof(err)) != 0) {
            fprintf(out, "%s\n", err);
            problems = 1;
        } else {
            hostapi_fini(&p);
        }
    }
    loader_release(&p.lp);
    return problems;
}

/* The stream of the report: the pipe the parent reads, moved off stdout,
 * whose descriptor becomes stderr. A plugin that prints (a banner, a debug
 * printf, a library's chatter) then writes beside its log lines instead of
 * into the report, where each line would be a problem; and a process its
 * init() starts does not inherit the pipe and hold the parent's read open.
 * NULL when the descriptors cannot be moved (stdout is kept then). */
static FILE *
report_stream(void)
{
    fflush(stdout);
    int fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    if (fd < 0) {
        return NULL;
    }
    FILE *f = fdopen(fd, "w");
    if (f == NULL) {
        close(fd);
        return NULL;
    }
    if (dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
        fclose(f);
        return NULL;
    }
    return f;
}

/* The request of a check (a memfd the master wrote; fd -1: none) read into
 * *req before any plugin runs: a plugin that closes descriptors it does not
 * own cannot take it away. 0 (NULL without one), or -1. */
static int
read_check(int fd, char **req, size_t *len)
{
    struct buf b = BUF_INIT;
    char chunk[4096];
    ssize_t n;
    *req = NULL;
    *len = 0;
    if (fd < 0) {
        return 0;
    }
    while ((n = pread(fd, chunk, sizeof(chunk), (off_t) b.len)) > 0 || (n < 0 && errno == EINTR)) {
        buf_append(&b, chunk, n > 0 ? (size_t) n : 0);
    }
    close(fd);
    if (n < 0 || b.failed) {
        buf_free_wipe(&b);
        return -1;
    }
    *len = b.len;
    *req = buf_steal(&b);
    return *req != NULL ? 0 : -1;
}

/* Free a check's request, wiped first: a reload's holds the running dsn. */
static void
free_check(char *req, size_t len)
{
    if (req != NULL) {
        explicit_bzero(req, len);
    }
    free(req);
}

/* Run the check of req once the plugins passed (problems 0, every file
 * opened): PROBE_CHECK_LINE, then its lines. 1 when it refuses. */
static int
run_check(const struct config *c, const struct childargs *a, int problems, probe_check_fn check,
          const char *req, size_t len, FILE *out)
{
    for (size_t i = 0; i < a->nplugin_fds; i++) {
        problems += a->plugin_fds[i] < 0;
    }
    if (req == NULL || check == NULL || problems > 0) {
        return 0;
    }
    fprintf(out, PROBE_CHECK_LINE "\n");
    fflush(out);
    int refused = check(c, req, len, out);
    fflush(out);
    return refused;
}

int
probe_main(int argc, char **argv, probe_check_fn check)
{
    struct childargs a;
    char err[1024];
    log_set_role("probe");
    FILE *report = report_stream();
    FILE *out = report != NULL ? report : stdout;
    if (childargs_parse(argc, argv, &a, err, sizeof(err)) != 0) {
        fprintf(out, "probe: %s\n", err);
        fflush(out);
        return 2;
    }
    proctitle_set("twiced: probe");
    char *req = NULL;
    size_t req_len = 0;
    if (read_check(a.check_fd, &req, &req_len) != 0) {
        fprintf(out, "probe: cannot read the request of the store check: %s\n",
                cnum_strerror(errno));
        fflush(out);
        childargs_release(&a);
        return 2;
    }
    struct config *c = NULL;
    if (childargs_load_config(&a, &c, err, sizeof(err)) != 0) {
        fprintf(out, "%s\n", err);
        fflush(out);
        free_check(req, req_len);
        childargs_release(&a);
        return 1;
    }
    int problems = 0, refused = 0;
    if (a.nplugin_fds != c->nplugins) {
        fprintf(out, "probe: %zu plugin files for %zu plugins\n", a.nplugin_fds, c->nplugins);
        problems = 1;
    } else {
        for (size_t i = 0; i < c->nplugins; i++) {
            problems += check_plugin(c, &c->plugins[i], a.plugin_fds[i], out);
        }
        fflush(out);
        refused = run_check(c, &a, problems, check, req, req_len, out);
    }
    fflush(out);
    fflush(stdout);
    free_check(req, req_len);
    config_free(c);
    childargs_release(&a);
    return problems > 0 ? 1 : refused ? PROBE_EXIT_REFUSED : 0;
}
