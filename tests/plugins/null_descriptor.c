/*
 * null_descriptor.c - fixture: the entry point exists but returns NULL.
 * Must be refused, not dereferenced.
 * Used by: test-loader.c.
 */
#include <twice/plugin.h>

TWICE_EXPORT const twice_plugin *twice_plugin_entry(void);

const twice_plugin *
twice_plugin_entry(void)
{
    return 0;
}
