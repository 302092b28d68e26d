/*
 * config_table.h - the settings of twice.conf as one table, a row per
 * setting (config_row.h says what a row holds). config_parse.c reads and
 * checks a file by it, config_doc.c writes twice.conf(5)'s lists from it.
 */
#ifndef TWICE_CONFIG_TABLE_H
#define TWICE_CONFIG_TABLE_H

#include "config_row.h"

/* Every setting, in the order files are checked and documented; ends with a
 * row whose name is NULL. A group's members are the rows whose group is its
 * path ("alerts" + "." + "webhook"). */
extern const struct config_row config_rows[];

/* The row of the setting at path ("log.level", "queues.backoff.base"), or NULL. */
const struct config_row *config_row_find(const char *path);
/* The path of a row: "workers", "queues.backoff.base". Written into out. */
const char *config_row_path(const struct config_row *r, char *out, size_t cap);

#endif
