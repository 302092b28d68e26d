/*
 * generation.c - making a generation from a configuration file (see
 * generation.h): the one place that decides what a generation runs, so that
 * a reload, a respawn and `twiced -t` check and load the same things.
 */
#include "generation.h"

#include "childargs.h"
#include "cnum.h"
#include "config.h"
#include "diag.h"
#include "jobnames.h"
#include "loader.h"
#include "probe.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROBE_MIN_S 5 /* seconds a plugin check gets, however short ready_timeout is */

void
gen_free(struct generation *g)
{
    if (g == NULL) {
        return;
    }
    jobnames_drop(g->names);
    config_free(g->cfg);
    if (g->text != NULL) {
        explicit_bzero(g->text, g->len);
    }
    free(g->text);
    if (g->config_fd >= 0) {
        close(g->config_fd);
    }
    for (size_t i = 0; i < g->nplugin_fds; i++) {
        if (g->plugin_fds[i] >= 0) {
            close(g->plugin_fds[i]);
        }
    }
    free(g->plugin_fds);
    free(g->stamps);
    free(g->failures);
    free(g->respawn_at);
    free(g);
}

/* fd's size and modification time; 0, or -1 when it cannot be read. */
static int
stamp_of(int fd, struct gen_stamp *out)
{
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        return -1;
    }
    out->size = (long long) st.st_size;
    out->mtime_ns = (long long) st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    return 0;
}

int
gen_next_written(struct generation *g)
{
    for (size_t i = 0; g->stamps != NULL && i < g->nplugin_fds; i++) {
        struct gen_stamp now;
        if (g->stamps[i].written || stamp_of(g->plugin_fds[i], &now) != 0) {
            continue;
        }
        if (now.size != g->stamps[i].size || now.mtime_ns != g->stamps[i].mtime_ns) {
            g->stamps[i].written = 1;
            return (int) i;
        }
    }
    return -1;
}

int
gen_any_written(const struct generation *g)
{
    for (size_t i = 0; g->stamps != NULL && i < g->nplugin_fds; i++) {
        if (g->stamps[i].written) {
            return 1;
        }
    }
    return 0;
}

/* Check and open the plugin files of g's configuration (a file that cannot be
 * opened keeps -1; the probe skips it). Problems are added to d; 0 when none. */
static int
gen_open_plugins(struct generation *g, struct diag *d)
{
    const struct config *c = g->cfg;
    size_t before = d->n;
    g->plugin_fds = calloc(c->nplugins ? c->nplugins : 1, sizeof(*g->plugin_fds));
    if (g->plugin_fds == NULL) {
        diag_add(d, c->file, 0, "out of memory");
        return -1;
    }
    g->nplugin_fds = c->nplugins;
    g->stamps = calloc(c->nplugins ? c->nplugins : 1, sizeof(*g->stamps));
    if (g->stamps == NULL) {
        diag_add(d, c->file, 0, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < c->nplugins; i++) {
        const struct config_plugin *cp = &c->plugins[i];
        char err[1024];
        g->plugin_fds[i] = -1;
        if (loader_file_open(cp->path, &g->plugin_fds[i], err, sizeof(err)) != 0) {
            diag_add(d, cp->file != NULL ? cp->file : c->file, cp->line, "plugin '%s': %s",
                     cp->name, err);
        } else {
            stamp_of(g->plugin_fds[i], &g->stamps[i]); /* before the probe checks it */
        }
    }
    return d->n == before ? 0 : -1;
}

struct generation *
gen_read(const char *path, struct diag *d)
{
    struct generation *g = calloc(1, sizeof(*g));
    if (g == NULL) {
        diag_add(d, path, 0, "out of memory");
        return NULL;
    }
    g->config_fd = -1;
    if (config_text_read_file(path, &g->text, &g->len, d) != 0 ||
        config_load(path, g->text, &g->cfg, d) != 0) {
        gen_free(g);
        return NULL;
    }
    g->unopened = gen_open_plugins(g, d) != 0;
    return g;
}

int
gen_probe(struct generation *g, const char *path, struct probe_check *check,
          const sigset_t *stop_on, struct diag *d)
{
    /* Each plugin's check runs its init(): it gets what a worker's init()
     * gets, ready_timeout, but at least PROBE_MIN_S (the check also starts a
     * process and loads the plugin). */
    int limit = g->cfg->ready_timeout > PROBE_MIN_S ? g->cfg->ready_timeout : PROBE_MIN_S;
    int rc =
        probe_run(path, g->text, g->len, g->plugin_fds, g->nplugin_fds, limit, check, stop_on, d);
    if (rc != 0 || g->unopened) {
        return rc > 0 ? 1 : -1;
    }
    g->nworkers = g->cfg->workers;
    g->failures = calloc((size_t) g->nworkers, sizeof(*g->failures));
    g->respawn_at = calloc((size_t) g->nworkers, sizeof(*g->respawn_at));
    g->config_fd = childargs_memfd(g->text, g->len);
    g->names = jobnames_new(g->cfg); /* NULL: deaths are named without them */
    if (g->failures == NULL || g->respawn_at == NULL || g->config_fd < 0) {
        diag_add(d, path, 0, "cannot prepare the workers: %s", cnum_strerror(errno));
        return -1;
    }
    return 0;
}
