/*
 * config_dupname.h - which setting libconfig's "duplicate setting name"
 * means, read from the line it names (libconfig does not say). Inside the
 * config layer only.
 */
#ifndef TWICE_CONFIG_DUPNAME_H
#define TWICE_CONFIG_DUPNAME_H

#include <stddef.h>

/*
 * The setting written twice that line (1-based) of text shows: of the names
 * the line sets ("name =" or "name:", outside strings and comments), the one
 * written twice on it (`workers = 2; workers = 3;`), else the only one.
 * Copies it to name (size bytes) and returns 1; 0 when the line does not tell
 * (no such line, no name, several different ones, or too long).
 */
int config_dupname_at(const char *text, int line, char *name, size_t size);

#endif
