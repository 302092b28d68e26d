/*
 * entry_is_data.c - fixture: exports the descriptor itself under the entry
 * point's name instead of a function returning it. Calling it would jump
 * into data; it must be refused as not a function.
 * Used by: test-loader.c.
 */
#include <twice/plugin.h>

static twice_status
handle(void *state, twice_job *job)
{
    (void) state;
    (void) job;
    return TWICE_DONE;
}

TWICE_EXPORT const twice_plugin twice_plugin_entry;

const twice_plugin twice_plugin_entry = {
    .magic = TWICE_ABI_MAGIC,
    .abi_major = TWICE_ABI_MAJOR,
    .abi_minor = TWICE_ABI_MINOR,
    .size = sizeof(twice_plugin),
    .name = "entry_is_data",
    .key_template = "data:{id}",
    .handle = handle,
};
