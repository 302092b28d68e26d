/*
 * settings_decl.c - fixture: a good plugin that declares settings (a
 * required string "url", an int "timeout" defaulting to 10, a bool
 * "verbose") for the loader's settings checks.
 * Used by: test-loader.c, test_ctl.py.
 */
#include <twice/plugin.h>

static const twice_setting settings[] = {
    {"url", TWICE_SETTING_STRING, 1, 0, "where to send"},
    {"timeout", TWICE_SETTING_INT, 0, "10", "seconds"},
    {"verbose", TWICE_SETTING_BOOL, 0, 0, "log every job"},
    {0, TWICE_SETTING_STRING, 0, 0, 0},
};

static twice_status
handle(void *state, twice_job *job)
{
    (void) state;
    (void) job;
    return TWICE_DONE;
}

TWICE_PLUGIN(.name = "settings_decl", .version = "1.0.0", .key_template = "s:{id}",
             .settings = settings, .handle = handle)
