/*
 * old_abi_1_1.c - fixture: a plugin built against the ABI 1.1 header as it
 * first shipped (abi/plugin-1.1.h): its key from a key setting (a 1.1
 * field) whose default is "old11:{id}", describe(), and api->queue(); the
 * 1.1 descriptor handed over at the end of a mapped page (abi/old_abi.h).
 * Must load and run jobs.
 * Used by: test_plugins.py.
 */
#include "abi/plugin-1.1.h"

#define OLD_ABI_NAME "old_abi_1_1"
#include "abi/old_abi.h"

static const twice_setting settings[] = {
    {"file", TWICE_SETTING_STRING, 1, NULL, "file the effect lines are appended to"},
    {"key", TWICE_SETTING_STRING, 0, "old11:{id}", "the job's key template"},
    {NULL, TWICE_SETTING_STRING, 0, NULL, NULL}};

static int
describe(const twice_api *a, const twice_settings *s, char *buf, size_t cap)
{
    (void) a;
    (void) s;
    snprintf(buf, cap, "appends a line per job");
    return 0;
}

static const twice_plugin descriptor = {
    .magic = TWICE_ABI_MAGIC,
    .abi_major = TWICE_ABI_MAJOR,
    .abi_minor = TWICE_ABI_MINOR,
    .size = (uint32_t) sizeof(twice_plugin),
    .name = OLD_ABI_NAME,
    .version = "1.1.0",
    .settings = settings,
    .init = init,
    .handle = handle,
    .key_setting = "key",
    .describe = describe,
};

TWICE_EXPORT const twice_plugin *twice_plugin_entry(void);

const twice_plugin *
twice_plugin_entry(void)
{
    _Static_assert(TWICE_ABI_MINOR == 1, "abi/plugin-1.1.h");
    return guarded(&descriptor, sizeof(descriptor));
}
