/*
 * generation.h - one generation of workers as the master keeps it: the
 * configuration it was made from (text and parsed), the plugin files it
 * checked and keeps open, and per worker index the respawn state. Made by
 * gen_read and gen_probe (which check everything first), freed by
 * gen_free. Only the master uses it.
 */
#ifndef TWICE_GENERATION_H
#define TWICE_GENERATION_H

#include <signal.h>
#include <stddef.h>
#include <time.h>

struct config;
struct diag;
struct jobnames;
struct probe_check;

/* A plugin file as the generation checked it. */
struct gen_stamp {
    long long size;
    long long mtime_ns;
    int written; /* found written in place since (and said so) */
};

struct generation {
    int id;
    struct config *cfg;
    char *text;
    size_t len;
    int config_fd;
    int *plugin_fds; /* the plugin files as checked, one per plugin: every worker of the
                        generation loads these, however often it is respawned */
    size_t nplugin_fds;
    struct gen_stamp *stamps; /* per plugin file: its size and mtime when checked */
    int nworkers;
    int *failures;          /* per index: consecutive early deaths */
    long long *respawn_at;  /* per index: monotonic ms to start one, 0: none due */
    time_t deadline;        /* a starting generation must be ready by then */
    struct jobnames *names; /* its queue and plugin names (held by each worker too), or NULL */
    int unopened;           /* a plugin file could not be opened (gen_read said why) */
};

/*
 * Read and validate the configuration at path and check and open its plugin
 * files: the first half of making a generation, so that the caller can
 * check the configuration against others (a reload's) before gen_probe.
 * Every problem is added to d; NULL when the configuration has one (a
 * plugin file that cannot be opened is said, and gen_probe fails).
 */
struct generation *gen_read(const char *path, struct diag *d);

/*
 * The second half: check g's plugins (settings, init and fini) in a probe
 * child that loads them from g's files, then (check, NULL: none) the store
 * or SQS check the caller asks for, and prepare g's workers. 0 when that
 * went well, and the check's outcome is check->result (its problems in
 * check->d, for the caller to judge: probe_run); -1 when the plugins, their
 * files or the preparation had a problem (added to d); 1 when a signal of
 * stop_on (NULL: none) came and cut the probe short, maybe without a
 * problem. The caller frees g either way. The id and deadline are set when
 * g starts.
 */
int gen_probe(struct generation *g, const char *path, struct probe_check *check,
              const sigset_t *stop_on, struct diag *d);

/*
 * The next plugin file of g written in place since g checked it (a `cp`
 * over a loaded .so: its workers run changed code under them, and a
 * respawned one loads code no check saw) that was not reported yet: its
 * index, marked reported, or -1 when there is none.
 */
int gen_next_written(struct generation *g);

/* Whether any plugin file of g was found written in place. */
int gen_any_written(const struct generation *g);

/* Free g and close its files (NULL: nothing). The configuration text is
 * wiped: it holds the DSN and passwords. */
void gen_free(struct generation *g);

#endif
