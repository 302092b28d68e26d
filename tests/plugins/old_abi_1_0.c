/*
 * old_abi_1_0.c - fixture: a plugin built against the ABI 1.0 header as it
 * first shipped (abi/plugin-1.0.h): a key template, the 1.0 descriptor (it
 * ends with derive_key), handed over at the end of a mapped page (abi/old_abi.h)
 * so that a host reading a 1.1 field of it crashes. Must load and run jobs.
 * Used by: test_plugins.py.
 */
#include "abi/plugin-1.0.h"

#define OLD_ABI_NAME "old_abi_1_0"
#include "abi/old_abi.h"

static const twice_setting settings[] = {
    {"file", TWICE_SETTING_STRING, 1, NULL, "file the effect lines are appended to"},
    {NULL, TWICE_SETTING_STRING, 0, NULL, NULL}};

/* As the 1.0 header's TWICE_PLUGIN wrote it, but handed out through guarded(). */
static const twice_plugin descriptor = {
    .magic = TWICE_ABI_MAGIC,
    .abi_major = TWICE_ABI_MAJOR,
    .abi_minor = TWICE_ABI_MINOR,
    .size = (uint32_t) sizeof(twice_plugin),
    .name = OLD_ABI_NAME,
    .version = "1.0.0",
    .key_template = "old10:{id}",
    .settings = settings,
    .init = init,
    .handle = handle,
};

TWICE_EXPORT const twice_plugin *twice_plugin_entry(void);

const twice_plugin *
twice_plugin_entry(void)
{
    _Static_assert(TWICE_ABI_MINOR == 0, "abi/plugin-1.0.h");
    return guarded(&descriptor, sizeof(descriptor));
}
