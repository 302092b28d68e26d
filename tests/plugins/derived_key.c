/*
 * derived_key.c - fixture: a plugin whose key no template can express, from
 * derive_key(): its setting `prefix` (read in init, so the key proves that
 * init ran with the configured settings), then the body's `email` in lower
 * case. handle() does nothing and succeeds.
 * Used by: test_key_derive.py.
 */
#include <twice/plugin.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct state {
    const twice_api *api;
    char prefix[64];
};

static int
init(const twice_api *api, const twice_settings *settings, void **state)
{
    struct state *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return -1;
    }
    s->api = api;
    snprintf(s->prefix, sizeof(s->prefix), "%s", api->setting(settings, "prefix"));
    *state = s;
    return 0;
}

static void
fini(void *state)
{
    free(state);
}

static int
derive_key(void *state, const twice_job *job, char *buf, size_t cap)
{
    const struct state *s = state;
    const char *email = s->api->field(job, "email", NULL);
    if (email == NULL) {
        s->api->error((twice_job *) job, "no email");
        return -1;
    }
    int n = snprintf(buf, cap, "%s:%s", s->prefix, email);
    for (int i = 0; i < n && (size_t) i < cap; i++) {
        buf[i] = (char) tolower((unsigned char) buf[i]);
    }
    return n < (int) cap ? n : (int) cap;
}

static twice_status
handle(void *state, twice_job *job)
{
    (void) state;
    (void) job;
    return TWICE_DONE;
}

static const twice_setting settings[] = {
    {"prefix", TWICE_SETTING_STRING, 0, "user", "what keys start with"},
    {NULL, TWICE_SETTING_STRING, 0, NULL, NULL},
};

TWICE_PLUGIN(.name = "derived_key", .version = "1.0.0", .settings = settings, .init = init,
             .handle = handle, .fini = fini, .derive_key = derive_key)
