/*
 * config_parse.h - reading a parsed libconfig tree by the settings table
 * (config_parse.c): a group's members, the defaults, and freeing what the
 * rows hold. Inside the config layer only.
 */
#ifndef TWICE_CONFIG_PARSE_H
#define TWICE_CONFIG_PARSE_H

#include "config_ctx.h"

/* Read the members of group at->s (at->row unused) by the rows of group
 * `path`: the naming row first, then unknown members, then each row. */
void config_parse_members(struct config_at *at, const char *path);
/* Set the defaults of group path's rows (and its groups') in base.
 * 0, or -1 when out of memory. */
int config_defaults(const char *path, void *base);
/* Free what group path's rows hold in base (lists and groups included). */
void config_free_fields(const char *path, void *base);

#endif
