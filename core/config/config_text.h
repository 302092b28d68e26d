/*
 * config_text.h - checking a configuration's text before libconfig reads it
 * (config_text.c; its reader is in config.h for every process). Inside the
 * config layer only.
 */
#ifndef TWICE_CONFIG_TEXT_H
#define TWICE_CONFIG_TEXT_H

#include "config_ctx.h"

/* Check the text of a configuration before libconfig reads it: the sizes of
 * its groups and lists, and its @include files (regular files, no NUL byte,
 * all of them within CONFIG_MAX_BYTES). Returns the number of problems. */
int config_text_check(struct config_ctx *x, const char *text, size_t len);

#endif
