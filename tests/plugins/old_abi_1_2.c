/*
 * old_abi_1_2.c - fixture: a plugin built against the ABI 1.2 header as it
 * first shipped (abi/plugin-1.2.h): its key from derive_key ("old12:" and
 * the body's id), the descriptor handed over at the end of a mapped page
 * (abi/old_abi.h). Must load and run jobs.
 * Used by: test_plugins.py.
 */
#include "abi/plugin-1.2.h"

#define OLD_ABI_NAME "old_abi_1_2"
#include "abi/old_abi.h"

static const twice_setting settings[] = {
    {"file", TWICE_SETTING_STRING, 1, NULL, "file the effect lines are appended to"},
    {NULL, TWICE_SETTING_STRING, 0, NULL, NULL}};

static int
derive_key(void *state, const twice_job *job, char *buf, size_t cap)
{
    const char *id = api->field(job, "id", NULL);
    (void) state;
    if (id == NULL) {
        api->error((twice_job *) job, "no id in the body");
        return -1;
    }
    int n = snprintf(buf, cap, "old12:%s", id);
    return n < 0 || (size_t) n >= cap ? -1 : n;
}

static const twice_plugin descriptor = {
    .magic = TWICE_ABI_MAGIC,
    .abi_major = TWICE_ABI_MAJOR,
    .abi_minor = TWICE_ABI_MINOR,
    .size = (uint32_t) sizeof(twice_plugin),
    .name = OLD_ABI_NAME,
    .version = "1.2.0",
    .settings = settings,
    .init = init,
    .handle = handle,
    .derive_key = derive_key,
};

TWICE_EXPORT const twice_plugin *twice_plugin_entry(void);

const twice_plugin *
twice_plugin_entry(void)
{
    _Static_assert(TWICE_ABI_MINOR == 2, "abi/plugin-1.2.h");
    return guarded(&descriptor, sizeof(descriptor));
}
