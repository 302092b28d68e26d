/*
 * abort_on_load.c - fixture: a plugin whose constructor aborts while it is
 * being loaded (dlopen runs constructors before any check), for the tests
 * that a plugin check survives it. Not loadable by anything.
 * Used by: test_ctl.py.
 */
#include <stdlib.h>
#include <twice/plugin.h>

__attribute__((constructor)) static void
explode(void)
{
    abort();
}

static twice_status
handle(void *state, twice_job *job)
{
    (void) state;
    (void) job;
    return TWICE_DONE;
}

TWICE_PLUGIN(.name = "abort_on_load", .version = "1", .key_template = "a:{id}", .handle = handle)
