/*
 * generation.c - making a generation from a configuration file (see
 * generation.h): the one place that decides what a generation runs, so that
 * a reload, a respawn and `twiced -t` check and load the same things.
 */
#include "generation.h"

#include "childargs.h"
#include "config.h"
#include "diag.h"
#include "loader.h"
#include "probe.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROBE_TIMEOUT 60 /* seconds a plugin check may take */

void
gen_free(struct generation *g)
{
    if (g == NULL) {
        return;
    }
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
    free(g->failures);
    free(g->respawn_at);
    free(g);
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
    for (size_t i = 0; i < c->nplugins; i++) {
        const struct config_plugin *cp = &c->plugins[i];
        char err[1024];
        if (loader_file_open(cp->path, &g->plugin_fds[i], err, sizeof(err)) != 0) {
            diag_add(d, cp->file != NULL ? cp->file : c->file, cp->line, "plugin '%s': %s",
                     cp->name, err);
        }
    }
    return d->n == before ? 0 : -1;
}

/* Read and validate a configuration and open its plugin files (checked, with
 * their settings, init and fini, in a probe child). Problems are added to d. */
struct generation *
gen_load(const char *path, struct diag *d)
{
    struct generation *g = calloc(1, sizeof(*g));
    if (g == NULL) {
        diag_add(d, path, 0, "out of memory");
        return NULL;
    }
    g->config_fd = -1;
    if (config_text_read_file(path, &g->text, &g->len, d) != 0) {
        gen_free(g);
        return NULL;
    }
    if (config_load(path, g->text, &g->cfg, d) != 0) {
        gen_free(g);
        return NULL;
    }
    int opened = gen_open_plugins(g, d);
    if (probe_run(path, g->text, g->len, g->plugin_fds, g->nplugin_fds, PROBE_TIMEOUT, d) != 0 ||
        opened != 0) {
        gen_free(g);
        return NULL;
    }
    g->nworkers = g->cfg->workers;
    g->failures = calloc((size_t) g->nworkers, sizeof(*g->failures));
    g->respawn_at = calloc((size_t) g->nworkers, sizeof(*g->respawn_at));
    g->config_fd = childargs_memfd(g->text, g->len);
    if (g->failures == NULL || g->respawn_at == NULL || g->config_fd < 0) {
        diag_add(d, path, 0, "cannot prepare the workers: %s", strerror(errno));
        gen_free(g);
        return NULL;
    }
    return g;
}
