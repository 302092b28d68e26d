/*
 * small_struct.c - fixture: a descriptor that claims ABI 1.0 but is only
 * 24 bytes long. The object really is that small: whatever a loader read
 * past the declared size would not be the descriptor.
 * Used by: test-loader.c.
 */
#include <twice/plugin.h>

static const struct {
    uint32_t magic;
    uint16_t abi_major;
    uint16_t abi_minor;
    uint32_t size;
    uint32_t flags;
    const char *name;
} descriptor = {TWICE_ABI_MAGIC, TWICE_ABI_MAJOR, TWICE_ABI_MINOR, sizeof(descriptor), 0,
                "small_struct"};

TWICE_EXPORT const twice_plugin *twice_plugin_entry(void);

const twice_plugin *
twice_plugin_entry(void)
{
    return (const twice_plugin *) (const void *) &descriptor;
}
