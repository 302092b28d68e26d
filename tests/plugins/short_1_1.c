/*
 * short_1_1.c - fixture: claims ABI 1.1 but its descriptor has only the
 * 1.0 fields (a plugin that bumped the version by hand). Must be refused
 * for its size: the 1.1 fields the host would read are not there.
 * Used by: test-loader.c.
 */
#include "descriptor_1_0.h"

static twice_status
handle(void *state, twice_job *job)
{
    (void) state;
    (void) job;
    return TWICE_DONE;
}

/* Only the 1.0 fields, in an object of exactly that size. */
static const struct twice_plugin_1_0 descriptor = {
    .magic = TWICE_ABI_MAGIC,
    .abi_major = 1,
    .abi_minor = 1,
    .size = sizeof(struct twice_plugin_1_0),
    .name = "short_1_1",
    .version = "1.0.0",
    .key_template = "short:{id}",
    .handle = handle,
};

TWICE_EXPORT const twice_plugin *twice_plugin_entry(void);

const twice_plugin *
twice_plugin_entry(void)
{
    return (const twice_plugin *) (const void *) &descriptor;
}
