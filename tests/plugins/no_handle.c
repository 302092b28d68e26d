/*
 * no_handle.c - fixture: a well-versioned descriptor without the one
 * required function, handle. Must be refused.
 * Used by: test-loader.c.
 */
#include <twice/plugin.h>

TWICE_PLUGIN(.name = "no_handle", .version = "1.0.0", .key_template = "nohandle:{id}")
