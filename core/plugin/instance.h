/*
 * instance.h - a configured plugin as a worker or a probe runs it: its
 * entry in twice.conf, the loaded file, and what the host derives from
 * both. Loading is loader.c's; calling into it is hostapi.c's.
 */
#ifndef TWICE_INSTANCE_H
#define TWICE_INSTANCE_H

#include <stddef.h>

#include "loader.h"

struct config_plugin;

struct plugin_instance {
    const struct config_plugin *cfg;
    struct loaded_plugin lp;
    const char *name; /* the configured name (logs, metrics, routes) */
    size_t index;     /* in the process's plugin array */
    int transactional;
};

#endif
