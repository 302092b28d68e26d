/*
 * short_1_1.c - fixture: claims ABI 1.1 but its descriptor has only the
 * 1.0 fields (a plugin that bumped the version by hand). Must be refused
 * for its size: the 1.1 fields the host would read are not there.
 * Used by: test-loader.c.
 */
#include <twice/plugin.h>

#include <stddef.h>

static twice_status
handle(void *state, twice_job *job)
{
    (void) state;
    (void) job;
    return TWICE_DONE;
}

/* The first fields of struct twice_plugin, up to derive_key, in an object
 * of exactly that size. */
static const struct {
    uint32_t magic;
    uint16_t abi_major;
    uint16_t abi_minor;
    uint32_t size;
    uint32_t flags;
    const char *name;
    const char *version;
    const char *key_template;
    const twice_setting *settings;
    void *init;
    twice_status (*handle)(void *state, twice_job *job);
    void *fini;
    void *derive_key;
} descriptor = {TWICE_ABI_MAGIC,
                1,
                1,
                offsetof(twice_plugin, key_setting),
                0,
                "short_1_1",
                "1.0.0",
                "short:{id}",
                NULL,
                NULL,
                handle,
                NULL,
                NULL};

TWICE_EXPORT const twice_plugin *twice_plugin_entry(void);

const twice_plugin *
twice_plugin_entry(void)
{
    return (const twice_plugin *) (const void *) &descriptor;
}
