/*
 * hostile_echo.c - fixture: a plugin that repeats untrusted content, for
 * test_hostile.py. Its key comes from the attribute Tenant; handle() logs
 * the body and the attribute Note as they are, and rejects with the Note
 * in its error when the attribute Action is "reject". The host must keep
 * every log line and DLQ attribute intact whatever they hold. Not a model
 * plugin: real ones should not log whole bodies.
 * Used by: test_hostile.py.
 */
#include <string.h>
#include <twice/plugin.h>

static const twice_api *api;

static int
init(const twice_api *a, const twice_settings *s, void **state)
{
    (void) s;
    api = a;
    *state = NULL;
    return 0;
}

static twice_status
handle(void *state, twice_job *job)
{
    (void) state;
    const char *note = api->attr(job, "Note", NULL);
    const char *action = api->attr(job, "Action", NULL);
    api->log(job, TWICE_LOG_INFO, "body [%s] note [%s]", api->body(job, NULL),
             note != NULL ? note : "(none)");
    if (action != NULL && strcmp(action, "reject") == 0) {
        api->error(job, "rejected: note [%s]", note != NULL ? note : "(none)");
        return TWICE_REJECT;
    }
    return TWICE_DONE;
}

TWICE_PLUGIN(.name = "hostile-echo", .version = "1", .key_template = "hostile:{attr:Tenant}",
             .init = init, .handle = handle)
