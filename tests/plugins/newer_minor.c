/*
 * newer_minor.c - fixture: built for a newer minor of this major, whose
 * appended fields the host does not know. Must be refused naming both
 * versions. The descriptor is one pointer longer, as a newer minor's is.
 * Used by: test-loader.c, test_plugins.py.
 */
#include <twice/plugin.h>

static twice_status
handle(void *state, twice_job *job)
{
    (void) state;
    (void) job;
    return TWICE_DONE;
}

static const struct {
    twice_plugin base;
    void *appended; /* a field of the newer minor */
} descriptor = {
    .base =
        {
            .magic = TWICE_ABI_MAGIC,
            .abi_major = TWICE_ABI_MAJOR,
            .abi_minor = TWICE_ABI_MINOR + 1,
            .size = sizeof(twice_plugin) + sizeof(void *),
            .name = "newer_minor",
            .key_template = "newer:{id}",
            .handle = handle,
        },
    .appended = 0,
};

TWICE_EXPORT const twice_plugin *twice_plugin_entry(void);

const twice_plugin *
twice_plugin_entry(void)
{
    return &descriptor.base;
}
