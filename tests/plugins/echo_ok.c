/*
 * echo_ok.c - the good fixture plugin: key "echo:{id}", logs one line per
 * job and returns DONE. Not an example of a useful handler.
 * Used by: test-loader.c, test_basic.py, test_config.py, test_ctl.py, test_plugin_perms.py,
 *          test_reload.py.
 */
#include <twice/plugin.h>

static const twice_api *host;

static int
init(const twice_api *api, const twice_settings *settings, void **state)
{
    (void) settings;
    host = api;
    *state = NULL;
    return 0;
}

static twice_status
handle(void *state, twice_job *job)
{
    (void) state;
    host->log(job, TWICE_LOG_INFO, "echo_ok handled %s", host->key(job));
    return TWICE_DONE;
}

TWICE_PLUGIN(.name = "echo_ok", .version = "1.0.0", .key_template = "echo:{id}", .init = init,
             .handle = handle)
