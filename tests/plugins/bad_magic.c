/*
 * bad_magic.c - fixture: a descriptor whose magic cookie is wrong, as from
 * a library that is not a twice plugin. Must be refused before any other
 * field is read.
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

static const twice_plugin descriptor = {
    .magic = 0xdeadbeefu,
    .abi_major = TWICE_ABI_MAJOR,
    .abi_minor = TWICE_ABI_MINOR,
    .size = sizeof(twice_plugin),
    .name = "bad_magic",
    .key_template = "bad:{id}",
    .handle = handle,
};

TWICE_EXPORT const twice_plugin *twice_plugin_entry(void);

const twice_plugin *
twice_plugin_entry(void)
{
    return &descriptor;
}
