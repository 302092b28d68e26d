/*
 * abi_1_0.c - fixture: a plugin as the ABI 1.0 header built it. Its
 * descriptor ends with derive_key (the 1.0 layout, copied here), so a host
 * of a later minor must load it without reading the fields it lacks.
 * Used by: test-loader.c.
 */
#include <twice/plugin.h>

#include <stddef.h>

/* struct twice_plugin as of ABI 1.0: every field up to derive_key. */
struct twice_plugin_1_0 {
    uint32_t magic;
    uint16_t abi_major;
    uint16_t abi_minor;
    uint32_t size;
    uint32_t flags;
    const char *name;
    const char *version;
    const char *key_template;
    const twice_setting *settings;
    int (*init)(const twice_api *api, const twice_settings *settings, void **state);
    twice_status (*handle)(void *state, twice_job *job);
    void (*fini)(void *state);
    int (*derive_key)(void *state, const twice_job *job, char *buf, size_t cap);
};

_Static_assert(sizeof(struct twice_plugin_1_0) == offsetof(twice_plugin, key_setting),
               "the 1.0 descriptor is a prefix of the current one");

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
