/*
 * descriptor_1_0.h - struct twice_plugin as of ABI 1.0 (every field up to
 * derive_key), for fixtures that must be exactly that size: a plugin built
 * with the 1.0 header, and one that claims 1.1 with only these fields.
 * Used by: abi_1_0.c, short_1_1.c (fixtures of test-loader.c).
 */
#ifndef TWICE_FIXTURE_DESCRIPTOR_1_0_H
#define TWICE_FIXTURE_DESCRIPTOR_1_0_H

#include <twice/plugin.h>

#include <stddef.h>

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

#endif
