/*
 * setting_blame.c - fixture: init() blames the setting named by its own
 * setting "blame" with api->setting_error() (none when empty), then logs an
 * error line that must not win over it. "limit" and "label" are there to be
 * blamed: written in twice.conf, or left at their declared defaults. A
 * name after '+' is blamed, yet init() succeeds. Before any of that, init()
 * writes the setting "stdout" (when not empty) to its standard output, as a
 * plugin's banner or debug printf would, and calls exit() with "exit" when
 * it is not 0, as a library that gives up on the whole process would.
 * Used by: test_plugins.py (where the host reports a bad setting), test_reload_load.py (a
 * reload refused by a plugin's init).
 */
#include <stdio.h>
#include <stdlib.h>
#include <twice/plugin.h>

static const twice_setting settings[] = {
    {"blame", TWICE_SETTING_STRING, 0, "", "the setting init() blames; empty: none"},
    {"limit", TWICE_SETTING_INT, 0, "10", "a number to blame"},
    {"label", TWICE_SETTING_STRING, 0, "x", "a text to blame"},
    {"stdout", TWICE_SETTING_STRING, 0, "", "a line init() writes to standard output"},
    {"exit", TWICE_SETTING_INT, 0, "0", "init() calls exit() with it when not 0"},
    {0, TWICE_SETTING_STRING, 0, 0, 0},
};

static int
init(const twice_api *api, const twice_settings *s, void **state)
{
    const char *blame = api->setting(s, "blame");
    const char *out = api->setting(s, "stdout");
    *state = 0;
    if (out != 0 && out[0] != '\0') {
        printf("%s\n", out);
        fflush(stdout);
    }
    int code = atoi(api->setting(s, "exit"));
    if (code != 0) {
        exit(code);
    }
    if (blame == 0 || blame[0] == '\0') {
        return 0;
    }
    if (blame[0] == '+') { /* blamed, and init() goes on all the same */
        api->setting_error(s, blame + 1, "blamed, yet init went on");
        return 0;
    }
    api->setting_error(s, blame, "blamed by the fixture (limit %s)", api->setting(s, "limit"));
    api->log(0, TWICE_LOG_ERROR, "a later log line");
    return -1;
}

static twice_status
handle(void *state, twice_job *job)
{
    (void) state;
    (void) job;
    return TWICE_DONE;
}

TWICE_PLUGIN(.name = "setting_blame", .version = "1.0.0", .key_template = "b:{id}",
             .settings = settings, .init = init, .handle = handle)
