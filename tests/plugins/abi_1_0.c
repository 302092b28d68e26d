/*
 * abi_1_0.c - fixture: a plugin as the ABI 1.0 header built it. Its
 * descriptor ends with derive_key (the 1.0 layout, descriptor_1_0.h), so a host
 * of a later minor must load it without reading the fields it lacks.
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

static const struct twice_plugin_1_0 descriptor = {
    .magic = TWICE_ABI_MAGIC,
    .abi_major = 1,
    .abi_minor = 0,
    .size = sizeof(struct twice_plugin_1_0),
    .name = "abi_1_0",
    .version = "1.0.0",
    .key_template = "old:{id}",
    .handle = handle,
};

TWICE_EXPORT const twice_plugin *twice_plugin_entry(void);

const twice_plugin *
twice_plugin_entry(void)
{
    return (const twice_plugin *) (const void *) &descriptor;
}
