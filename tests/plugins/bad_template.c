/*
 * bad_template.c - fixture: a key template that does not compile (the
 * field is never closed). Must be refused with the template's column.
 * Used by: test-loader.c, test_basic.py.
 */
#include <twice/plugin.h>

static twice_status
handle(void *state, twice_job *job)
{
    (void) state;
    (void) job;
    return TWICE_DONE;
}

TWICE_PLUGIN(.name = "bad_template", .version = "1.0.0", .key_template = "bad:{id",
             .handle = handle)
