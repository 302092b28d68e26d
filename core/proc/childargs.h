/*
 * childargs.h - how the master starts its children (workers and config
 * probes) and how they read what they were given: the exact configuration
 * text the master validated (in a memfd), the plugin files it checked and
 * keeps open for the generation, the shared region, the pipe to report
 * readiness on, their slot and generation. Children are the twiced binary
 * itself, re-executed.
 */
#ifndef TWICE_CHILDARGS_H
#define TWICE_CHILDARGS_H

#include <stddef.h>
#include <sys/types.h>

struct config;

enum childargs_mode { CHILD_WORKER = 1, CHILD_PROBE = 2 };

struct childargs {
    enum childargs_mode mode;
    int config_fd;           /* memfd with the configuration text */
    const char *config_path; /* the file it came from (messages, @include) */
    int shm_fd;              /* -1: none */
    int ctl_fd;              /* write "R" when ready; -1: none */
    int slot;
    int generation;
    pid_t master_pid;
    const char *instance;  /* the master's random id (lease owners) */
    const int *plugin_fds; /* one open file per configured plugin, in order; NULL: none */
    size_t nplugin_fds;
    int check_fd; /* CHILD_PROBE only: the request of a store or SQS check (plugin/probe.h),
                     -1: none; ignored for a worker */
};

#define CHILDARGS_MAX 24

/* An exec command line and the text it points into (owned by it). */
struct childargs_argv {
    char num[8][24];
    char *fds; /* "5,6,7", malloc'd; NULL without plugin files */
    char *argv[CHILDARGS_MAX];
};

/* Fill out->argv (NULL-terminated) for exec. 0, or -1 when out of memory.
 * childargs_argv_free frees it (after the fork). */
int childargs_build(const struct childargs *a, struct childargs_argv *out);
void childargs_argv_free(struct childargs_argv *out);

/* Parse the child's command line (after "--worker" or "--probe"). Strings
 * point into argv; the plugin fds are allocated: childargs_release. */
int childargs_parse(int argc, char **argv, struct childargs *out, char *err, size_t errlen);
void childargs_release(struct childargs *a);

/* Read the snapshot (config_text_read: safe while the other workers of the
 * generation read the same memfd) and parse it. On errors err holds the
 * first problem and whether there were more. */
int childargs_load_config(const struct childargs *a, struct config **out, char *err,
                          size_t errlen);

/* The lease owner of worker pid of generation gen under master instance:
 * "host:pid:gGEN:INSTANCE". The worker uses it in its leases; the master
 * computes it again to end those leases when the worker has gone. */
#define CHILDARGS_OWNER_MAX 160
void childargs_owner(char *out, size_t cap, pid_t pid, int gen, const char *instance);
/* A random instance id (16 hex digits) for a master. */
void childargs_instance(char *out, size_t cap);

/* A memfd holding text (for config_fd), or -1 with errno. */
int childargs_memfd(const char *text, size_t len);

#endif
