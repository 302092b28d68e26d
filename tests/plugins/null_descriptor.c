/*
 * null_descriptor.c - fixture: the entry point exists but returns NULL.
 * Must be refused, not dereferenced.
 */
#include <twice/plugin.h>

TWICE_EXPORT const twice_plugin *twice_plugin_entry(void);

const twice_plugin *
twice_plugin_entry(void)
{
    return 0;
}
