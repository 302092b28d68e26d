/*
 * tiny_plugin.c - a plugin for the mock host's own test, loaded with
 * dlopen: a transactional one whose key comes from derive_key() (the
 * Tenant attribute), and whose handle() reports what api->db() gave it.
 * Not an example of a useful handler.
 * Used by: test-mock.c (ctest unit/sdk-mock), unit/exports-mock_tiny_plugin.
 */
#include <stdio.h>
#include <string.h>
#include <twice/plugin.h>

static const twice_api *api;

static int
init(const twice_api *a, const twice_settings *settings, void **state)
{
    (void) settings;
    api = a;
    *state = NULL;
    api->log(NULL, TWICE_LOG_DEBUG, "tiny up");
    return 0;
}

static int
derive_key(void *state, const twice_job *job, char *buf, size_t cap)
{
    (void) state;
    const char *tenant = api->attr(job, "Tenant", NULL);
    if (tenant == NULL) {
        api->error((twice_job *) job, "no Tenant attribute");
        return -1;
    }
    int n = snprintf(buf, cap, "tiny:%s", tenant);
    return n < 0 || (size_t) n >= cap ? -1 : n;
}

static twice_status
handle(void *state, twice_job *job)
{
    (void) state;
    api->log(job, TWICE_LOG_WARN, "db=%s", api->db(job) != NULL ? "yes" : "no");
    return TWICE_DONE;
}

TWICE_PLUGIN(.flags = TWICE_FLAG_TRANSACTIONAL, .name = "tiny", .version = "0.1",
             .derive_key = derive_key, .init = init, .handle = handle)
