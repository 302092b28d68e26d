/*
 * newer_major.c - fixture: built for the next ABI major, which this host
 * cannot read. Must be refused naming both versions.
 * Used by: test-loader.c, test_basic.py, test_config.py, test_ctl.py, test_plugins.py,
 * test_reload.py.
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
    .magic = TWICE_ABI_MAGIC,
    .abi_major = TWICE_ABI_MAJOR + 1,
    .abi_minor = 0,
    .size = sizeof(twice_plugin),
    .name = "newer_major",
    .key_template = "newer:{id}",
    .handle = handle,
};

TWICE_EXPORT const twice_plugin *twice_plugin_entry(void);

const twice_plugin *
twice_plugin_entry(void)
{
    return &descriptor;
}
